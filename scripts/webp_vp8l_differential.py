#!/usr/bin/env python3
"""scripts/webp_vp8l_differential.py — random and damaged lossless WebP, our VP8L decoder against Pillow 13.

Design: a seeded generator writes N cases, each a random image (1..300 a side; noise, gradients, palettes of
2..256 colours, random walks, flat, blocks, smooth waves; with and without alpha) encoded either losslessly
(cwebp -lossless with random -z, or -q / -m, -exact, -near_lossless; or Pillow's writer with random quality,
method, exact) or, one case in four, lossy with a lossless ALPH chunk (cwebp -alpha_method 1 -alpha_filter
none, random -alpha_q), then three damaged copies whose VP8L or ALPH payload is cut, has bits flipped or bytes
replaced (the RIFF sizes rewritten, so only the codec decides). DUMP (tests/fuzz/webp_vp8l_dump.c, built as its
top comment says) prints our verdict, the RGBA and RGB hashes, or the alpha plane's hash; Pillow
(Image.open(f).load(), run in --python) prints its verdict, mode and the hash of tobytes() and of the alpha
channel. With --libwebp SO (Pillow's bundled libwebp, pillow.libs/libwebp-*.so) the RGBA that
WebPDecodeRGBA gives is compared as well, alpha included where Pillow's mode is RGB. Prints every case that
differs and a count. Usage: webp_vp8l_differential.py DUMP OUTDIR [N] [SEED] [--python PY] [--libwebp SO]
"""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

from pillow_oracle import verdicts

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


def fnv(b):
    h = 0xCBF29CE484222325
    for x in b:
        h = ((h ^ x) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


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
            d, tag = make_case(r, tmp)
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
            rgba = fnv(b) if b is not None else "refused"
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
