#!/usr/bin/env python3
"""scripts/png_differential.py — random and damaged PNGs, our decoder's verdict and pixels against Pillow's.

Design: a seeded generator writes N PNGs: every colour type and bit depth (8-bit grey, grey + alpha, RGB and RGBA
most often, and 1/2/4/16-bit, palettes, Adam7), PLTE of whole entries or not, missing, doubled or over 256 colours,
tRNS of any size in any colour type, sizes from 1 x 1 to 300 x 80, each row's filter type drawn at random (or one
for the whole image), photo-like rows (small differences) or noise, the zlib stream at a random level, in one IDAT
or many. A third of them are damaged: a filter type above 4, the stream cut or with bytes flipped, a wrong Adler-32,
fewer or more bytes than the rows need, the file cut short. Each file is decoded by Pillow (Image.open(f).convert(
"RGB"); any exception is a refusal) in the Python given by --python (default: this one) and by DUMP
(tests/fuzz/gif_dump.c built as its top comment says: it decodes any format with sg_decode_rgb).
Prints every file whose verdict, size or pixels differ, and a count. Usage: png_differential.py DUMP OUTDIR [N] [SEED]
[--python PY]
"""
import struct
import zlib

from pillow_oracle import compare_main


def chunk(name, data):
    return struct.pack(">I", len(data)) + name + data + struct.pack(">I", zlib.crc32(name + data) & 0xFFFFFFFF)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def filtered(rows, bpp, rng, mode):
    """The rows (bytes of one pass) with PNG filters applied: a random type per row, or mode's for all."""
    out, prev = bytearray(), bytes(len(rows[0])) if rows else b""
    for r in rows:
        t = rng.randrange(5) if mode < 0 else mode
        f = bytearray(len(r))
        for k in range(len(r)):
            a = r[k - bpp] if k >= bpp else 0
            b, c = prev[k], prev[k - bpp] if k >= bpp else 0
            pred = (0, a, b, (a + b) >> 1, paeth(a, b, c))[t]
            f[k] = (r[k] - pred) & 255
        out += bytes([t]) + f
        prev = r
    return out


def png(rng):
    ctype, depth = rng.choice([(0, 8), (2, 8), (4, 8), (6, 8)] * 4 + [(0, 1), (0, 2), (0, 4), (0, 16), (2, 16),
                                                                     (4, 16), (6, 16), (3, 8), (3, 4), (3, 1)])
    ch = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[ctype]
    w = rng.randint(1, rng.choice([8, 40, 300]))
    h = rng.randint(1, rng.choice([4, 20, 80]))
    interlace = 1 if rng.random() < 0.1 else 0
    smooth = rng.random() < 0.5
    bpp = max(1, ch * depth // 8)

    def row(n):
        if not smooth:
            return bytes(rng.randrange(256) for _ in range(n))
        v, out = rng.randrange(256), bytearray()
        for _ in range(n):
            v = (v + rng.randint(-3, 3)) & 255
            out.append(v)
        return bytes(out)

    mode = rng.choice([-1, -1, -1, 0, 1, 2, 3, 4])
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = bytearray()
    for x0, y0, dx, dy in (passes if interlace else [(0, 0, 1, 1)]):
        pw, ph = (w - x0 + dx - 1) // dx, (h - y0 + dy - 1) // dy
        if pw > 0 and ph > 0:
            rb = (pw * ch * depth + 7) // 8
            raw += filtered([row(rb) for _ in range(ph)], bpp, rng, mode)
    damage = rng.randrange(15)
    if damage == 1 and raw:
        raw[rng.randrange(len(raw))] = rng.randint(5, 255)  # maybe a filter byte above 4, maybe a sample
    if damage == 2 and raw:
        del raw[len(raw) - rng.randint(1, min(len(raw), 40)):]  # fewer bytes than the rows need
    if damage == 3:
        raw += bytes(rng.randrange(256) for _ in range(rng.randint(1, 50)))  # more
    z = bytearray(zlib.compress(bytes(raw), rng.choice([0, 1, 6, 9])))
    if damage == 4:
        z[-1] ^= 0x5A  # Adler-32
    if damage == 5 and len(z) > 4:
        for _ in range(rng.randint(1, 3)):
            z[rng.randrange(2, len(z))] ^= rng.randint(1, 255)
    if damage == 6:
        del z[rng.randrange(2, len(z)):]  # the stream cut, the file whole
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, interlace))
    for _ in range(2 if rng.random() < 0.05 else 1):  # a second PLTE now and then (the last one counts)
        if rng.random() < 0.9 if ctype == 3 else rng.random() < 0.05:
            n = 3 * rng.randint(1, 256) if rng.random() < 0.8 else rng.randint(0, 800)  # or not whole entries
            out += chunk(b"PLTE", bytes(rng.randrange(256) for _ in range(n)))
    if rng.random() < 0.1:  # any size, any colour type
        n = {0: 2, 2: 6, 3: rng.randint(1, 4)}.get(ctype, 2) if rng.random() < 0.6 else rng.randint(0, 10)
        out += chunk(b"tRNS", bytes(rng.randrange(256) for _ in range(n)))
    at = 0
    while at < len(z) or at == 0:
        m = len(z) - at if rng.random() < 0.7 else rng.randint(1, max(1, len(z) - at))
        out += chunk(b"IDAT", bytes(z[at:at + m]))
        at += m
        if m == 0:
            break
    out += chunk(b"IEND", b"")
    if damage == 7:
        out = out[:rng.randrange(40, len(out))]
    return out


if __name__ == "__main__":
    compare_main("r%05d.png", png)
