#!/usr/bin/env python3
"""scripts/webp_differential.py — random and damaged WebPs, our decoder's verdict and pixels against Pillow's.

Design: a seeded generator makes N WebP files with libwebp's own tools (cwebp, webpmux: Debian's `webp` package;
any encoder version will do, the pixels to match are Pillow's). Sources are PPM or PAM (with alpha) files the
script writes itself: sizes 1..200 (now and then up to 700 wide or tall), content noise, flat, gradients, a few
colours (2..300: colour-indexing at every pixel packing), blocks with hard edges, smooth photo-like fields. Each is
encoded lossless (-z 0..9, -exact, -near_lossless) or lossy (-q, -m, -segments, -f, -sharpness,
-strong / -nostrong, -sns, -sharp_yuv; with alpha: -alpha_method 0 / 1, -alpha_filter none / fast / best, -alpha_q).
A share becomes an animation (webpmux: a first frame smaller than the canvas at an even offset, then a full one)
or gets an EXIF chunk with an Orientation (1..9, with or without the "Exif\\0\\0" prefix) or an XMP packet with
one. A share of the files is then damaged: cut at a random length, random bytes changed (anywhere, or past the
headers), the RIFF or a chunk's size changed, VP8X's flags or canvas changed, an unknown chunk inserted, two
chunks swapped, bytes appended. With --photos DIR the files are real photos instead (DIR's JPEGs, cropped and
resized by cwebp to the sizes of a photo folder, 500 x 375 to 4032 x 3024, lossy or lossless, undamaged). Each file is decoded by Pillow (ImageOps.exif_transpose(Image.open(path))
.convert("RGB"), as the tool's default pipeline; any exception is a refusal) in the Python given by --python, and
by DUMP (tests/fuzz/gif_dump.c, a generic sg_decode_rgb driver with the default options). Prints every file
whose verdict, size or pixels differ, and a count. Usage:
webp_differential.py DUMP OUTDIR [N] [SEED] [--python PY] [--pillow12] [--photos DIR]
"""
import os
import struct
import subprocess
import sys
import tempfile

from pillow_oracle import ORACLE_EXIF, parse_args, verdicts, write_cases

TMP = tempfile.mkdtemp(prefix="webp_diff_")


