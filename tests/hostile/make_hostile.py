#!/usr/bin/env python3
"""tests/hostile/make_hostile.py — crafted bad image files and what preprocess/ must say about each.

Writes tests/hostile/*.bin and tests/hostile/expect.txt ("FILE<TAB>SUBSTRING": the call must return -1 with
SUBSTRING in the message; SUBSTRING "OK" means the file is odd but valid and must decode). Built from the
committed test images in tests/images with the standard library only (no Pillow), so anyone can rerun it:

    python3 tests/hostile/make_hostile.py
"""
import os
import random
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
IMAGES = os.path.join(os.path.dirname(HERE), "images")
rnd = random.Random(20261121)
# (file, expected error): fuzzer findings, without libFuzzer's leading option byte
# TIFFs scripts/tiff_differential.py wrote (seed 2 unless named), committed as they were found, each refused by Pillow 13 through
# libtiff while Pillow's own reading of the directory accepts it: SamplesPerPixel of an unknown type (libtiff
# fails, it does not ignore it); BitsPerSample whose 3604481 values run past the end (Pillow 13 skips the entry;
# libtiff: IO error); planar 2 with 5 strip offsets and 4 byte counts (libtiff's deferred loading: inconsistent
# counts, then a byte count of 0)
TIFF_DIFFERENTIAL_FOUND = [
    ("tiff_diff_spp_type71.tif", "tag 277 of type 71"),
    ("tiff_diff_bps_past_end.tif", "tag 258's values run past the end"),
    ("tiff_diff_planar_5_offsets_4_counts.tif", "5 offsets and 4 byte counts"),
    # and one Pillow decodes: one strip, 2 offsets (out of line: libtiff reads the first from there, not from the
    # entry) and 1 byte count
    ("tiff_diff_2_offsets_1_count.tif", "OK"),
    # (seed 4, --pillow12) ImageLength written twice with the same value, LZW: Pillow 12 keeps the last entry,
    # libtiff the first, both decode it (test_preprocess_hostile also checks it with pillow_major 12)
    ("tiff_diff_repeated_length.tif", "OK"),
    # (seed 4) planar 2, 5 strip offsets and no StripByteCounts: Pillow 13's libtiff finds the counts inconsistent
    # (Pillow 12's estimates them and decodes: checked with pillow_major 12); SamplesPerPixel 2 after an entry
    # whose offsets run past the end, where Pillow's directory stops (it reads 1 sample, libtiff 2: strip size)
    ("tiff_diff_planar_5_offsets_no_counts.tif", "5 offsets and 0 byte counts"),
    ("tiff_diff_spp_beyond_pillows_view.tif", "strip size does not match"),
    # (seed 4, --pillow12) 1-bit LZW tiles 17 pixels wide: Pillow 13 decodes them, Pillow 12 fails (its tile rows
    # are width * bits / 8 bytes); checked with pillow_major 12 too
    ("tiff_diff_1bit_tile_17_wide.tif", "OK"),
    # (seed 4, --pillow12) entries after one whose data runs past the end, where Pillow 12's directory stops:
    # libtiff still reads them (FillOrder 2 and Predictor 2 after a Photometric of 13762561 values, decoded by
    # both; 65 strip offsets for 3 strips, RowsPerStrip after them: Pillow 12 decodes, Pillow 13's libtiff finds
    # the lists inconsistent); both checked with pillow_major 12 too
    ("tiff_diff_fill2_pred2_after_long_photometric.tif", "OK"),
    ("tiff_diff_65_offsets_3_counts.tif", "65 offsets and 3 byte counts"),
    # (seed 4, --pillow12) planar RGBaX in LZW tiles (5 samples, extra samples 1 and 0): Pillow 13 refuses the tile
    # size, Pillow 12 decodes it (checked with pillow_major 12)
    ("tiff_diff_planar_rgbax_tiles.tif", "tile size does not match"),
    # (seed 4) a 1-bit palette file whose ColorMap entry comes first (and again last): libtiff ignores a ColorMap
    # read before BitsPerSample, then misses it
    ("tiff_diff_colormap_before_bps.tif", "ColorMap before BitsPerSample"),
    # (seed 7) planar PackBits RGBA whose PlanarConfiguration follows a StripByteCounts of 251 values running past
    # the end: Pillow's directory stops there (contiguous RGBA to it), libtiff reads planar strips and Pillow's
    # decoder takes its layout from libtiff
    ("tiff_diff_planar_after_pillows_view.tif", "OK"),
    # (seed 7, --pillow12) 2-bit LZW tiles of 19 x 1: rows not ending on a byte, but one row a tile, so Pillow 12's
    # tile size (all bits rounded up once) is libtiff's: both decode it (checked with pillow_major 12)
    ("tiff_diff_2bit_tile_19x1.tif", "OK"),
    # (seed 11) a Deflate strip whose stream has a length and a distance too far back right after the strip's
    # last byte: zlib leaves at the copy, with no room, without checking the distance; libtiff has its bytes
    ("tiff_diff_deflate_bad_distance_past_strip.tif", "OK"),
    # (seed 11) one PackBits tile and no TileByteCounts: libtiff estimates the count, as for a single strip
    ("tiff_diff_tile_without_bytecounts.tif", "OK"),
    # (seed 17, --pillow12) one uncompressed L strip of 13 rows in a 12 x 64781 image: Pillow 13 decodes the
    # strip; Pillow 12 maps the whole image, and the file is too short (ValueError); checked with pillow_major 12
    ("tiff_diff_mmap_too_short.tif", "OK"),
    # (seed 23, N = 5000) planar LZW RGB with 2 extra samples whose BitsPerSample are 8, 8, 8, 8, 9224: Pillow's
    # directory takes 8 bits, libtiff fails on values that differ per sample (Pillow: decoder error -2)
    ("tiff_diff_bps_differ_per_sample.tif", "BitsPerSample differs between samples"),
]
FUZZ_FOUND = [
    # 53x60833 RLE TGA cut short: stb padded it with zeros and the 60833-row resize timed out under the
    # fuzzer's instrumentation; then refused as truncated before decoding. Its first bad packet is a run past a
    # row's end, which Pillow refuses first (buffer overrun), and so does preprocess/decode_tga.c
    ("fuzz_tga_rle_tall_timeout.tga", "buffer overrun"),
    # a PNM header number of 120 digits: stb_image 2.27 overflows an int parsing it (UBSan); now refused by
    # our own header check before stb sees it
    ("fuzz_pnm_long_number_ubsan.ppm", "not a PPM file"),  # "P53 ...": Pillow cannot identify it either
    # a PNG whose only IDAT holds no bytes, then a broken chunk name: stb_image, given the rebuilt stream's empty
    # IDAT, offset a NULL pointer (UBSan); now refused before stb sees it. Pillow refuses it too (broken PNG file)
    ("fuzz_png_empty_idat_ubsan.png", "image data is empty"),
]
expect = []


