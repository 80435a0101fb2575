#!/usr/bin/env python3
"""scripts/tga_differential.py — random and damaged TGAs, our decoder's verdict and pixels against Pillow's.

Design: a seeded generator writes N TGAs: image types 1, 2, 3 and their RLE forms 9, 10, 11, pixel depths 1, 8, 15,
16, 24, 32, colour maps of every first index, length and entry depth (15, 16, 24, 32) or none, an image ID of 0-20
bytes, every origin (bottom-up or top-down, left-to-right or right-to-left), RLE streams of runs and literal packets
(crossing rows now and then), sizes from 1 x 1 to 40 x 20, now and then a TGA 2 footer. A third of them are damaged:
a header byte changed, the file cut short, bytes appended. Each file is decoded by Pillow (Image.open(f).convert(
"RGB"); any exception is a refusal) in the Python given by --python (default: this one) and by DUMP
(tests/fuzz/gif_dump.c built as its top comment says: it decodes any format with sg_decode_rgb).
Usage: tga_differential.py DUMP OUTDIR [N] [SEED] [--python PY]
"""
import struct

from pillow_oracle import compare_main


def tga(rng):
    itype = rng.choice([1, 2, 3, 1, 2, 3, 9, 10, 11])
    base = itype & 7
    depth = {1: rng.choice([8, 8, 16]), 2: rng.choice([15, 16, 24, 32, 24]), 3: rng.choice([1, 8, 8, 16])}[base]
    w, h = rng.randint(1, rng.choice([6, 40])), rng.randint(1, rng.choice([4, 20]))
    has_map = base == 1 or rng.random() < 0.1
    first = rng.choice([0, 0, 0, rng.randint(0, 300)]) if has_map else 0
    length = rng.choice([1 << min(depth, 8), rng.randint(1, 300)]) if has_map else 0
    mdepth = rng.choice([24, 24, 32, 16, 15]) if has_map else 0
    idlen = rng.choice([0, 0, rng.randint(1, 20)])
    desc = rng.choice([0, 0x20, 0x10, 0x30]) | (rng.choice([0, 8]) if depth == 32 else 0)
    head = struct.pack("<BBBHHBHHHHBB", idlen, 1 if has_map else 0, itype, first, length, mdepth, 0, 0, w, h, depth,
                       desc)
    cmap = bytes(rng.randrange(256) for _ in range(length * ((mdepth + 7) // 8))) if has_map else b""
    bpp = (depth + 7) // 8
    smooth = rng.random() < 0.5

    def px():
        if base == 1 and length and rng.random() < 0.9:
            v = rng.randrange(first, first + length) if rng.random() < 0.9 else rng.randrange(256)
            return (v & ((1 << (8 * bpp)) - 1)).to_bytes(bpp, "little")
        return bytes(rng.randrange(256) for _ in range(bpp))

    if depth == 1:
        data = bytes(rng.randrange(256) for _ in range(((w + 7) // 8) * h))
    elif itype & 8:
        out, n = bytearray(), w * h
        while n > 0:
            k = min(n, rng.randint(1, 20), 128)
            if rng.random() < 0.5:
                out.append(0x80 | (k - 1))
                out += px()
            else:
                out.append(k - 1)
                for _ in range(k):
                    out += px()
            n -= k
        data = bytes(out)
    else:
        one = px() if smooth else None
        data = b"".join(one if smooth and rng.random() < 0.5 else px() for _ in range(w * h))
    out = bytearray(head + bytes(rng.randrange(256) for _ in range(idlen)) + cmap + data)
    if rng.random() < 0.1:
        out += b"\0" * 8 + b"TRUEVISION-XFILE.\0"
    damage = rng.randrange(9)
    if damage == 1:
        out[rng.randrange(18)] = rng.randrange(256)
    if damage == 2:
        del out[rng.randrange(18, len(out)):]
    if damage == 3:
        out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 30)))
    return bytes(out)


if __name__ == "__main__":
    compare_main("t%05d.tga", tga)