def pixels(rng, w, h, ch):
    """w x h pixels of ch channels (bytes), of a random kind."""
    kind = rng.choice(["noise", "flat", "gradient", "few", "few", "blocks", "smooth"])
    if kind == "noise":
        return bytes(rng.randrange(256) for _ in range(w * h * ch))
    if kind == "flat":
        return bytes(rng.randrange(256) for _ in range(ch)) * (w * h)
    if kind == "few":
        pal = [bytes(rng.randrange(256) for _ in range(ch)) for _ in range(rng.choice([2, 3, 4, 5, 16, 17, 200, 300]))]
        return b"".join(rng.choice(pal) for _ in range(w * h))
    out = bytearray()
    gx, gy = [rng.uniform(-4, 4) for _ in range(ch)], [rng.uniform(-4, 4) for _ in range(ch)]
    base, bs = [rng.randrange(256) for _ in range(ch)], rng.choice([2, 4, 8, 13])
    for y in range(h):
        for x in range(w):
            for c in range(ch):
                if kind == "gradient":
                    v = base[c] + gx[c] * x + gy[c] * y
                elif kind == "blocks":
                    v = ((x // bs) * 97 + (y // bs) * 57 + c * 31 + base[c]) * 7
                else:  # smooth: gradient plus a little noise
                    v = base[c] + gx[c] * x * 0.5 + gy[c] * y * 0.5 + rng.randrange(-6, 7)
                out.append(int(v) % 256 if kind == "blocks" else max(0, min(255, int(v))))
    return bytes(out)


def source(rng, w, h, alpha):
    """Path of a PPM (or PAM with alpha) of w x h random pixels."""
    p = os.path.join(TMP, "src.pam" if alpha else "src.ppm")
    with open(p, "wb") as f:
        if alpha:
            f.write(b"P7\nWIDTH %d\nHEIGHT %d\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n" % (w, h))
        else:
            f.write(b"P6\n%d %d\n255\n" % (w, h))
        f.write(pixels(rng, w, h, 4 if alpha else 3))
    return p


def cwebp_flags(rng, alpha):
    if rng.random() < 0.4:
        f = ["-lossless", "-z", str(rng.randrange(10))]
        if rng.random() < 0.3:
            f.append("-exact")
        if rng.random() < 0.2:
            f += ["-near_lossless", str(rng.choice([0, 20, 40, 60, 80]))]
        return f
    f = ["-q", str(rng.randrange(101)), "-m", str(rng.randrange(7)), "-segments", str(rng.randrange(1, 5)),
         "-f", str(rng.randrange(101)), "-sharpness", str(rng.randrange(8)),
         rng.choice(["-strong", "-nostrong"]), "-sns", str(rng.randrange(101))]
    if rng.random() < 0.2:
        f.append("-sharp_yuv")
    if alpha:
        f += ["-alpha_method", str(rng.randrange(2)), "-alpha_filter", rng.choice(["none", "fast", "best"]),
              "-alpha_q", str(rng.choice([0, 50, 100, rng.randrange(101)]))]
    return f


def still(rng, w, h):
    """Bytes of a still WebP of w x h."""
    alpha = rng.random() < 0.35
    out = os.path.join(TMP, "still.webp")
    subprocess.run(["cwebp", "-quiet"] + cwebp_flags(rng, alpha) + [source(rng, w, h, alpha), "-o", out], check=True)
    with open(out, "rb") as f:
        return f.read()


def size(rng):
    if rng.random() < 0.05:
        return rng.randrange(1, 700), rng.randrange(1, 60)
    return rng.randrange(1, 201), rng.randrange(1, 201)


def mux(args):
    out = os.path.join(TMP, "mux.webp")
    subprocess.run(["webpmux"] + args + ["-o", out], check=True, capture_output=True)
    with open(out, "rb") as f:
        return f.read()


def animation(rng):
    """Two frames: the first smaller than the canvas at an even offset, the second the whole canvas."""
    w, h = rng.randrange(4, 160), rng.randrange(4, 160)
    fw, fh = rng.randrange(1, w + 1), rng.randrange(1, h + 1)
    x, y = rng.randrange(0, w - fw + 1) & ~1, rng.randrange(0, h - fh + 1) & ~1
    paths = []
    for i, (a, b) in enumerate([(fw, fh), (w, h)]):
        p = os.path.join(TMP, "frame%d.webp" % i)
        with open(p, "wb") as f:
            f.write(still(rng, a, b))
        paths.append(p)
    return mux(["-frame", paths[0], "+100+%d+%d" % (x, y), "-frame", paths[1], "+100+0+0", "-loop", "0"])


def tiff_orientation(rng):
    le = rng.random() < 0.7
    e = "<" if le else ">"
    v = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 9])
    body = (b"II*\0" if le else b"MM\0*") + struct.pack(e + "I", 8) + struct.pack(e + "H", 1)
    body += struct.pack(e + "HHI", 0x112, 3, 1) + struct.pack(e + "HH", v, 0) + struct.pack(e + "I", 0)
    return (b"Exif\0\0" if rng.random() < 0.5 else b"") + body, v


def with_metadata(rng, data):
    src = os.path.join(TMP, "meta_in.webp")
    with open(src, "wb") as f:
        f.write(data)
    blob = os.path.join(TMP, "meta.bin")
    if rng.random() < 0.7:
        exif, _ = tiff_orientation(rng)
        with open(blob, "wb") as f:
            f.write(exif)
        return mux(["-set", "exif", blob, src])
    with open(blob, "wb") as f:
        f.write(b'<x:xmpmeta><rdf:Description tiff:Orientation="%d"/></x:xmpmeta>' % rng.randrange(1, 10))
    return mux(["-set", "xmp", blob, src])


def chunks(data):
    """(offset, fourcc, size) of the top-level chunks after the RIFF header."""
    out, p = [], 12
    while p + 8 <= len(data):
        n = struct.unpack("<I", data[p + 4:p + 8])[0]
        out.append((p, data[p:p + 4], n))
        p += 8 + n + (n & 1)
    return out