def img(name):
    return open(os.path.join(IMAGES, name), "rb").read()


def put(name, data, why):
    open(os.path.join(HERE, name), "wb").write(data)
    expect.append(f"{name}\t{why}")


def png_chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)


def png(w, h, depth=8, ctype=2, idat=None, extra=b""):
    raw = idat if idat is not None else zlib.compress(b"".join(b"\0" + bytes(3 * w) for _ in range(h)))
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0)) +
            extra + png_chunk(b"IDAT", raw) + png_chunk(b"IEND", b""))


def jpeg_segments(d):
    """(offset, marker, length) of the segments before the first SOS."""
    out, p = [], 2
    while p + 4 <= len(d) and d[p] == 0xFF:
        m = d[p + 1]
        n = struct.unpack(">H", d[p + 2:p + 4])[0]
        out.append((p, m, n))
        if m == 0xDA:
            break
        p += 2 + n
    return out


def webp_chunk(tag, payload, size=None):
    n = len(payload) if size is None else size
    return tag + struct.pack("<I", n) + payload + (b"\0" if len(payload) % 2 else b"")


def webp(chunks, riff_size=None):
    body = b"WEBP" + b"".join(chunks)
    return b"RIFF" + struct.pack("<I", len(body) if riff_size is None else riff_size) + body


def webp_image_chunk(name):
    """The first chunk of a simple WebP from tests/images (its VP8 or VP8L chunk, written whole)."""
    d = img(name)
    n = struct.unpack_from("<I", d, 16)[0]
    return d[12:20 + n + (n & 1)]


def webp_vp8x(flags, w, h):
    return webp_chunk(b"VP8X", bytes([flags, 0, 0, 0]) + (w - 1).to_bytes(3, "little") + (h - 1).to_bytes(3, "little"))


