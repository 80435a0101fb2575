"""scripts/orient_cases.py — the orientation test files of scripts/make_goldens.py: where Pillow finds an EXIF or
XMP orientation in a PNG or a JPEG, which entry counts, and what it makes of malformed metadata.

cases() returns {file name: bytes}, each a tiny image (7x5 noise, its own seed) with metadata written by hand:
ImageMagick's "Raw profile type exif" and XMP in tEXt / zTXt / iTXt (compressed or not), chunks after IDAT,
several sources at once, EXIF Orientation entries of every kind (invalid values, other TIFF types, counts,
repeats), and damage: bad hex, a cut or corrupt zlib stream, text that inflates past 1 MiB, an EXIF block that
is not TIFF. Every name holds "exif", so make_goldens.py records Pillow's answer with and without
exif_transpose; where Pillow raises, it writes a "refused" line instead (tests/test_orientation.c). Files
Pillow refuses live in tests/images/refused/, away from the folder the CLI tests take as all-good input.
"""
import io
import struct
import zlib

import numpy as np
from PIL import Image

XMP = '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description tiff:Orientation="%d"/></rdf:RDF></x:xmpmeta>'

# TIFF types: (code, bytes per value, struct format)
SHORT, LONG, RATIONAL, SRATIONAL, BYTE, ASCII, SBYTE, UNDEFINED, SSHORT, SLONG, FLOAT, DOUBLE = (
    (3, 2, "H"), (4, 4, "I"), (5, 8, "II"), (10, 8, "ii"), (1, 1, "B"), (2, 1, "s"), (6, 1, "b"), (7, 1, "B"),
    (8, 2, "h"), (9, 4, "i"), (11, 4, "f"), (12, 8, "d"))


def tiff(entries, be=True):
    """A TIFF block (no "Exif" prefix) whose IFD0 holds entries: (tag, type, count, values) with values a tuple
    packed by the type's format, or raw bytes; data longer than 4 bytes is put after the IFD."""
    e = ">" if be else "<"
    ifd_len = 2 + 12 * len(entries) + 4
    tail, body = b"", b""
    for tag, (code, unit, fmt), count, values in entries:
        data = values if isinstance(values, bytes) else struct.pack(e + fmt * (len(values) // len(fmt) or 1), *values)
        if len(data) > 4:
            field = struct.pack(e + "I", 8 + ifd_len + len(tail))
            tail += data
        else:
            field = data.ljust(4, b"\0")
        body += struct.pack(e + "HHI", tag, code, count) + field
    head = (b"MM\0*" if be else b"II*\0") + struct.pack(e + "I", 8)
    return head + struct.pack(e + "H", len(entries)) + body + struct.pack(e + "I", 0) + tail


def orient(value, typ=SHORT, count=1):
    return tiff([(0x0112, typ, count, value)])


def chunk(cid, data):
    return struct.pack(">I", len(data)) + cid + data + struct.pack(">I", zlib.crc32(cid + data))


def text(key, value):
    return chunk(b"tEXt", key + b"\0" + value)


def ztxt(key, value, z=None):
    return chunk(b"zTXt", key + b"\0\0" + (zlib.compress(value) if z is None else z))


def itxt(key, value, compressed=False, z=None, flags=None):
    if flags is None:
        flags = b"\1\0" if compressed else b"\0\0"
    body = (zlib.compress(value) if compressed and z is None else z if z is not None else value)
    return chunk(b"iTXt", key + b"\0" + flags + b"\0\0" + body)


def raw_profile(tiff_bytes, declared=None, sep="\n"):
    """ImageMagick's text: "\\nexif\\n<length>\\n" then the hex in lines of 72 digits."""
    h = tiff_bytes.hex()
    lines = "\n".join(h[i:i + 72] for i in range(0, len(h), 72))
    return f"\nexif\n{declared if declared is not None else len(tiff_bytes):8}\n{lines.replace(chr(10), sep)}\n".encode()


def png(seed, before=(), after=()):
    """A 7x5 RGB noise PNG (Pillow's encoding) with extra chunks before IDAT and after it (before IEND)."""
    im = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (5, 7, 3), dtype=np.uint8))
    b = io.BytesIO()
    im.save(b, "PNG")
    d = b.getvalue()
    i, j = d.index(b"IDAT") - 4, d.index(b"IEND") - 4
    return d[:i] + b"".join(before) + d[i:j] + b"".join(after) + d[j:]


