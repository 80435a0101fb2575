#!/usr/bin/env python3
"""scripts/webp_vp8l_differential.py — random and damaged lossless WebP, our VP8L decoder against Pillow 13.

Design: a seeded generator writes N cases, each a random image (1..300 a side; noise, gradients, palettes of
2..256 colours, random walks, flat, blocks, smooth waves; with and without alpha) encoded either losslessly
(cwebp -lossless with random -z, or -q / -m, -exact, -near_lossless; or Pillow's writer with random quality,
method, exact) or, one case in four, lossy with a lossless ALPH chunk (cwebp -alpha_method 1 -alpha_filter
none, random -alpha_q); or, with --streams, a random VP8L stream written bit by bit (random_stream: any
subset and order of the four transforms with random data, so also a predictor on colour-indexed pixels, a
colour cache of 1..11 bits in the image and its sub-images, an entropy image with several groups, random
complete codes over random symbol sets with length and cache symbols, LZ77 copies with every distance form),
as a VP8L chunk or, half the time, as the ALPH stream of a cwebp carrier (then often in the form libwebp's
8-bit alpha path takes); then three damaged copies whose VP8L or ALPH payload is cut, has bits flipped or bytes
replaced (the RIFF sizes rewritten, so only the codec decides). DUMP (tests/fuzz/webp_vp8l_dump.c, built as its
top comment says) prints our verdict, the RGBA and RGB hashes, or the alpha plane's hash; Pillow
(Image.open(f).load(), run in --python) prints its verdict, mode and the hash of tobytes() and of the alpha
channel. With --libwebp SO (Pillow's bundled libwebp, pillow.libs/libwebp-*.so) the RGBA that
WebPDecodeRGBA gives is compared as well, alpha included where Pillow's mode is RGB. Prints every case that
differs and a count. Usage: webp_vp8l_differential.py DUMP OUTDIR [N] [SEED] [--python PY] [--libwebp SO]
[--streams]
"""
import heapq
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

from make_webp_vp8l_fixtures import VP8LWriter, alpha_image, canonical_codes, replace_chunk, riff
from pillow_oracle import fnv1a64, verdicts

ORACLE = r"""
import sys, warnings
from PIL import Image
warnings.simplefilter("ignore")
def fnv(b):
    h = 0xCBF29CE484222325
    for x in b:
        h = ((h ^ x) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h
for p in sys.stdin.read().split():
    try:
        im = Image.open(p)
        im.load()
        a = fnv(im.getchannel("A").tobytes()) if im.mode == "RGBA" else "-"
        print(p, "OK", im.size[0], im.size[1], im.mode, fnv(im.tobytes()), a)
    except Exception as e:
        print(p, "ERR", type(e).__name__)
"""