def damage(rng, data):
    d = bytearray(data)
    kind = rng.randrange(9)
    cs = chunks(data)
    if kind == 0:  # cut
        return bytes(d[:rng.randrange(len(d) // 3 if rng.random() < 0.7 else 0, len(d))])
    if kind == 1:  # bytes changed past the headers
        for _ in range(rng.randrange(1, 6)):
            d[rng.randrange(min(len(d) - 1, 40), len(d))] = rng.randrange(256)
        return bytes(d)
    if kind == 2:  # bytes changed anywhere
        for _ in range(rng.randrange(1, 4)):
            d[rng.randrange(len(d))] = rng.randrange(256)
        return bytes(d)
    if kind == 3:  # the RIFF size
        n = struct.unpack("<I", d[4:8])[0]
        d[4:8] = struct.pack("<I", max(0, n + rng.choice([-8, -3, -1, 1, 2, 7, 1000, -n])) & 0xFFFFFFFF)
        return bytes(d)
    if kind == 4 and cs:  # a chunk's size
        p, _, n = rng.choice(cs)
        d[p + 4:p + 8] = struct.pack("<I", (n + rng.choice([-5, -2, -1, 1, 2, 3, 100, 1 << 31])) & 0xFFFFFFFF)
        return bytes(d)
    if kind == 5 and cs and cs[0][1] == b"VP8X":  # VP8X flags or canvas
        p = cs[0][0] + 8 + rng.choice([0, 0, 1, 4, 5, 7, 8])
        if p < len(d):
            d[p] ^= 1 << rng.randrange(8)
        return bytes(d)
    if kind == 6 and cs:  # an unknown (or known) chunk inserted
        p = rng.choice([c[0] for c in cs] + [len(d)])
        tag = rng.choice([b"ABCD", b"JUNK", b"ALPH", b"VP8X", b"EXIF", b"ICCP", b"ANIM"])
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12)))
        ins = tag + struct.pack("<I", len(body)) + body + (b"\0" if len(body) & 1 else b"")
        d[p:p] = ins
        d[4:8] = struct.pack("<I", struct.unpack("<I", d[4:8])[0] + len(ins))
        return bytes(d)
    if kind == 7 and len(cs) >= 2:  # two neighbouring chunks swapped
        i = rng.randrange(len(cs) - 1)
        (p0, _, _), (p1, _, n1) = cs[i], cs[i + 1]
        a, b = bytes(d[p0:p1]), bytes(d[p1:p1 + 8 + n1 + (n1 & 1)])
        d[p0:p0 + len(a) + len(b)] = b + a
        return bytes(d)
    return bytes(d) + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 20)))  # bytes appended


PHOTO_SIZES = [(500, 375), (800, 600), (1600, 1200), (2048, 1536), (4032, 3024)]


def photo(rng, srcdir):
    """A real photo from srcdir, cropped and resized by cwebp, lossy (-q 60..95) or now and then lossless."""
    src = os.path.join(srcdir, rng.choice(sorted(f for f in os.listdir(srcdir) if f.lower().endswith(".jpg"))))
    w, h = rng.choice(PHOTO_SIZES)
    if rng.random() < 0.3:
        w, h = h, w
    flags = ["-lossless", "-z", "1"] if rng.random() < 0.1 else ["-q", str(rng.randrange(60, 96)), "-m", str(rng.randrange(7))]
    out = os.path.join(TMP, "photo.webp")
    subprocess.run(["cwebp", "-quiet", "-crop", str(rng.randrange(0, 200)), str(rng.randrange(0, 200)), "1000", "800",
                    "-resize", str(w), str(h)] + flags + [src, "-o", out], check=True)
    with open(out, "rb") as f:
        return f.read()


def make(rng):
    r = rng.random()
    data = animation(rng) if r < 0.12 else still(rng, *size(rng))
    if rng.random() < 0.15:
        data = with_metadata(rng, data)
    if rng.random() < 0.45:
        data = damage(rng, data)
    return data


def main():
    argv, photos = sys.argv[1:], None
    if "--photos" in argv:
        i = argv.index("--photos")
        photos, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    dump, outdir, n, seed, py, flags = parse_args(argv)
    p12 = "--pillow12" in flags
    paths = write_cases(outdir, n, seed, "w%05d.webp", (lambda rng: photo(rng, photos)) if photos else make)
    ours = verdicts([dump] + (["12"] if p12 else []), paths, check=False)
    theirs = verdicts([py, "-c", ORACLE_EXIF], paths, check=False)
    diff = ok = refused = 0
    for p in paths:
        a, b = ours.get(p, "missing"), theirs.get(p, "missing")
        ok += a.startswith("OK")
        refused += not b.startswith("OK")
        if a != b and (a.startswith("OK") or b.startswith("OK")):
            diff += 1
            print("DIFF", p, "| ours:", a[:150], "| pillow:", b[:120])
    print("%d of %d differ (Pillow decodes %d, refuses %d; we decode %d)" % (diff, n, n - refused, refused, ok))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