def png_parts(seed):
    """png(seed) cut into (signature and chunks before IDAT, the IDAT chunk, IEND), for files damaged by hand."""
    d = png(seed)
    i, j = d.index(b"IDAT") - 4, d.index(b"IEND") - 4
    return d[:i], d[i:j], d[j:]


def bad_crc(c):
    return c[:-1] + bytes([c[-1] ^ 1])


def tail_cases(X, K_XMP):
    """How Pillow walks the chunks (preprocess/decode_png.c): CRCs and names checked before IDAT only, load_end
    stopping quietly at a cut header or a broken name, a missing IEND and bytes after IEND ignored, an animated
    APNG read to its next fcTL. Pillow 12 and 13 agree on every one."""
    c = {}
    fctl = lambda seq, w=7, h=5: chunk(b"fcTL", struct.pack(">IIIIIHHBB", seq, w, h, 0, 0, 1, 1, 0, 0))  # noqa: E731
    for k, (name, build) in enumerate([
        ("png_exif_tail_late_badcrc_xmp6", lambda p, i, e: p + i + bad_crc(itxt(K_XMP, X(6))) + e),
        ("png_exif_tail_idat_badcrc", lambda p, i, e: p + bad_crc(i) + e),
        ("png_exif_tail_after_iend", lambda p, i, e: p + i + e + itxt(K_XMP, X(6)) + b"junk"),
        ("png_exif_tail_no_iend_xmp6", lambda p, i, e: p + i + itxt(K_XMP, X(6))),
        ("png_exif_tail_cut_header_xmp6", lambda p, i, e: p + i + itxt(K_XMP, X(6)) + e[:6]),
        ("refused/png_exif_tail_cut_text", lambda p, i, e: p + i + itxt(K_XMP, X(6))[:-9]),
        ("png_exif_tail_critical_xmp6", lambda p, i, e: p + i + chunk(b"ABCD", b"x") + itxt(K_XMP, X(6)) + e),
        ("png_exif_tail_badname_junk", lambda p, i, e: p + i + chunk(b"a!bc", b"") + b"\xff" * 9 + itxt(K_XMP, X(6))),
        ("png_exif_tail_badcrc_badname", lambda p, i, e: p + i + bad_crc(chunk(b"a!bc", b"")) + itxt(K_XMP, X(6)) + e),
        ("png_exif_tail_pre_critical_xmp6", lambda p, i, e: p + chunk(b"ABCD", b"x") + itxt(K_XMP, X(6)) + i + e),
        ("refused/png_exif_tail_pre_badname", lambda p, i, e: p + chunk(b"a$cd", b"x") + i + e),
        ("refused/png_exif_tail_pre_badcrc", lambda p, i, e: p + bad_crc(chunk(b"abCd", b"x")) + i + e),
        ("refused/png_exif_tail_pre_len_past_end", lambda p, i, e: p + struct.pack(">I", 1 << 30) + b"tEXtab\0c" + i + e),
        ("png_exif_tail_idat_len_past_end", lambda p, i, e: p + struct.pack(">I", 1 << 30) + i[4:] + e),
        ("refused/png_exif_tail_late_idat_cut", lambda p, i, e: p + i + i[:-6]),
        ("refused/png_exif_tail_late_ihdr_short", lambda p, i, e: p + i + chunk(b"IHDR", b"abc") + e),
        ("refused/png_exif_tail_late_iccp_method1", lambda p, i, e: p + i + chunk(b"iCCP", b"p\0\1xx") + e),
        ("refused/png_exif_tail_late_gama_short", lambda p, i, e: p + i + chunk(b"gAMA", b"\0") + e),
        ("refused/png_exif_tail_late_fctl_badseq", lambda p, i, e: p + i + fctl(5) + e),
        ("png_exif_tail_late_fctl_xmp6", lambda p, i, e: p + i + fctl(0) + itxt(K_XMP, X(6)) + e),
        ("png_exif_tail_apng_stops_at_fctl", lambda p, i, e: p + chunk(b"acTL", struct.pack(">II", 2, 0)) + fctl(0) + i +
         fctl(1) + chunk(b"fdAT", struct.pack(">I", 2) + i[8:-4]) + itxt(K_XMP, X(6)) + e),
        ("png_exif_tail_apng_one_frame_xmp6", lambda p, i, e: p + chunk(b"acTL", struct.pack(">II", 1, 0)) + fctl(0) + i +
         itxt(K_XMP, X(6)) + e),
    ]):
        c[name + ".png"] = build(*png_parts(200 + k))
    return c