def content(r, w, h):
    k = r.integers(0, 8)
    y, x = np.mgrid[0:h, 0:w]
    if k == 0:
        a = r.integers(0, 256, (h, w, 4))
    elif k == 1:
        a = np.stack([x * r.integers(1, 9), y * r.integers(1, 9), (x + y) * r.integers(0, 5), 255 - x], -1)
    elif k == 2:
        n = int(r.choice([2, 3, 4, 5, 11, 16, 17, 100, 256]))
        a = r.integers(0, 256, (n, 4))[r.integers(0, n, (h, w))]
    elif k == 3:
        a = np.cumsum(r.integers(-3, 4, (h, w, 4)), 1) + np.cumsum(r.integers(-3, 4, (h, 1, 4)), 0) + 128
    elif k == 4:
        a = np.zeros((h, w, 4)) + r.integers(0, 256, 4)
    elif k == 5:
        a = np.stack([((x // 4 + y // 4) % 2) * 255] * 3 + [np.full((h, w), 255)], -1)
    elif k == 6:
        base = r.integers(0, 256, (h // 8 + 1, w // 8 + 1, 4))
        a = np.kron(base, np.ones((8, 8, 1)))[:h, :w] + r.integers(-2, 3, (h, w, 4))
    else:
        a = np.stack([np.sin(x / 7.0) * 100 + 128, np.cos(y / 5.0) * 100 + 128, (x * y) % 256,
                      np.full((h, w), 255)], -1) + r.integers(0, 6, (h, w, 4))
    a = np.clip(a, 0, 255).astype(np.uint8)
    if r.random() < 0.5:
        a[..., 3] = 255
    return a


def chunk(d, tag):
    off = 12
    while off + 8 <= len(d):
        sz = struct.unpack("<I", d[off + 4:off + 8])[0]
        if d[off:off + 4] == tag:
            return off, sz
        off += 8 + sz + (sz & 1)
    return None


def damage(r, d, tag):
    off, sz = chunk(d, tag)
    p = bytearray(d[off + 8:off + 8 + sz])
    k = r.integers(0, 3)
    lo = 5 if tag == b"VP8L" else 1
    if k == 0 and len(p) > lo + 1:
        p = p[:int(r.integers(lo, len(p)))]
    elif k == 1:
        for _ in range(int(r.integers(1, 4))):
            i = int(r.integers(min(lo, len(p) - 1), len(p)))
            p[i] ^= 1 << int(r.integers(0, 8))
    else:
        i = int(r.integers(min(lo, len(p) - 1), len(p)))
        p[i] = int(r.integers(0, 256))
        if r.random() < 0.5:
            p = p[:int(r.integers(min(lo + 1, len(p)), len(p) + 1))]
    body = tag + struct.pack("<I", len(p)) + bytes(p) + (b"\0" if len(p) & 1 else b"")
    nd = bytearray(d[:off] + body + d[off + 8 + sz + (sz & 1):])
    nd[4:8] = struct.pack("<I", len(nd) - 8)
    return bytes(nd)


def make_case(r, tmp):
    w = int(r.choice([1, 2, 3, int(r.integers(1, 301))]))
    h = int(r.choice([1, 2, int(r.integers(1, 301))]))
    a = content(r, w, h)
    png, out = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.webp")
    if r.random() < 0.25:  # lossy with lossless alpha
        a[..., 3] = np.minimum(a[..., 3], 254) if r.random() < 0.5 else np.where(r.random((h, w)) < 0.5, 0, 255)
        Image.fromarray(a, "RGBA").save(png)
        args = ["cwebp", "-quiet", "-q", str(r.integers(0, 101)), "-alpha_method", "1", "-alpha_filter", "none",
                "-alpha_q", str(int(r.choice([100, int(r.integers(0, 101))]))), "-m", str(r.integers(0, 7))]
        subprocess.run(args + [png, "-o", out], check=True)
        d = open(out, "rb").read()
        a_off = chunk(d, b"ALPH")
        if not a_off or d[a_off[0] + 8] & 3 != 1:  # stored raw: nothing for the codec
            return None, None
        return d, b"ALPH"
    im = Image.fromarray(a, "RGBA") if a[..., 3].min() < 255 or r.random() < 0.3 else Image.fromarray(a[..., :3])
    if r.random() < 0.6:
        im.save(png)
        if r.random() < 0.5:
            args = ["cwebp", "-quiet", "-lossless", "-z", str(r.integers(0, 10))]
        else:
            args = ["cwebp", "-quiet", "-lossless", "-q", str(r.integers(0, 101)), "-m", str(r.integers(0, 7))]
        if r.random() < 0.3:
            args.append("-exact")
        if r.random() < 0.2:
            args += ["-near_lossless", str(r.integers(0, 100))]
        subprocess.run(args + [png, "-o", out], check=True)
    else:
        im.save(out, "WEBP", lossless=True, quality=int(r.integers(0, 101)), method=int(r.integers(0, 7)),
                exact=bool(r.random() < 0.3))
    return open(out, "rb").read(), b"VP8L"


# --- random VP8L streams --------------------------------------------------------------------------------------

PLANE = [0x18, 0x07, 0x17, 0x19, 0x28, 0x06, 0x27, 0x29, 0x16, 0x1a, 0x26, 0x2a, 0x38, 0x05, 0x37, 0x39, 0x15, 0x1b,
         0x36, 0x3a, 0x25, 0x2b, 0x48, 0x04, 0x47, 0x49, 0x14, 0x1c, 0x35, 0x3b, 0x46, 0x4a, 0x24, 0x2c, 0x58, 0x45,
         0x4b, 0x34, 0x3c, 0x03, 0x57, 0x59, 0x13, 0x1d, 0x56, 0x5a, 0x23, 0x2d, 0x44, 0x4c, 0x55, 0x5b, 0x33, 0x3d,
         0x68, 0x02, 0x67, 0x69, 0x12, 0x1e, 0x66, 0x6a, 0x22, 0x2e, 0x54, 0x5c, 0x43, 0x4d, 0x65, 0x6b, 0x32, 0x3e,
         0x78, 0x01, 0x77, 0x79, 0x53, 0x5d, 0x11, 0x1f, 0x64, 0x6c, 0x42, 0x4e, 0x76, 0x7a, 0x21, 0x2f, 0x75, 0x7b,
         0x31, 0x3f, 0x63, 0x6d, 0x52, 0x5e, 0x00, 0x74, 0x7c, 0x41, 0x4f, 0x10, 0x20, 0x62, 0x6e, 0x30, 0x73, 0x7d,
         0x51, 0x5f, 0x40, 0x72, 0x7e, 0x61, 0x6f, 0x50, 0x71, 0x7f, 0x60, 0x70]  # RFC 9649 distance map


def huffman_lengths(r, syms, n):
    """Lengths (<= 15) of a Huffman code for random weights over syms; one symbol gets a random length."""
    lengths = [0] * n
    if len(syms) == 1:
        lengths[syms[0]] = int(r.integers(1, 16))
        return lengths
    while True:
        heap = [(int(f), i, [s]) for i, (f, s) in enumerate(zip(r.integers(1, 200, len(syms)), syms))]
        heapq.heapify(heap)
        depth, k = {s: 0 for s in syms}, len(heap)
        while len(heap) > 1:
            f1, _, a = heapq.heappop(heap)
            f2, _, b = heapq.heappop(heap)
            for s in a + b:
                depth[s] += 1
            k += 1
            heapq.heappush(heap, (f1 + f2, k, a + b))
        if max(depth.values()) <= 15:
            break
    for s in syms:
        lengths[s] = depth[s]
    return lengths


class RandomCode:
    """A prefix code over syms (alphabet n), written as a simple code when it can be, else through lengths."""

    def __init__(self, w, r, n, syms):
        self.syms = sorted(set(syms))
        if len(self.syms) <= 2 and max(self.syms) < 256 and r.random() < 0.5:
            if len(self.syms) == 1 and r.random() < 0.5:
                w.simple_code([self.syms[0], self.syms[0]])  # a repeated symbol is one symbol
            else:
                w.simple_code(self.syms)
            self.codes = canonical_codes([1 if s in self.syms else 0 for s in range(256)])
        else:
            self.codes = w.normal_code(huffman_lengths(r, self.syms, n))
        if len(self.syms) == 1:
            self.codes = {self.syms[0]: (0, 0)}

    def put(self, w, s):
        code, n = self.codes[s]
        if n:
            w.put_code(code, n)


def prefix_value(sym, extra):
    if sym < 4:
        return sym + 1
    return ((2 + (sym & 1)) << ((sym - 2) >> 1)) + extra + 1


def literal_subimage(w, pixels):
    w.put(0, 1)  # no colour cache
    g = w.normal_code([8] * 256 + [0] * 24)
    red, blue, alpha = (w.normal_code([8] * 256) for _ in range(3))
    w.simple_code([0])
    for p in pixels:
        w.put_code(*g[(p >> 8) & 255])
        w.put_code(*red[(p >> 16) & 255])
        w.put_code(*blue[p & 255])
        w.put_code(*alpha[p >> 24])


def coded_pixels(w, r, xs, ys, allow_meta, simple_rba):
    """Colour cache, entropy image (allow_meta), random groups of codes, then symbols for xs * ys pixels (LZ77
    copies nearly always inside the image). simple_rba: no cache and one-symbol red, blue, alpha codes."""
    cache_bits = int(r.integers(1, 12)) if r.random() < 0.3 and not simple_rba else 0
    w.put(1 if cache_bits else 0, 1)
    if cache_bits:
        w.put(cache_bits, 4)
    meta, ngroups = None, 1
    if allow_meta:
        w.put(1 if r.random() < 0.4 else 0, 1)
        if w.bits[-1]:
            mb = int(r.integers(2, 5))
            w.put(mb - 2, 3)
            mw, mh = (xs + (1 << mb) - 1) >> mb, (ys + (1 << mb) - 1) >> mb
            ids = [int(v) for v in r.integers(0, int(r.integers(1, 5)), mw * mh)]
            literal_subimage(w, [i << 8 for i in ids])
            meta, ngroups = (mb, mw, ids), max(ids) + 1
    green_n = 280 + ((1 << cache_bits) if cache_bits else 0)
    groups = []
    for _ in range(ngroups):
        gs = [int(s) for s in r.choice(256, int(r.integers(1, 12)), replace=False)] if r.random() < 0.7 \
            else list(range(256))
        if r.random() < 0.6:
            gs += [256 + int(s) for s in r.choice(24, int(r.integers(1, 6)), replace=False)]
        if cache_bits and r.random() < 0.7:
            gs += [280 + int(s) for s in r.choice(1 << cache_bits, int(r.integers(1, min(8, 1 << cache_bits) + 1)),
                                                     replace=False)]
        codes = [RandomCode(w, r, green_n, gs)]
        for _ in range(3):
            codes.append(RandomCode(w, r, 256, [int(s) for s in r.choice(256, 1 if simple_rba else
                                                                              int(r.integers(1, 6)), replace=False)]))
        codes.append(RandomCode(w, r, 40, [int(s) for s in r.choice(40, int(r.integers(1, 8)), replace=False)]))
        groups.append(codes)
    pos, end, tries = 0, xs * ys, 0
    while pos < end and tries < 10 * end + 100:
        tries += 1
        x, y = pos % xs, pos // xs
        g = groups[meta[2][(y >> meta[0]) * meta[1] + (x >> meta[0])]] if meta else groups[0]
        s = int(r.choice(g[0].syms))
        if s < 256 or s >= 280:
            g[0].put(w, s)
            if s < 256:
                for c in g[1:4]:
                    c.put(w, int(r.choice(c.syms)))
            pos += 1
            continue
        ls, ds = s - 256, int(r.choice(g[4].syms))
        leb, deb = ((ls - 2) >> 1 if ls >= 4 else 0), ((ds - 2) >> 1 if ds >= 4 else 0)
        lev, dev = int(r.integers(0, 1 << leb)), int(r.integers(0, 1 << deb))
        length, dcode = prefix_value(ls, lev), prefix_value(ds, dev)
        if dcode > 120:
            dist = dcode - 120
        else:
            c = PLANE[dcode - 1]
            dist = max(1, (c >> 4) * xs + 8 - (c & 15))
        if (dist > pos or pos + length > end) and r.random() < 0.999:  # a bad copy now and then
            continue
        g[0].put(w, s)
        w.put(lev, leb)
        g[4].put(w, ds)
        w.put(dev, deb)
        pos += length


def random_stream(r, width, height, header, alpha8=False):
    """A random VP8L stream for width x height (with the 5-byte header, or an ALPH stream without it); alpha8:
    only colour indexing and the codes libwebp's 8-bit alpha path wants."""
    w = VP8LWriter()
    if header:
        w.header(width, height, alpha=1)
    xs = width
    order = [3] if alpha8 else [int(t) for t in r.permutation(4)][:int(r.integers(0, 5))]
    for t in order:
        w.put(1, 1)
        w.put(t, 2)
        if t in (0, 1):
            bits = int(r.integers(2, 10))
            w.put(bits - 2, 3)
            tw, th = (xs + (1 << bits) - 1) >> bits, (height + (1 << bits) - 1) >> bits
            if r.random() < 0.5:
                literal_subimage(w, [int(v) for v in r.integers(0, 1 << 32, tw * th, dtype=np.uint64)])
            else:
                coded_pixels(w, r, tw, th, False, False)
        elif t == 3:
            nc = int(r.choice([1, 2, 3, 4, 5, 16, 17, int(r.integers(1, 257))]))
            w.put(nc - 1, 8)
            literal_subimage(w, [int(v) for v in r.integers(0, 1 << 32, nc, dtype=np.uint64)])
            bits = 0 if nc > 16 else 1 if nc > 4 else 2 if nc > 2 else 3
            xs = (xs + (1 << bits) - 1) >> bits
    w.put(0, 1)
    coded_pixels(w, r, xs, height, True, alpha8)
    return w.data()


def make_stream_case(r, tmp):
    width, height = int(r.integers(1, 40)), int(r.integers(1, 40))
    if r.random() < 0.5:
        return riff(random_stream(r, width, height, True) + bytes(r.integers(0, 256, int(r.integers(0, 3)),
                                                                           dtype=np.uint8))), b"VP8L"
    png, webp = os.path.join(tmp, "a.png"), os.path.join(tmp, "a.webp")
    alpha_image("noise", width, height, r).save(png)
    subprocess.run(["cwebp", "-quiet", "-q", "50", "-alpha_method", "1", "-alpha_filter", "none", png, "-o", webp],
                   check=True)
    stream = random_stream(r, width, height, False, r.random() < 0.5)
    return replace_chunk(open(webp, "rb").read(), b"ALPH", b"\x01" + stream), b"ALPH"


def libwebp_rgba(so):
    import ctypes
    lib = ctypes.CDLL(so)
    lib.WebPDecodeRGBA.restype = ctypes.POINTER(ctypes.c_uint8)

    def decode(data):
        w, h = ctypes.c_int(), ctypes.c_int()
        p = lib.WebPDecodeRGBA(data, len(data), ctypes.byref(w), ctypes.byref(h))
        if not p:
            return None
        b = bytes(np.ctypeslib.as_array(p, (w.value * h.value * 4,)))
        lib.WebPFree(p)
        return b
    return decode



def compare(ours, pil, rgba_hash):
    """'' when they agree, else what differs."""
    o, p = ours.split(), pil.split()
    if o[0] == "SKIP":
        return ""
    if p[0] == "ERR" or o[0] == "ERR":
        return "" if p[0] == o[0] else f"verdict: ours {ours} / Pillow {pil}"
    if o[0] == "ALPHA":
        return "" if p[3] == "RGBA" and o[1:3] == p[1:3] and o[3] == p[5] else f"alpha: ours {ours} / Pillow {pil}"
    if o[1:3] != p[1:3] or (o[3] if p[3] == "RGBA" else o[4]) != p[4]:
        return f"pixels: ours {ours} / Pillow {pil}"
    if rgba_hash is not None and rgba_hash != o[3]:
        return f"RGBA: ours {o[3]} / libwebp {rgba_hash}"
    return ""


def main():
    argv, so = sys.argv[1:], None
    streams = "--streams" in argv
    if streams:
        argv.remove("--streams")
    if "--libwebp" in argv:
        i = argv.index("--libwebp")
        so = argv[i + 1]
        del argv[i:i + 2]
    py = sys.executable
    if "--python" in argv:
        i = argv.index("--python")
        py = argv[i + 1]
        del argv[i:i + 2]
    dump, outdir = argv[0], argv[1]
    n = int(argv[2]) if len(argv) > 2 else 1000
    seed = int(argv[3]) if len(argv) > 3 else 1
    os.makedirs(outdir, exist_ok=True)
    r = np.random.default_rng(seed)
    paths, skipped = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            d, tag = make_stream_case(r, tmp) if streams else make_case(r, tmp)
            if d is None:
                skipped += 1
                continue
            for j, data in enumerate([d] + [damage(r, d, tag) for _ in range(3)]):
                p = os.path.join(outdir, f"c{i:05d}_{j}.webp")
                with open(p, "wb") as f:
                    f.write(data)
                paths.append(p)
    ours = verdicts([dump], paths)
    pil = verdicts([py, "-c", ORACLE], paths)
    decode = libwebp_rgba(so) if so else None
    bad, counts = 0, {}
    for p in paths:
        o = ours[p]
        rgba = None
        if decode and o.startswith("OK"):
            b = decode(open(p, "rb").read())
            rgba = fnv1a64(b) if b is not None else "refused"
        why = compare(o, pil[p], rgba)
        key = o.split()[0]
        counts[key] = counts.get(key, 0) + 1
        if why:
            bad += 1
            print(p, why)
    print(f"{len(paths)} files from {n} cases ({skipped} lossy cases stored their alpha raw and were dropped): "
          f"ours {counts}; {bad} differ from Pillow")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
