#!/usr/bin/env python3
"""scripts/make_corrupt_goldens.py — Pillow's verdict on corrupted JPEGs, RLE BMPs, PSDs, TGAs, GIFs, TIFFs and WebPs, for
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
    dirdamage SRC SEED NBYTES ok|refused HASH   (TIFF) the damage below, in IFD0's entries instead
    hdrdamage SRC SEED NBYTES ok|refused HASH   (WebP) the damage below, in bytes 12 .. min(len, 64) instead

TIFFs (preprocess/decode_tiff.c) get all three, their verdicts from Image.open(path) as the tool opens files
(Pillow memory-maps a single uncompressed tile then): the damage of the data, damage of the directory's entries
(tags, types, counts, values and offsets: byte ifd + 2 + x % (12 * entries)), and cuts, denser in the directory's
region (at the end of the file but in Pillow's own uncompressed files, where it comes first).

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

from pillow_oracle import fnv1a64

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
# TIFFs (preprocess/decode_tiff.c), a few of each path: uncompressed strips (the directory first or last), tiles,
# LZW, Deflate, PackBits (strips and tiles, predictor 2), planar 2. Damaged in the data (corrupt), in the
# directory's entries (dirdamage) and cut short at many lengths, the directory's region more densely.
TIFF_SOURCES = ["tiff_rgb_raw.tif", "tiff_l_raw.tif", "tiff_rgb_strips.tif", "tiff_p4_raw.tif", "tiff_cmyk_raw.tif",
                "tiff_rgb_tiled_c1.tif", "tiff_rgb_raw_tiled_be.tif", "tiff_rgb_tiff_lzw.tif", "tiff_rgb_lzw_pred2.tif",
                "tiff_rgb_tiled_c5.tif", "tiff_rgb_tiff_deflate.tif", "tiff_rgb_deflate_pred2_be.tif",
                "tiff_rgb_tiled_c8.tif", "tiff_rgb_packbits.tif", "tiff_la_packbits.tif", "tiff_rgb_tiled_c32773.tif",
                "tiff_rgb_planar_c1.tif", "tiff_rgb_planar_c5.tif", "tiff_rgb_planar_c8.tif",
                "tiff_cmyk_planar_packbits.tif", "tiff_rgb_planar_raw_tiled.tif"]
# WebPs (preprocess/decode_webp.c and its codecs): simple lossy and lossless, VP8X with raw and lossless alpha,
# animations whose first frame is smaller than the canvas. Damaged in the data (corrupt: the codecs' verdicts),
# in the container's headers (hdrdamage: bytes 12 + x % (min(len, 64) - 12): the first chunks' tags and sizes,
# VP8X, ANIM, an ANMF's header, the image's header) and cut short.
WEBP_SOURCES = ["webp_lossy.webp", "webp_lossless.webp", "webp_alpha_raw_filter1.webp",
                "webp_alpha_lossless_filter3.webp", "webp_anim_offset_lossy.webp", "webp_anim_offset_lossless.webp",
                "webp_lossy_sharp_yuv_q30.webp", "webp_img2webp.webp"]
WEBP_SEEDS = 20
SEEDS = 40
M = (1 << 64) - 1



def damage(data: bytes, seed: int, nbytes: int) -> bytes:
    """nbytes seeded bytes overwritten in the last two thirds of data (damage_range's xorshift)."""
    return damage_range(data, seed, nbytes, len(data) // 3, len(data) - 2)


def pillow_verdict(data: bytes, path=False):
    """("ok", HASH of the 224x224 bilinear pixels) when Pillow decodes data, else ("refused", "-"). path: the data
    is opened from a file, as the tool opens it (a TIFF's single uncompressed tile is then memory-mapped)."""
    import io
    import tempfile
    import warnings
    warnings.simplefilter("ignore")
    try:
        if path:
            with tempfile.NamedTemporaryFile(suffix=".tif") as f:
                f.write(data)
                f.flush()
                im = Image.open(f.name)
                im.load()
                return "ok", fnv1a64(im.convert("RGB").resize((224, 224), Image.BILINEAR).tobytes())
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


def tiff_dir(data: bytes):
    """IFD0's offset and the end of its entries (the count, 12 bytes an entry)."""
    be = data[:2] == b"MM"
    ifd = int.from_bytes(data[4:8], "big" if be else "little")
    n = int.from_bytes(data[ifd:ifd + 2], "big" if be else "little")
    return ifd, ifd + 2 + 12 * n


def damage_range(data: bytes, seed: int, nbytes: int, lo: int, hi: int) -> bytes:
    """Seeded damage within [lo, hi): nbytes times, byte lo + x % (hi - lo) set to (x >> 32) & 0xff (the xorshift
    tests/test_preprocess_hostile.c repeats)."""
    b = bytearray(data)
    x = seed | 1
    for _ in range(nbytes):
        x ^= (x << 13) & M
        x ^= x >> 7
        x ^= (x << 17) & M
        b[lo + x % (hi - lo)] = (x >> 32) & 0xFF
    return bytes(b)


def tiff_lines(counts):
    lines = []
    for src in TIFF_SOURCES:
        data = open(os.path.join(IMAGES, src), "rb").read()
        ifd, end = tiff_dir(data)
        for seed in range(1, SEEDS + 1):
            nbytes = 1 + seed % 4
            s = seed * 0x9E3779B97F4A7C15 & M
            verdict, h = pillow_verdict(damage(data, s, nbytes), path=True)
            counts[verdict] += 1
            lines.append(f"corrupt {src} {s} {nbytes} {verdict} {h}")
        for seed in range(1, SEEDS + 1):
            nbytes = 1 + seed % 2
            s = seed * 0xD1B54A32D192ED03 & M
            verdict, h = pillow_verdict(damage_range(data, s, nbytes, ifd + 2, end), path=True)
            counts[verdict] += 1
            lines.append(f"dirdamage {src} {s} {nbytes} {verdict} {h}")
        cuts = {4, 8, 9, ifd, ifd + 1, ifd + 2} | {len(data) * k // 24 for k in range(1, 24)}
        cuts |= {ifd + (len(data) - ifd) * k // 16 for k in range(1, 16)}
        cuts |= {len(data) - k for k in range(1, 9)}
        for n in sorted(c for c in cuts if 0 < c < len(data)):
            verdict, h = pillow_verdict(data[:n], path=True)
            counts[verdict] += 1
            lines.append(f"cut {src} {n} {verdict} {h}")
    return lines


def webp_lines(counts):
    lines = []
    for src in WEBP_SOURCES:
        data = open(os.path.join(IMAGES, src), "rb").read()
        for seed in range(1, WEBP_SEEDS + 1):
            nbytes = 1 + seed % 4
            s = seed * 0x9E3779B97F4A7C15 & M
            verdict, h = pillow_verdict(damage(data, s, nbytes))
            counts[verdict] += 1
            lines.append(f"corrupt {src} {s} {nbytes} {verdict} {h}")
        for seed in range(1, WEBP_SEEDS + 1):
            nbytes = 1 + seed % 2
            s = seed * 0xD1B54A32D192ED03 & M
            verdict, h = pillow_verdict(damage_range(data, s, nbytes, 12, min(len(data), 64)))
            counts[verdict] += 1
            lines.append(f"hdrdamage {src} {s} {nbytes} {verdict} {h}")
        for n in sorted({8, 12, 16, 20, 29, 30, 31, 40, len(data) // 2, len(data) - 2, len(data) - 1}):
            verdict, h = pillow_verdict(data[:n])
            counts[verdict] += 1
            lines.append(f"cut {src} {n} {verdict} {h}")
    return lines


def main():
    lines = [f"# made by scripts/make_corrupt_goldens.py with Pillow {PIL.__version__}, libjpeg-turbo "
             f"{features.version('libjpeg_turbo')}: corrupt SRC SEED NBYTES ok|refused HASH; "
             f"cut SRC LEN ok|refused HASH; dirdamage (TIFF) and hdrdamage (WebP) SRC SEED NBYTES ok|refused HASH"]
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
    lines += tiff_lines(counts)
    lines += webp_lines(counts)
    out = os.path.join(IMAGES, "goldens_corrupt.txt")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines) - 1} lines to {out}: {counts['ok']} decoded, {counts['refused']} refused", file=sys.stderr)


if __name__ == "__main__":
    main()
