#!/usr/bin/env python3
"""scripts/make_corrupt_goldens.py — Pillow's verdict on corrupted JPEGs, RLE BMPs, PSDs, TGAs and GIFs, for
tests/test_preprocess_hostile.c.

    python3 scripts/make_corrupt_goldens.py        # writes tests/images/goldens_corrupt.txt (needs Pillow)

A JPEG whose entropy-coded data is damaged may decode (libjpeg warns and goes on), or fail (an error, or the data
runs out before the last row). Which, and with what pixels, is Pillow's call; the test regenerates each damaged
file from its line and checks both of our JPEG paths (decoded straight into the resize, and decoded whole) give
the same verdict and, when Pillow decodes it, the same 224x224 bilinear pixels. An RLE BMP (preprocess/
decode_bmp_rle.c), a TGA (preprocess/decode_tga.c) and a GIF (preprocess/decode_gif.c) get the same damage, and
are also cut short at many lengths:
Pillow decodes a stream that reaches the last pixel, wherever the file ends after it, and refuses one that stops
before. PSDs (preprocess/decode_psd.c), PackBits and raw, get both too: damage to the row byte counts moves where
Pillow starts reading a channel, damage to the data changes runs and their lengths. Each line:

    corrupt SRC SEED NBYTES ok HASH       Pillow decodes it: HASH = FNV-1a 64 of convert("RGB").resize((224, 224))
    corrupt SRC SEED NBYTES refused -     Pillow raises
    cut SRC LEN ok HASH                   the first LEN bytes of SRC (BMP, PSD, TGA, GIF): decoded, or
    cut SRC LEN refused -                 refused

The damage: xorshift64 seeded with SEED, then NBYTES times: next state x; byte at len/3 + x % (len - len/3 - 2)
(the last two thirds of the file: after a JPEG's headers; the end of a BMP's palette and its RLE data; a PSD's
row counts and pixel data) is set to
(x >> 32) & 0xff. The C test does the same.
Reference tooling only: nothing at run time or in CI needs Pillow.
"""
import os
import sys

import PIL
from PIL import Image, features

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
IMAGES = os.path.join(ROOT, "tests", "images")
SOURCES = ["jpeg_big_800x600.jpg", "jpeg_progressive.jpg", "jpeg_420.jpg", "jpeg_422.jpg", "jpeg_cmyk.jpg",
           "jpeg_gray.jpg", "bmp_rle8.bmp", "bmp_rle4.bmp", "bmp_rle4_oddoffset.bmp", "psd_rgba_rle.psd",
           "psd_cmyk_5ch_rle.psd", "psd_gray_alpha_rle.psd", "psd_bitmap_rle.psd", "psd_indexed.psd", "tga_rle.tga",
           "tga_24_rle_rtl.tga", "tga_cm24_rle_first4.tga", "tga_la_cmap_rle.tga", "tga_16.tga", "gif_interlaced.gif",
           "gif_frame_past_screen_trns.gif"]
CUT_SOURCES = ["bmp_rle8.bmp", "bmp_rle4.bmp", "bmp_rle8_overrun.bmp", "psd_rgb_rle.psd", "psd_rgba.psd",
               "psd_rgb_5ch_rle.psd", "tga_rle.tga", "tga_32_rle_top_rtl_footer.tga", "tga_cm24_rle_first4.tga",
               "gif_p.gif", "gif_screen_0x0_offset_interlaced.gif"]
SEEDS = 40
M = (1 << 64) - 1


def fnv1a64(b: bytes) -> str:
    h = 0xcbf29ce484222325
    for x in b:
        h = ((h ^ x) * 0x100000001b3) & M
    return f"{h:016x}"


def damage(data: bytes, seed: int, nbytes: int) -> bytes:
    b = bytearray(data)
    x = seed | 1
    for _ in range(nbytes):
        x ^= (x << 13) & M
        x ^= x >> 7
        x ^= (x << 17) & M
        at = len(b) // 3 + x % (len(b) - len(b) // 3 - 2)
        b[at] = (x >> 32) & 0xFF
    return bytes(b)


def pillow_verdict(data: bytes):
    """("ok", HASH of the 224x224 bilinear pixels) when Pillow decodes data, else ("refused", "-")."""
    import io
    try:
        im = Image.open(io.BytesIO(data))
        im.load()
        return "ok", fnv1a64(im.convert("RGB").resize((224, 224), Image.BILINEAR).tobytes())
    except Exception:  # noqa: BLE001  (any failure is Pillow refusing the file)
        return "refused", "-"


def psd_data_start(data: bytes) -> int:
    """A PSD's compression field: after the header and the three sections, each a 4-byte length and its bytes."""
    p = 26
    for _ in range(3):
        p += 4 + int.from_bytes(data[p:p + 4], "big")
    return p


def main():
    lines = [f"# made by scripts/make_corrupt_goldens.py with Pillow {PIL.__version__}, libjpeg-turbo "
             f"{features.version('libjpeg_turbo')}: corrupt SRC SEED NBYTES ok|refused HASH; "
             f"cut SRC LEN ok|refused HASH"]
    counts = {"ok": 0, "refused": 0}
    for src in SOURCES:
        data = open(os.path.join(IMAGES, src), "rb").read()
        for seed in range(1, SEEDS + 1):
            nbytes = 1 + seed % 4
            verdict, h = pillow_verdict(damage(data, seed * 0x9E3779B97F4A7C15 & M, nbytes))
            counts[verdict] += 1
            lines.append(f"corrupt {src} {seed * 0x9E3779B97F4A7C15 & M} {nbytes} {verdict} {h}")
    for src in CUT_SOURCES:
        data = open(os.path.join(IMAGES, src), "rb").read()
        if src.endswith(".gif"):  # the first block after the header and global colour table
            off = 13 + (3 << ((data[10] & 7) + 1) if data[10] & 0x80 else 0)
        elif src.endswith(".tga"):  # the pixel data's start: header, ID section, colour map
            off = 18 + data[0] + data[1] * int.from_bytes(data[5:7], "little") * ((data[7] + 7) // 8)
        elif src.endswith(".bmp"):
            off = int.from_bytes(data[10:14], "little")  # the RLE stream's start
        else:
            off = psd_data_start(data)
        cuts = {n for n in (30, 54, off - 100) if n >= 0} | {off}  # (a PSD's data starts before 100)
        cuts |= {off + (len(data) - off) * k // 24 for k in range(1, 24)}
        cuts |= {len(data) - k for k in range(1, 9)}  # the end of the stream: escapes Pillow never reads
        for n in sorted(cuts):
            verdict, h = pillow_verdict(data[:n])
            counts[verdict] += 1
            lines.append(f"cut {src} {n} {verdict} {h}")
    out = os.path.join(IMAGES, "goldens_corrupt.txt")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines) - 1} lines to {out}: {counts['ok']} decoded, {counts['refused']} refused", file=sys.stderr)


if __name__ == "__main__":
    main()
