#!/usr/bin/env python3
"""scripts/bmp_differential.py — random and damaged BMPs, our decoder's verdict and pixels against Pillow's.

Design: a seeded generator writes N BMPs: OS/2 (12-byte) and Windows info headers (40, 52, 56, 108, 124 bytes),
1/4/8/16/24/32 bits per pixel, uncompressed or BI_BITFIELDS (masks of every width, with and without alpha), RLE8 and
RLE4 (runs, absolute runs, deltas, end of line / bitmap in odd places), palettes of every size (biClrUsed 0, below and
above 2^bpp), bottom-up and top-down, pixel data at the offset the header implies or elsewhere, sizes from 1 x 1 to
90 x 40. A quarter of them are damaged: a byte of the headers changed, the file cut short, the data offset past the
end. Each file is decoded by Pillow (Image.open(f).convert("RGB"); any exception is a refusal) in the Python given
by --python (default: this one) and by DUMP (tests/fuzz/gif_dump.c built as its top comment says: it decodes any
format with sg_decode_rgb). Prints every file whose verdict, size or pixels differ, and a count.
--os2-all-depths: OS/2 (12-byte) headers of every depth, 16 and 32 bits too (by default 1, 4, 8 and 24, so that
earlier seeds' files stay what they were).
Usage: bmp_differential.py DUMP OUTDIR [N] [SEED] [--python PY] [--os2-all-depths]
"""
import struct
import sys

from pillow_oracle import compare_main


def rle(rng, w, h, bpp):
    """An RLE8 / RLE4 stream for a w x h image, with odd runs, deltas and ends now and then."""
    out = bytearray()
    for y in range(h):
        x = 0
        while x < w:
            k = rng.random()
            n = min(w - x, rng.randint(1, 20))
            if k < 0.45:
                out += bytes([n, rng.randrange(256)])
            elif k < 0.85 and n >= 3:
                out += bytes([0, n])
                data = bytes(rng.randrange(256) for _ in range(n if bpp == 8 else (n + 1) // 2))
                out += data + (b"\0" if len(data) % 2 else b"")
            elif k < 0.9:
                out += bytes([0, 2, rng.randrange(4), rng.randrange(3)])  # delta
            else:
                out += bytes([n, rng.randrange(256)])
            x += n
        out += b"\0\0"  # end of line
    if rng.random() < 0.9:
        out += b"\0\1"  # end of bitmap
    return bytes(out)


OS2_DEPTHS = [1, 4, 8, 16, 24, 32] if "--os2-all-depths" in sys.argv else [1, 4, 8, 24]  # 16/32: stb's path


def bmp(rng):
    hsize = rng.choice([12, 40, 40, 40, 52, 56, 108, 124])
    bpp = rng.choice([1, 4, 8, 8, 16, 24, 24, 32, 32]) if hsize != 12 else rng.choice(OS2_DEPTHS)
    w, h = rng.randint(1, rng.choice([8, 40, 90])), rng.randint(1, rng.choice([4, 20, 40]))
    comp = 0
    if hsize != 12 and bpp in (16, 32) and rng.random() < 0.5:
        comp = 3
    if hsize != 12 and bpp in (4, 8) and rng.random() < 0.2:
        comp = 2 if bpp == 4 else 1
    top_down = hsize != 12 and comp == 0 and rng.random() < 0.2
    ncol = 0
    if bpp <= 8:
        ncol = rng.choice([0, 1 << bpp, rng.randint(1, 1 << bpp), rng.randint(1, 300)])
    pal_entries = (ncol or (1 << bpp)) if bpp <= 8 else 0
    if hsize != 12 and bpp > 8 and rng.random() < 0.1:
        ncol = rng.randint(1, 20)  # a palette in a true-colour file
        pal_entries = ncol
    entry = 3 if hsize == 12 else 4
    masks = b""
    if comp == 3:
        if bpp == 16:
            m = rng.choice([(0xF800, 0x7E0, 0x1F, 0), (0x7C00, 0x3E0, 0x1F, 0), (0xF00, 0xF0, 0xF, 0xF000),
                            (rng.getrandbits(16), rng.getrandbits(16), rng.getrandbits(16), 0)])
        else:
            m = rng.choice([(0xFF0000, 0xFF00, 0xFF, 0), (0xFF0000, 0xFF00, 0xFF, 0xFF000000),
                            (0xFF, 0xFF00, 0xFF0000, 0), (0x3FF00000, 0xFFC00, 0x3FF, 0),
                            (rng.getrandbits(32), rng.getrandbits(32), rng.getrandbits(32), 0)])
        masks = struct.pack("<III", *m[:3])
        if hsize >= 56:
            masks += struct.pack("<I", m[3])
    palette = bytes(rng.randrange(256) for _ in range(pal_entries * entry))
    if comp in (1, 2):
        data = rle(rng, w, h, bpp)
    else:
        stride = (w * bpp + 31) // 32 * 4
        smooth = rng.random() < 0.5
        data = bytes((y * 7 + i) & 255 if smooth else rng.randrange(256) for y in range(h) for i in range(stride))
    extra_masks = masks if hsize == 40 and comp == 3 else b""
    info_rest = b""
    if hsize == 12:
        info = struct.pack("<IHHHH", 12, w, h, 1, bpp)
    else:
        info = struct.pack("<IiiHHIIiiII", hsize, w, -h if top_down else h, 1, bpp, comp, len(data), 2835, 2835,
                           ncol, 0)
        if hsize > 40:
            info_rest = (masks if comp == 3 else b"\0" * 16)[:hsize - 40].ljust(hsize - 40, b"\0")
    gap = rng.choice([0, 0, 0, rng.randint(1, 10)])
    off = 14 + len(info) + len(info_rest) + len(extra_masks) + len(palette) + gap
    if rng.random() < 0.05:
        off = rng.randint(0, off + 20)  # the data offset elsewhere
    body = info + info_rest + extra_masks + palette + b"\0" * gap + data
    out = bytearray(b"BM" + struct.pack("<IHHI", 14 + len(body), 0, 0, off) + body)
    damage = rng.randrange(12)
    if damage == 1:
        i = rng.randrange(2, min(len(out), 14 + hsize))
        out[i] = rng.randrange(256)
    if damage == 2:
        del out[rng.randrange(14, len(out)):]
    if damage == 3:
        struct.pack_into("<I", out, 10, len(out) + rng.randint(0, 100))
    return bytes(out)


if __name__ == "__main__":
    compare_main("b%05d.bmp", bmp)