def webp_anmf(x, y, w, h, inner):
    return webp_chunk(b"ANMF", (x // 2).to_bytes(3, "little") + (y // 2).to_bytes(3, "little") +
                      (w - 1).to_bytes(3, "little") + (h - 1).to_bytes(3, "little") + b"\x64\0\0\0" + inner)


def webp_hostile():
    """WebP (preprocess/decode_webp.c): sizes that pass the pixel cap in a few bytes, sizes that overflow, frames
    outside the canvas; each refused from the headers before any pixel buffer. And two that Pillow decodes."""
    ll1, lossy1 = webp_image_chunk("webp_lossless_1x1.webp"), webp_image_chunk("webp_lossy_1x1.webp")
    anim = webp_chunk(b"ANIM", b"\0" * 6)
    # a 16383 x 16383 canvas (268 M pixels) around a 1 x 1 frame in 84 bytes: Pillow's decompression-bomb check
    put("webp_canvas_16383_bomb.webp", webp([webp_vp8x(0x02, 16383, 16383), anim, webp_anmf(0, 0, 1, 1, ll1)]),
        "exceeds the cap of")
    # the same size in a simple file's VP8 and VP8L headers
    vp8 = bytearray(lossy1)
    vp8[14:18] = struct.pack("<HH", 16383, 16383)
    put("webp_vp8_16383_bomb.webp", webp([bytes(vp8)]), "exceeds the cap of")
    vp8l = bytearray(ll1)
    vp8l[9:13] = struct.pack("<I", 16383 | 16383 << 14 | (struct.unpack_from("<I", ll1, 9)[0] & ~0xFFFFFFF))
    put("webp_vp8l_16384_bomb.webp", webp([bytes(vp8l)]), "exceeds the cap of")
    # 12000 x 12000 (144 M pixels, under the cap) around a 1 x 1 lossless frame whose data is garbage: refused
    # when the frame is decoded, before the 432 MB canvas is allocated
    bad = ll1[:13] + b"\xff" * (len(ll1) - 13)
    put("webp_big_canvas_bad_frame.webp", webp([webp_vp8x(0x02, 12000, 12000), anim, webp_anmf(0, 0, 1, 1, bad)]),
        "WebP lossless")
    # chunk and RIFF sizes that overflow 32 bits once padded or added up
    put("webp_chunk_size_ffffffff.webp", webp([ll1[:4] + b"\xff\xff\xff\xff" + ll1[8:]]), "past the RIFF size")
    put("webp_riff_size_max.webp", webp([ll1], riff_size=0xFFFFFFF6), "cut short of its RIFF size")
    put("webp_riff_size_ffffffff.webp", webp([ll1], riff_size=0xFFFFFFFF), "RIFF size")
    put("webp_unknown_chunk_size_max.webp", webp([webp_vp8x(0, 1, 1), webp_chunk(b"JUNK", b"", size=0xFFFFFFF5), ll1]),
        "past the RIFF")
    put("webp_anmf_size_max.webp", webp([webp_vp8x(0x02, 1, 1), anim, webp_chunk(b"ANMF", b"", size=0xFFFFFFF6)]),
        "past the RIFF end")
    # a frame at x = 2 * (2^24 - 1), and a frame of 2^24 x 2^24, on a 100 x 100 canvas
    put("webp_anmf_offset_max.webp", webp([webp_vp8x(0x02, 100, 100), anim, webp_anmf(2 * 0xFFFFFF, 0, 1, 1, ll1)]),
        "outside the 100x100 canvas")
    put("webp_anmf_area_2_32.webp", webp([webp_vp8x(0x02, 100, 100), anim, webp_anmf(0, 0, 1 << 24, 1 << 24, ll1)]),
        "2^32 pixels or more")
    # a second frame whose header is broken refuses the file (the demuxer reads every frame's header); one whose
    # data is broken does not (only frame 1 is decoded)
    put("webp_second_frame_bad_header.webp", webp([webp_vp8x(0x02, 4, 4), anim, webp_anmf(0, 0, 1, 1, ll1),
                                                   webp_anmf(2, 2, 1, 1, b"VP8L" + ll1[4:8] + b"\x2e" + ll1[9:])]),
        "signature")
    put("webp_second_frame_bad_data.webp", webp([webp_vp8x(0x02, 4, 4), anim, webp_anmf(0, 0, 1, 1, ll1),
                                                 webp_anmf(2, 2, 1, 1, bad)]), "OK")
    # 3000 x 2000 of black around a 1 x 1 lossy frame at (2998, 1998): decoded, as Pillow decodes it
    put("webp_big_canvas_tiny_frame.webp", webp([webp_vp8x(0x02, 3000, 2000), anim, webp_anmf(2998, 1998, 1, 1, lossy1)]),
        "OK")


def main():
    jpg = img("jpeg_420.jpg")
    pngd = img("png_rgb.png")
    gif = img("gif_p.gif")
    bmp = img("bmp_24.bmp")

    put("empty.bin", b"", "empty file")
    put("garbage.bin", bytes(rnd.randrange(256) for _ in range(1000)).replace(b"\xff\xd8", b"\0\0"), "unknown image format")
    put("one_byte.bin", b"\xff", "unknown image format")
    # JPEG
    put("jpeg_header_only.jpg", jpg[:20], "JPEG")
    put("jpeg_truncated_half.jpg", jpg[: len(jpg) // 2], "truncated")
    put("jpeg_truncated_after_sos.jpg", jpg[: [s for s in jpeg_segments(jpg) if s[1] == 0xDA][0][0] + 20], "truncated")
    segs = jpeg_segments(jpg)
    sof = [s for s in segs if s[1] == 0xC0][0][0]
    d = bytearray(jpg)
    d[sof + 5:sof + 9] = struct.pack(">HH", 65500, 65500)  # height, width
    put("jpeg_huge_dims.jpg", bytes(d), "exceeds the cap")
    d = bytearray(jpg)
    d[sof + 5:sof + 7] = b"\0\0"
    put("jpeg_zero_height.jpg", bytes(d), "JPEG")
    dht = [s for s in segs if s[1] == 0xC4][0][0]
    d = bytearray(jpg)
    d[dht + 5:dht + 21] = b"\xff" * 16  # 16 code-length counts of 255: far more than 256 symbols
    put("jpeg_bad_huffman.jpg", bytes(d), "JPEG")
    d = bytearray(jpg)
    dqt = [s for s in segs if s[1] == 0xDB][0][0]
    d[dqt + 2:dqt + 4] = b"\xff\xf0"  # segment length past the end of the file
    put("jpeg_bad_segment_length.jpg", bytes(d), "JPEG")
    put("jpeg_no_scan.jpg", jpg[:sof] + b"\xff\xd9", "JPEG")
    # EXIF that lies about its offsets and counts: must be ignored, not trusted
    tiff = b"MM\0*" + struct.pack(">I", 0xFFFFFF00)
    app1 = b"Exif\0\0" + tiff
    put("jpeg_exif_bad_offset.jpg", jpg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpg[2:], "OK")
    tiff = b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", 0xFFFF) + struct.pack("<HHII", 0x0112, 3, 1, 6)
    app1 = b"Exif\0\0" + tiff
    put("jpeg_exif_huge_count.jpg", jpg[:2] + b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1 + jpg[2:], "OK")
    # PNG
    put("png_truncated_half.png", pngd[: len(pngd) // 2], "truncated")
    put("png_no_iend.png", pngd[:-12], "OK")  # Pillow needs no IEND
    d = bytearray(pngd)
    idat = pngd.index(b"IDAT")
    d[idat + 10] ^= 0x55
    put("png_bad_crc.png", bytes(d), "PNG")  # IDAT CRCs are unchecked: the damage is in the zlib stream
    put("png_huge_dims.png", png(100000, 100000, idat=zlib.compress(b"\0" * 100)), "exceeds the cap")
    put("png_zero_width.png", png(0, 10, idat=zlib.compress(b"\0" * 10)), "empty")
    put("png_no_idat.png", b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0)) +
        png_chunk(b"IEND", b""), "no IDAT")
    put("png_bad_zlib.png", png(8, 8, idat=b"\x78\x9c" + bytes(rnd.randrange(256) for _ in range(64))), "PNG")
    put("png_short_idat.png", png(64, 64, idat=zlib.compress(b"\0" * 100)), "PNG")
    put("png_first_not_ihdr.png", b"\x89PNG\r\n\x1a\n" + png_chunk(b"tEXt", b"a\0b") + pngd[8:], "OK")  # Pillow reads chunks before IHDR
    put("png_bad_depth.png", png(4, 4, depth=7), "PNG")
    put("png_chunk_len_overflow.png", pngd[:33] + struct.pack(">I", 0xFFFFFFF0) + b"IDAT" + pngd[41:], "OK")  # data to the end
    # GIF
    put("gif_truncated_lzw.gif", gif[: len(gif) - 40], "truncated")
    d = bytearray(gif)
    lzw = 13 + 3 * (2 << (gif[10] & 7))
    while d[lzw] == 0x21:  # skip extensions to the image descriptor
        p = lzw + 2
        while d[p]:
            p += 1 + d[p]
        lzw = p + 1
    data0 = lzw + 10 + 1  # descriptor (10 bytes incl. 0x2c), code size byte, then the first sub-block length
    for i in range(data0 + 1, min(data0 + 60, len(d) - 2)):
        d[i] = 0xFF  # all-ones codes: larger than any table entry yet defined
    put("gif_bad_lzw.gif", bytes(d), "LZW")
    put("gif_huge_dims.gif", b"GIF89a" + struct.pack("<HHBBB", 65535, 65535, 0, 0, 0) + b"\x3b", "exceeds the cap")
    put("gif_no_frame.gif", b"GIF89a" + struct.pack("<HHBBB", 10, 10, 0, 0, 0) + b"\x3b", "no image frame")
    # a first frame past the screen: Pillow grows the image to 15x15 and so do we (tests/images/gif_screen_*.gif);
    # this file is still refused, as by Pillow, because its LZW data ends after one pixel of the 100. Past the
    # pixel cap, grown, a file is refused; so is a frame with no pixels
    put("gif_frame_outside.gif", b"GIF89a" + struct.pack("<HHBBB", 10, 10, 0, 0, 0) + b"\x2c" +
        struct.pack("<HHHHB", 5, 5, 10, 10, 0) + b"\x02\x02\x4c\x01\x00\x3b", "before its last pixel")
    put("gif_frame_grows_past_cap.gif", b"GIF89a" + struct.pack("<HHBBB", 100, 100, 0, 0, 0) + b"\x2c" +
        struct.pack("<HHHHB", 0, 0, 20000, 9000, 0) + b"\x02\x02\x4c\x01\x00\x3b", "exceeds the cap")
    put("gif_frame_empty.gif", b"GIF89a" + struct.pack("<HHBBB", 10, 10, 0, 0, 0) + b"\x2c" +
        struct.pack("<HHHHB", 2, 2, 0, 5, 0) + b"\x02\x02\x4c\x01\x00\x3b", "is empty")
    put("gif_screen_and_frame_0x0.gif", b"GIF89a" + struct.pack("<HHBBB", 0, 0, 0, 0, 0) + b"\x2c" +
        struct.pack("<HHHHB", 0, 0, 0, 0, 0) + b"\x02\x02\x4c\x01\x00\x3b", "empty")
    put("gif_bad_code_size.gif", b"GIF89a" + struct.pack("<HHBBB", 2, 2, 0, 0, 0) + b"\x2c" +
        struct.pack("<HHHHB", 0, 0, 2, 2, 0) + b"\x0f\x02\x4c\x01\x00\x3b", "code size")
    # TGA (preprocess/decode_tga.c): what Pillow 13 refuses (scripts/make_goldens.py checks Pillow's verdict)
    def tga(itype, depth, w=4, h=3, desc=0, cm=None, cm_first=0, cm_bits=24, data=None):
        cm_len = len(cm) // ((cm_bits + 7) // 8) if cm is not None else 0
        d = struct.pack("<BBBHHBHHHHBB", 0, cm is not None, itype, cm_first, cm_len, cm_bits if cm is not None else 0,
                        0, 0, w, h, depth, desc) + (cm or b"")
        return d + (data if data is not None else bytes(range(256)) * (((w * depth + 7) // 8 * h) // 256 + 1))
    put("tga_15bit.tga", tga(2, 15), "15 bits per pixel")
    put("tga_cmap_15bit_entries.tga", tga(1, 8, cm=bytes(8), cm_bits=15), "colour map of 15-bit entries")
    put("tga_cmap_257_entries.tga", tga(1, 8, cm=bytes(30), cm_first=247), "invalid palette size")
    put("tga_8bit_truecolour.tga", tga(2, 8), "no decoder")
    put("tga_cmapped_without_map.tga", tga(9, 8, data=b"\x8b\x07" * 3), "without a colour map")
    put("tga_rle_1bit.tga", tga(11, 1, data=b"\x80\xff" * 50), "1-bit pixels")
    put("tga_truecolour_with_map.tga", tga(2, 24, cm=bytes(12)), "colour map on a true-colour image")
    put("tga_1bit_with_map.tga", tga(3, 1, cm=bytes(12)), "colour map on a 1-bit image")
    put("tga_raw_truncated.tga", tga(2, 24)[:18 + 30], "truncated")
    put("tga_cmap_truncated.tga", tga(1, 8, cm=bytes(48))[:40], "truncated")
    put("tga_rle_truncated.tga", tga(10, 24, data=b"\x83\x01\x02\x03" * 2 + b"\x02\x01"), "truncated")
    # a literal packet must be whole in the file, even when the image needs only its first 4 of 6 pixels
    put("tga_rle_literal_cut.tga", tga(10, 24, data=b"\x83\x01\x02\x03" * 2 + b"\x05" + bytes(12)), "truncated")
    put("tga_rle_run_crosses_row.tga", tga(10, 24, data=b"\x84\x01\x02\x03" * 3), "buffer overrun")
    put("tga_rgba_under_26_bytes.tga", tga(2, 32, w=1, h=1, data=b"\x01\x02\x03\x04"), "26 bytes")
    put("tga_huge_dims.tga", tga(2, 24, w=65535, h=65535, data=bytes(100)), "exceeds the cap")
    # 100 million pixels (under the cap) and a stream of a few bytes: refused from the stream, before allocating
    put("tga_rle_big_truncated.tga", tga(10, 24, w=20000, h=5000, data=b"\xff\x01\x02\x03" * 4), "truncated")
    put("tga_zero_width.tga", tga(2, 24, w=0), "unknown image format")
    # BMP, PNM, PSD, TGA-less formats
    put("bmp_truncated.bmp", bmp[: len(bmp) // 3], "BMP")
    d = bytearray(bmp)
    d[18:26] = struct.pack("<ii", 100000, 100000)
    put("bmp_huge_dims.bmp", bytes(d), "exceeds the cap")
    d = bytearray(img("bmp_16_565.bmp"))
    d[54:66] = struct.pack("<III", 0xF000, 0x0F00, 0x00F0)  # 4-4-4 bitfields: Pillow refuses them too
    put("bmp16_bad_masks.bmp", bytes(d), "unsupported 16-bit bitfields")
    put("bmp16_truncated.bmp", img("bmp_16_555.bmp")[:100], "truncated")
    # RLE8 / RLE4 (stb_image refuses them; preprocess/decode_bmp_rle.c decodes them as Pillow does): the plain
    # files decode, and what Pillow refuses is refused with the reason
    for name, src, comp in (("bmp_rle8.bmp", "bmp_8.bmp", 1), ("bmp_rle4.bmp", "bmp_4.bmp", 2)):
        d = bytearray(img(src))
        off, = struct.unpack_from("<I", d, 10)
        w, h = struct.unpack_from("<ii", d, 18)
        runs = b"".join(bytes([w, y % 7, 0, 0]) for y in range(h)) + b"\0\1"  # one run a row, end of line, end
        d = d[:off] + runs
        struct.pack_into("<I", d, 2, len(d))
        struct.pack_into("<I", d, 30, comp)
        struct.pack_into("<I", d, 34, len(runs))
        put(name, bytes(d), "OK")
    rle8, rle4 = img("bmp_rle8.bmp"), img("bmp_rle4.bmp")  # written by scripts/make_goldens.py

    def rle8_with(data, w=8, h=4, bits=8, colors=0, hsize=40, pal=bytes(1024)):
        """An 8-bit RLE8 BMP around the stream data (the palette right after the header, then data)."""
        off = 14 + hsize + len(pal)
        d = struct.pack("<2sIHHI", b"BM", off + len(data), 0, 0, off)
        return d + struct.pack("<IiiHHIIiiII", hsize, w, h, 1, bits, 1, len(data), 0, 0, colors, 0) + \
            bytes(hsize - 40) + pal + data
    off8, = struct.unpack_from("<I", rle8, 10)
    off4, = struct.unpack_from("<I", rle4, 10)
    put("bmp_rle8_truncated.bmp", rle8[:off8 + (len(rle8) - off8) // 2], "truncated")
    put("bmp_rle4_truncated.bmp", rle4[:off4 + (len(rle4) - off4) // 3], "truncated")
    # end of bitmap after one row of four: Pillow refuses a bitmap that leaves pixels unwritten
    put("bmp_rle8_early_end.bmp", rle8_with(bytes([8, 3, 0, 0, 0, 1])), "end-of-bitmap after 8 of 8x4 pixels")
    # runs with no end of line: once the first row is full the rest are dropped, so the data runs out
    put("bmp_rle8_no_end_of_line.bmp", rle8_with(bytes([8, 3]) * 4), "runs past a row's end were dropped")
    put("bmp_rle8_delta_cut.bmp", rle8_with(bytes([8, 3, 0, 0, 0, 2, 5])), "truncated")
    put("bmp_rle8_absolute_cut.bmp", rle8_with(bytes([8, 3, 0, 0, 0, 7, 1, 2, 3])), "truncated")
    put("bmp_rle8_palette_257.bmp", rle8_with(bytes([8, 3, 0, 0]) * 4, colors=257, pal=bytes(range(256)) * 4 + b"1234"),
        "invalid palette size")
    put("bmp_rle8_colors_70000.bmp", rle8_with(bytes([8, 3, 0, 0]) * 4, colors=70000), "at most 65536")
    put("bmp_rle8_24bit.bmp", rle8_with(bytes([8, 3, 0, 0]) * 4, bits=24, pal=b""), "RLE8 data in a 24-bit bitmap")
    put("bmp_rle8_header_100.bmp", rle8_with(bytes([8, 3, 0, 0]) * 4, hsize=100), "unsupported header size 100")
    put("bmp_rle8_header_cut.bmp", rle8_with(b"", hsize=124, pal=b"")[:60], "truncated header")
    put("bmp_rle8_huge_dims.bmp", rle8_with(bytes([0, 2, 255, 255]), w=100000, h=100000), "exceeds the cap")
    # height -(2^24 + 1): Pillow reads a height as negative only when its top byte is 0xFF, so this is 2^32 - 2^24
    # - 1 rows (a bomb), not 2^24 + 1 top-down ones
    put("bmp_rle8_height_top_byte.bmp", rle8_with(bytes([0, 2, 255, 255]), w=1, h=-(2**24 + 1)), "exceeds the cap")
    # 100 million pixels (under the cap) and a stream of a few bytes: refused at once, not after filling them
    put("bmp_rle8_big_truncated.bmp", rle8_with(bytes([255, 1, 255, 2]), w=20000, h=5000), "truncated")
    d = bytearray(img("bmp_24_topdown.bmp"))
    put("bmp_topdown_truncated.bmp", bytes(d[: len(d) // 2]), "truncated")
    struct.pack_into("<i", d, 22, -2**31)  # a height whose absolute value an int cannot hold
    put("bmp_height_int_min.bmp", bytes(d), "bad height")
    put("pgm_maxval_zero.pgm", b"P5\n2 2\n0\n" + b"\0" * 4, "maxval 0 is out of range")
    put("pgm_maxval_big.pgm", b"P5\n2 2\n65536\n" + b"\0" * 8, "maxval 65536 is out of range")
    put("ppm16_truncated.ppm", b"P6\n4 4\n1000\n" + b"\x01" * 48, "truncated")  # 16-bit samples: 96 bytes due
    put("ppm_huge_dims.ppm", b"P6\n100000 100000\n255\n" + b"\0" * 30, "exceeds the cap")
    put("ppm_truncated.ppm", b"P6\n64 64\n255\n" + b"\x80" * 100, "PNM")
    # the header as Pillow's PpmImagePlugin reads it (session 35)
    put("pgm_token_long.pgm", b"P5 3 3 99999999999\n" + b"\0" * 9, "more than 10 bytes")
    put("pgm_size_zero.pgm", b"P5 0 2 255\n" + b"\0" * 4, "not positive")
    put("pgm_token_letter.pgm", b"P5 2 2 25x\n" + b"\0" * 4, "not a number")
    put("pgm_comment_inside_token.pgm", b"P5 2 2 25#c\n5\n" + b"\0\x40\x80\xff", "OK")  # maxval 255
    put("psd_truncated.psd", img("psd_rgb.psd")[:40], "PSD")
    # PSD (preprocess/decode_psd.c, Pillow's PsdImagePlugin rules); Pillow refuses each of these too, but Lab
    def psd(w, h, mode=3, ch=3, bits=8, comp=0, data=b"", version=1, cm=b"", res=b"", lm=b"", res_size=None):
        return (b"8BPS" + struct.pack(">H6xHIIHH", version, ch, h, w, bits, mode) + struct.pack(">I", len(cm)) + cm +
                struct.pack(">I", len(res) if res_size is None else res_size) + res + struct.pack(">I", len(lm)) + lm +
                struct.pack(">H", comp) + data)
    put("psd_header_cut.psd", img("psd_rgb.psd")[:20], "PSD: truncated header")
    put("psd_huge_dims.psd", psd(100000, 100000, data=bytes(64)), "exceeds the cap")
    put("psd_zero_width.psd", psd(0, 10, data=bytes(64)), "empty")
    put("psd_psb_version2.psd", psd(4, 4, version=2, data=bytes(48)), "version 2 is not supported")
    put("psd_rgb16.psd", psd(4, 4, bits=16, data=bytes(96)), "16 bits per channel is not supported")
    put("psd_lab.psd", psd(4, 4, mode=9, data=bytes(48)), "Lab colour is not supported")  # Pillow: LittleCMS
    put("psd_cmyk_3_channels.psd", psd(4, 4, mode=4, ch=3, data=bytes(48)), "not enough channels")
    put("psd_zip.psd", psd(4, 4, comp=2, data=bytes(48)), "compression 2 (ZIP) is not supported")
    rgba = img("psd_rgba.psd")
    put("psd_alpha_truncated.psd", rgba[:len(rgba) - 10], "channel 3 needs")  # alpha, dropped by convert, cut
    put("psd_resources_cut.psd", psd(4, 4, res=b"8BIM\x03\xed\x00", res_size=20), "image resources are truncated")
    d = psd(4, 4, lm=bytes(8), data=bytes(48))
    put("psd_layers_past_end.psd", d[:34] + struct.pack(">I", 10**6) + d[38:], "before the image data")
    rle = img("psd_rgb_rle.psd")
    put("psd_rle_truncated.psd", rle[:len(rle) - 100], "PackBits data of channel 2 ends after")
    put("psd_rle_table_cut.psd", rle[:26 + 12 + 2 + 50], "PackBits row byte counts")
    # 100 million pixels (under the cap), a table of zero counts and 4 bytes of data: refused before allocating
    put("psd_rle_big_truncated.psd", psd(20000, 5000, mode=1, ch=1, comp=1, data=bytes(10000) + b"\x81\x07" * 2),
        "ends after 0 of 5000 rows")
    # odd but valid: wrong row counts (Pillow decodes each channel as one stream from its start), runs past a
    # row's end (cut), a no-op byte, and data after the last row
    put("psd_rle_zero_counts.psd", psd(4, 2, mode=1, ch=1, comp=1, data=bytes(4) + b"\x80\xfa\x09\xfd\x07"), "OK")
    put("psd_trailing_data.psd", img("psd_gray.psd") + bytes(100), "OK")
    # decoded by Pillow 12 and 13 (scripts/psd_differential.py): the layer records are read only when the layers
    # are asked for, never by open or convert (1000 layers in a 10-byte block would be refused there); an image
    # resource running 8 bytes past the section's length moves where the layer section is read from
    put("psd_layer_count_over_block.psd", psd(4, 2, mode=1, ch=1, lm=struct.pack(">Ih", 10, 1000) + bytes(8),
                                              data=bytes(range(8))), "OK")
    put("psd_resource_past_section.psd", psd(4, 2, mode=1, ch=1, res=b"8BIM\x03\xed\0\0\0\0\0\0", res_size=4,
                                             data=bytes(range(8))), "OK")
    put("webp_header.webp", b"RIFF\x24\0\0\0WEBPVP8 " + b"\0" * 24, "VP8 start code missing")  # a WebP of zeros
    put("tiff_header.tif", b"II*\0\x08\0\0\0" + b"\0" * 16, "TIFF: no ImageWidth or ImageLength")
    # a TIFF declaring 13000 x 13000 LZW pixels (under the pixel cap) in one strip of 20 bytes: refused before anything is allocated
    put("tiff_huge_tiny_lzw.tif", b"II*\0\x08\0\0\0" + struct.pack("<H", 7) + b"".join(struct.pack("<HHLL", *e) for e in [
        (256, 4, 1, 13000), (257, 4, 1, 13000), (258, 3, 1, 8), (259, 3, 1, 5), (262, 3, 1, 1), (273, 4, 1, 98),
        (279, 4, 1, 20)]) + b"\0" * 4 + b"\x80" + b"\0" * 19, "compressed bytes for")
    put("tiff_huge_tiny_raw.tif", b"II*\0\x08\0\0\0" + struct.pack("<H", 6) + b"".join(struct.pack("<HHLL", *e) for e in [
        (256, 4, 1, 13000), (257, 4, 1, 13000), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1), (273, 4, 1, 86)]) +
        b"\0" * 4 + b"\0" * 20, "the file is truncated")
    # a 4 x 4 uncompressed TIFF listing 70,000 one-row strips (Pillow makes a tile of each: 40 M of them took it 11 GB
    # and 5 minutes): far more than the image needs is refused
    put("tiff_strips_bomb.tif", b"II*\0\x08\0\0\0" + struct.pack("<H", 7) + b"".join(struct.pack("<HHLL", *e) for e in [
        (256, 4, 1, 4), (257, 4, 1, 4), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1), (273, 3, 70000, 98),
        (278, 4, 1, 1)]) + b"\0" * 4 + struct.pack("<H", 60000) * 70000 + b"\x80" * 64,
        "strips or tiles listed for an image that needs 4")
    # a 16 x 16 Deflate TIFF in one tile of 16384 x 16384: its buffer would be 805 MB (a 783 KB file of zeros fills
    # it, 1.7 GB of memory and 8 s for 256 pixels); a tile's area is held to the pixel cap like an image's
    put("tiff_tile_over_cap.tif", b"II*\0\x08\0\0\0" + struct.pack("<H", 9) + b"".join(struct.pack("<HHLL", *e) for e in [
        (256, 4, 1, 16), (257, 4, 1, 16), (258, 3, 1, 8), (259, 3, 1, 8), (262, 3, 1, 1), (322, 4, 1, 16384),
        (323, 4, 1, 16384), (324, 4, 1, 122), (325, 4, 1, 16)]) + b"\0" * 4 + b"\x78\x9c" + b"\0" * 14,
        "exceed the cap of")
    # JPEG-compressed: 9000 x 9000 in one strip of 20 bytes that are not a JPEG, and a 1 x 1 image of 65520 x
    # 65520 tiles (Pillow: more than INT_MAX bytes a tile): both refused before anything is allocated
    put("tiff_jpeg_huge_tiny.tif", b"II*\0\x08\0\0\0" + struct.pack("<H", 7) + b"".join(struct.pack("<HHLL", *e) for e in [
        (256, 4, 1, 9000), (257, 4, 1, 9000), (258, 3, 1, 8), (259, 3, 1, 7), (262, 3, 1, 1), (273, 4, 1, 98),
        (279, 4, 1, 20)]) + b"\0" * 4 + b"\0" * 20, "does not start with SOI")
    put("tiff_jpeg_huge_tiles.tif", b"II*\0\x08\0\0\0" + struct.pack("<H", 10) + b"".join(struct.pack("<HHLL", *e) for e in [
        (256, 4, 1, 1), (257, 4, 1, 1), (258, 3, 1, 8), (259, 3, 1, 7), (262, 3, 1, 1), (277, 3, 1, 1),
        (322, 4, 1, 65520), (323, 4, 1, 65520), (324, 4, 1, 134), (325, 4, 1, 4)]) + b"\0" * 4 + b"\xff\xd8\xff\xd9",
        "a tile of")
    # a 1 x 1 image in one JPEG tile of 16384 x 16384 grey (268 MB, under Pillow's INT_MAX): over the pixel cap
    put("tiff_jpeg_tile_over_cap.tif", b"II*\0\x08\0\0\0" + struct.pack("<H", 10) + b"".join(struct.pack("<HHLL", *e) for e in [
        (256, 4, 1, 1), (257, 4, 1, 1), (258, 3, 1, 8), (259, 3, 1, 7), (262, 3, 1, 1), (277, 3, 1, 1),
        (322, 4, 1, 16384), (323, 4, 1, 16384), (324, 4, 1, 134), (325, 4, 1, 4)]) + b"\0" * 4 + b"\xff\xd8\xff\xd9",
        "exceed the cap of")
    # 12000 x 9000 grey in one JPEG strip of 20 bytes: libtiff 4.7.2 (Pillow 13) calls the byte count likely invalid
    put("tiff_jpeg_strip_ratio.tif", b"II*\0\x08\0\0\0" + struct.pack("<H", 7) + b"".join(struct.pack("<HHLL", *e) for e in [
        (256, 4, 1, 12000), (257, 4, 1, 9000), (258, 3, 1, 8), (259, 3, 1, 7), (262, 3, 1, 1), (273, 4, 1, 98),
        (279, 4, 1, 20)]) + b"\0" * 4 + b"\xff\xd8" + b"\0" * 18, "likely invalid byte count")
    put("ascii_pbm.pbm", b"P1\n2 2\n0 1 1 0\n", "unsupported format")
    put("svg.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>", "unsupported format")
    webp_hostile()
    # inputs the fuzzer found (tests/fuzz/README.md), committed as they were found, not regenerated here
    for name, why in FUZZ_FOUND:
        expect.append(f"{name}\t{why}")
    for name, why in TIFF_DIFFERENTIAL_FOUND:
        expect.append(f"{name}\t{why}")
    open(os.path.join(HERE, "expect.txt"), "w").write(
        "# FILE<TAB>substring of the error (OK: must decode); made by tests/hostile/make_hostile.py\n" +
        "\n".join(expect) + "\n")
    print(f"wrote {len(expect)} hostile files")


if __name__ == "__main__":
    main()