def jpeg(seed, exif=None, xmp=None, dpi=None):
    im = Image.fromarray(np.random.default_rng(seed).integers(0, 256, (5, 7, 3), dtype=np.uint8))
    b = io.BytesIO()
    kw = {"exif": b"Exif\0\0" + exif} if exif is not None else {}
    if xmp is not None:
        kw["xmp"] = xmp
    if dpi is not None:
        kw["dpi"] = dpi
    im.save(b, "JPEG", quality=90, **kw)
    return b.getvalue()


def cases():
    X = lambda o: (XMP % o).encode()  # noqa: E731
    K_XMP, K_RAW = b"XML:com.adobe.xmp", b"Raw profile type exif"
    big = (XMP % 6).encode() + b" " * 4000  # compresses to a short stream; its orientation comes first
    zbig = zlib.compress(big)
    bad_adler = zlib.compress(X(6))[:-4] + b"\0\0\0\0"
    c = {
        # where Pillow reads an orientation in a PNG
        "png_exif_raw_text_o6.png": png(101, [text(K_RAW, raw_profile(orient((6,))))]),
        "png_exif_raw_ztxt_o8.png": png(102, [ztxt(K_RAW, raw_profile(orient((8,))))]),
        "png_exif_raw_itxt_o3.png": png(103, [itxt(K_RAW, raw_profile(orient((3,))))]),
        "png_exif_raw_itxtz_o5.png": png(104, [itxt(K_RAW, raw_profile(orient((5,))), compressed=True)]),
        "png_exif_xmp_text_o6.png": png(105, [text(K_XMP, X(6))]),
        "png_exif_xmp_ztxt_o5.png": png(106, [ztxt(K_XMP, X(5))]),
        "png_exif_xmp_itxtz_o7.png": png(107, [itxt(K_XMP, X(7), compressed=True)]),
        "png_exif_late_xmp_o6.png": png(108, after=[itxt(K_XMP, X(6))]),
        "png_exif_late_exif_o8.png": png(109, after=[chunk(b"eXIf", orient((8,)))]),
        "png_exif_late_raw_o2.png": png(110, after=[ztxt(K_RAW, raw_profile(orient((2,))))]),
        "png_exif_text_exifkey_o6.png": png(111, [text(b"exif", b"Exif\0\0" + orient((6,)))]),
        # which wins: EXIF over raw profile over XMP; the last chunk of a key; the XMP str over the iTXt bytes
        "png_exif_exif2_raw8.png": png(112, [chunk(b"eXIf", orient((2,))), text(K_RAW, raw_profile(orient((8,))))]),
        "png_exif_raw8_xmp3.png": png(113, [text(K_RAW, raw_profile(orient((8,)))), text(K_XMP, X(3))]),
        "png_exif_exif6_late_xmp3.png": png(114, [chunk(b"eXIf", orient((6,)))], [itxt(K_XMP, X(3))]),
        "png_exif_two_exif_6_then_3.png": png(115, [chunk(b"eXIf", orient((6,)))], [chunk(b"eXIf", orient((3,)))]),
        "png_exif_xmp3_then_xmp6.png": png(116, [text(K_XMP, X(3))], [ztxt(K_XMP, X(6))]),
        "png_exif_xmp_badutf8_o4.png": png(117, [itxt(K_XMP, X(4) + b"\xff")]),
        "png_exif_xmp_text3_badutf8_6.png": png(118, [text(K_XMP, X(3)), itxt(K_XMP, X(6) + b"\xff")]),
        "png_exif_xmp_empty_then_bytes.png": png(119, [text(K_XMP, b""), itxt(K_XMP, X(7) + b"\xc0")]),
        # present but unusable Orientation entries: no transpose and no XMP fallback
        "png_exif_o0_xmp6.png": png(120, [chunk(b"eXIf", orient((0,))), itxt(K_XMP, X(6))]),
        "png_exif_o9_xmp6.png": png(121, [chunk(b"eXIf", orient((9,))), itxt(K_XMP, X(6))]),
        "png_exif_o300_xmp6.png": png(122, [chunk(b"eXIf", orient((300,))), itxt(K_XMP, X(6))]),
        "png_exif_byte6_xmp3.png": png(123, [chunk(b"eXIf", orient((6,), BYTE)), itxt(K_XMP, X(3))]),
        "png_exif_ascii6_xmp3.png": png(124, [chunk(b"eXIf", orient(b"6\0", ASCII, 2)), itxt(K_XMP, X(3))]),
        "png_exif_undef6_xmp3.png": png(125, [chunk(b"eXIf", orient((6,), UNDEFINED)), itxt(K_XMP, X(3))]),
        # other types and counts Pillow reads as a number (first value)
        "png_exif_short2_o6.png": png(126, [chunk(b"eXIf", orient((6, 3), SHORT, 2))]),
        "png_exif_short3_o8.png": png(127, [chunk(b"eXIf", orient((8, 3, 2), SHORT, 3))]),
        "png_exif_long_o5.png": png(128, [chunk(b"eXIf", orient((5,), LONG))]),
        "png_exif_sbyte_o7.png": png(129, [chunk(b"eXIf", orient((7,), SBYTE))]),
        "png_exif_sshort_o2.png": png(130, [chunk(b"eXIf", orient((2,), SSHORT))]),
        "png_exif_slong_o4.png": png(131, [chunk(b"eXIf", orient((4,), SLONG))]),
        "png_exif_rational_o3.png": png(132, [chunk(b"eXIf", orient((12, 4), RATIONAL))]),
        "png_exif_rational_half_xmp6.png": png(133, [chunk(b"eXIf", orient((13, 2), RATIONAL)), itxt(K_XMP, X(6))]),
        "png_exif_srational_o6.png": png(134, [chunk(b"eXIf", orient((-12, -2), SRATIONAL))]),
        "png_exif_float_o8.png": png(135, [chunk(b"eXIf", orient((8.0,), FLOAT))]),
        "png_exif_double_o5.png": png(136, [chunk(b"eXIf", orient((5.0,), DOUBLE))]),
        "png_exif_le_long_o7.png": png(137, [chunk(b"eXIf", tiff([(0x0112, LONG, 1, (7,))], be=False))]),
        # entries Pillow skips (the tag is absent: XMP speaks)
        "png_exif_count0_xmp6.png": png(138, [chunk(b"eXIf", orient(b"", SHORT, 0)), itxt(K_XMP, X(6))]),
        "png_exif_type14_xmp6.png": png(139, [chunk(b"eXIf", orient(b"\0\6", (14, 2, "H"))), itxt(K_XMP, X(6))]),
        "png_exif_oob_xmp6.png": png(140, [chunk(b"eXIf", tiff([(0x0112, SHORT, 3, b"\0\6\0\6\0\6")])[:-6]),
                                           itxt(K_XMP, X(6))]),
        # repeated entries: Pillow 13 keeps the first readable one (12 the last); an unreadable one is skipped
        "png_exif_dup_6_3.png": png(141, [chunk(b"eXIf", tiff([(0x0112, SHORT, 1, (6,)), (0x0112, SHORT, 1, (3,))]))]),
        "png_exif_dup_type14_then_8.png": png(142, [chunk(b"eXIf", tiff([(0x0112, (14, 2, "H"), 1, (6,)),
                                                                          (0x0112, SHORT, 1, (8,))]))]),
        "png_exif_dup_huge_then_5_xmp6.png": png(143, [chunk(b"eXIf", tiff([(0x0112, SHORT, 100000, b"\0\0\0\0"),
                                                                             (0x0112, SHORT, 1, (5,))])),
                                                       itxt(K_XMP, X(6))]),
        # JPEG: the same rule (an unusable EXIF entry does not fall back to XMP)
        "jpeg_exif_o0_xmp6.jpg": jpeg(150, orient((0,)), X(6)),
        "jpeg_exif_o9_xmp6.jpg": jpeg(151, orient((9,)), X(6)),
        "jpeg_exif_o300_xmp6.jpg": jpeg(152, orient((300,)), X(6)),
        "jpeg_exif_byte6_xmp3.jpg": jpeg(153, orient((6,), BYTE), X(3)),
        "jpeg_exif_short2_o8.jpg": jpeg(154, orient((8, 1), SHORT, 2)),
        "jpeg_exif_count0_xmp6.jpg": jpeg(155, orient(b"", SHORT, 0), X(6)),
        "jpeg_exif_notiff_xmp6.jpg": jpeg(156, b"not a TIFF block", X(6)),  # open swallows the error: no XMP
        "refused/jpeg_exif_notiff_dpi.jpg": jpeg(157, b"not a TIFF block", X(6), dpi=(72, 72)),  # exif_transpose raises
        # malformed metadata, and Pillow's verdict on it
        "refused/png_exif_raw_badhex.png": png(160, [text(K_RAW, raw_profile(orient((6,))) + b"zz\n")]),
        "refused/png_exif_raw_oddhex.png": png(161, [text(K_RAW, raw_profile(orient((6,)))[:-2] + b"\n")]),
        "refused/png_exif_raw_nonascii.png": png(162, [text(K_RAW, raw_profile(orient((6,))) + b"\xe9")]),
        "png_exif_raw_twolines_xmp6.png": png(163, [text(K_RAW, b"\nexif\n"), itxt(K_XMP, X(6))]),
        "png_exif_raw_declared_huge_o8.png": png(164, [text(K_RAW, raw_profile(orient((8,)), declared=99999999))]),
        "png_exif_raw_spaces_o7.png": png(165, [text(K_RAW, raw_profile(orient((7,)), sep=" \r\n\t"))]),
        "refused/png_exif_raw_notiff.png": png(166, [text(K_RAW, raw_profile(b"garbage!"))]),
        "refused/png_exif_notiff.png": png(167, [chunk(b"eXIf", b"not a TIFF block")]),
        "refused/png_exif_short_tiff.png": png(168, [chunk(b"eXIf", b"MM\0*")]),
        "refused/png_exif_ztxt_exifkey.png": png(169, [ztxt(b"exif", b"Exif\0\0" + orient((6,)))]),
        "png_exif_xmp_ztxt_cut_o6.png": png(170, [ztxt(K_XMP, b"", zbig[:len(zbig) // 2])]),
        "png_exif_xmp_ztxt_badadler.png": png(171, [ztxt(K_XMP, b"", bad_adler)]),
        "png_exif_xmp_itxtz_badadler.png": png(172, [itxt(K_XMP, b"", compressed=True, z=bad_adler)]),
        "png_exif_xmp_itxtz_cut_o6.png": png(173, [itxt(K_XMP, b"", compressed=True, z=zbig[:len(zbig) // 2])]),
        "png_exif_xmp_ztxt_badheader.png": png(174, [ztxt(K_XMP, b"", b"\x78\x9d" + zlib.compress(X(6))[2:])]),
        "refused/png_exif_ztxt_bomb.png": png(175, [ztxt(b"Comment", b"\0" * ((1 << 20) + 1))]),
        "png_exif_ztxt_at_cap_xmp6.png": png(176, [ztxt(b"Comment", b"\0" * (1 << 20)), itxt(K_XMP, X(6))]),
        "refused/png_exif_itxtz_bomb.png": png(177, [itxt(K_XMP, X(6) + b" " * (1 << 20), compressed=True)]),
        "refused/png_exif_ztxt_method1.png": png(178, [chunk(b"zTXt", K_XMP + b"\0\1" + zlib.compress(X(6)))]),
        "png_exif_itxt_method1.png": png(179, [itxt(K_XMP, zlib.compress(X(6)), flags=b"\1\1")]),
        "png_exif_late_badname_xmp6.png": png(180, after=[chunk(b"a!bc", b""), itxt(K_XMP, X(6))]),
    }
    c.update(tail_cases(X, K_XMP))
    return c
