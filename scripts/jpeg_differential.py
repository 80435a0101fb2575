#!/usr/bin/env python3
"""scripts/jpeg_differential.py — random JPEGs with damaged and unusual marker segments, our verdict and pixels
against Pillow's (Image.open, ImageOps.exif_transpose, convert("RGB"): the tool's default pipeline).

Design: a seeded generator encodes a small image with Pillow's own encoder under random settings (grey, RGB, RGB kept
as RGB, CMYK; quality, subsampling 4:4:4 / 4:2:2 / 4:2:0 / 4:1:1, progressive, optimised tables, restart markers,
EXIF orientation, ICC profiles of one or several APP2 segments, XMP, comments, DPI), then splits the file into its
segments before the first scan and the rest, and changes up to three things: bytes between segments (junk, fill
bytes, FF 00), segments added (every APPn Pillow reads: short JFIF and Adobe segments, EXIF blocks, XMP, ICC chunks,
MPF indexes valid or not, Photoshop resources cut anywhere; COM, DRI, TEM, RSTn, SOI, EOI, DNL, DHP, EXP, JPGn,
unknown markers, a second frame header or quantisation table), a segment's length field, the frame header's
fields (precision, component count, sampling factors, table numbers, size), a segment removed or two swapped, a
tables-only datastream before the image, bytes flipped in the headers, the file cut or its end changed. A third of
the files keep Pillow's encoding unchanged. Each file is decoded by Pillow in the Python given by --python and by
DUMP (tests/fuzz/gif_dump.c, as its top comment says to build it): every file whose verdict, size or pixels differ
is printed, then a count. With --resized both sides run the whole pipeline instead: ours the command's own path
(sg_preprocess_memory: a JPEG decoded straight into the resize, unless it is rotated), Pillow's then
resize((224, 224), BILINEAR). --dpi writes EXIF DPI cases instead (dpi_case); --large draws pictures up to 720 x 540
and cuts the data anywhere, so that files span several of Pillow's 64 KiB reads. Usage: jpeg_differential.py DUMP
OUTDIR [N] [SEED] [--python PY] [--resized] [--dpi] [--large]
"""
import io
import os
import struct
import subprocess
import sys

import numpy as np
from PIL import Image

from pillow_oracle import ORACLE_224, ORACLE_EXIF, parse_args, verdicts, write_cases


LARGE = "--large" in sys.argv  # pictures up to 720 x 540 and cuts anywhere: files that span several 64 KiB reads


def picture(rng, mode):
    if LARGE and rng.random() < 0.7:
        w, h = rng.randint(200, 720), rng.randint(150, 540)
    else:
        w = rng.randint(1, rng.choice([8, 40, 160]))
        h = rng.randint(1, rng.choice([8, 40, 120]))
    ch = {"L": 1, "RGB": 3, "CMYK": 4}[mode]
    nr = np.random.default_rng(rng.randrange(1 << 30))
    if rng.random() < 0.5:
        a = nr.integers(0, 256, (h, w, ch))
    else:
        y, x = np.mgrid[0:h, 0:w]
        a = np.stack([(x * rng.randint(0, 9) + y * rng.randint(0, 9) + rng.randrange(256)) % 256 for _ in range(ch)], -1)
        a = np.clip(a + nr.integers(-6, 7, a.shape), 0, 255)
    a = a.astype(np.uint8)
    return Image.fromarray(a[:, :, 0] if ch == 1 else a, mode)


def exif_block(rng):
    e = Image.Exif()
    e[0x0112] = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 0, 9])
    if rng.random() < 0.3:
        e[0x011A], e[0x0128] = 72.0, rng.choice([2, 3])
    return e.tobytes()


def xmp_packet(rng):
    o = rng.choice(["1", "3", "6", "8", "x", ""])
    return (b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
            b'<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="' + o.encode() +
            b'"/></rdf:RDF></x:xmpmeta>')


def encode(rng):
    mode = rng.choice(["L"] * 2 + ["RGB"] * 6 + ["CMYK"] * 2)
    im = picture(rng, mode)
    kw = {"quality": rng.randint(1, 100)}
    if mode == "RGB":
        kw["subsampling"] = rng.choice([0, 1, 2, 2, "4:1:1", -1])
        if rng.random() < 0.1:
            kw["keep_rgb"], kw["subsampling"] = True, 0  # libjpeg's encoder refuses RGB kept with subsampling
    if rng.random() < 0.3:
        kw["progressive"] = True
    if rng.random() < 0.3:
        kw["optimize"] = True
    if rng.random() < 0.15:
        kw[rng.choice(["restart_marker_blocks", "restart_marker_rows"])] = rng.randint(1, 4)
    if rng.random() < 0.25:
        kw["exif"] = exif_block(rng)
    if rng.random() < 0.1:
        big = [] if kw.get("progressive") or kw.get("optimize") else [70000]  # more, and Pillow's buffer overflows
        kw["icc_profile"] = bytes(rng.randrange(256) for _ in range(rng.choice([0, 20, 300] + big)))
    if rng.random() < 0.1:
        kw["comment"] = b"c" * rng.randint(0, 30)
    if rng.random() < 0.1:
        kw["dpi"] = (rng.randint(1, 600), rng.randint(1, 600))
    if rng.random() < 0.1:
        kw["xmp"] = xmp_packet(rng)
    b = io.BytesIO()
    try:
        im.save(b, "JPEG", **kw)
    except OSError:  # Pillow's buffer for a progressive or optimised file (w * h bytes) can be too small for noise at
        b = io.BytesIO()  # quality 100 in CMYK: the same file without them
        im.save(b, "JPEG", **{k: v for k, v in kw.items() if k not in ("progressive", "optimize")})
    return b.getvalue()


def split(data):
    """[segment bytes, ...] from the first marker after SOI up to the first SOS, and the rest (SOS onwards)."""
    segs, p = [], 2
    while p + 4 <= len(data) and data[p] == 0xFF and data[p + 1] != 0xDA:
        n = struct.unpack(">H", data[p + 2:p + 4])[0]
        segs.append(data[p:p + 2 + n])
        p += 2 + n
    return segs, data[p:]


def seg(marker, payload):
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def rand_bytes(rng, n):
    return bytes(rng.randrange(256) for _ in range(n))


def tiff_ifd(e, tags):
    """What follows a TIFF header's 4 magic bytes: the IFD's offset (8), the IFD of tags [(tag, type, count, value
    bytes)] in byte order e, no next IFD, then the values longer than 4 bytes."""
    ifd_len = 2 + 12 * len(tags) + 4
    out, extra = struct.pack(e + "H", len(tags)), b""
    for tag, typ, cnt, val in tags:
        if len(val) <= 4:
            out += struct.pack(e + "HHL", tag, typ, cnt) + val.ljust(4, b"\0")
        else:
            out += struct.pack(e + "HHLL", tag, typ, cnt, 8 + ifd_len + len(extra))
            extra += val
    return struct.pack(e + "L", 8) + out + b"\0\0\0\0" + extra


def mpf(rng):
    """An MPF APP2 payload: "MPF\\0" and a little TIFF directory with B000 (version), B001 (images), B002 (entries), of
    either byte order (and the TIFF variants Pillow accepts), with types and counts a damaged index may have."""
    head = rng.choice([b"MM\0*", b"II*\0"] * 4 + [b"MM*\0", b"II\0*", b"MM\0+", b"II+\0"])
    e = ">" if head[0] == 77 else "<"
    ee = ">" if head == b"MM\0*" else "<"  # Pillow unpacks the entries big-endian under "MM\0*" only
    count = rng.choice([1, 2, 2, 3, 0, -1])
    nent = max(0, rng.choice([count, count, count - 1, count + 1, 0]))
    entries = b"".join(struct.pack(ee + "LLLHH", rng.choice([0x20030000, 0x010001, 0x01000000, 0x7FFFFF]),
                                   rng.randint(0, 5000), rng.randint(0, 5000), 0, 0) for _ in range(nent))
    entries += bytes(rng.choice([0, 0, 0, 7]))
    t1 = rng.choice([4] * 6 + [3, 1, 6, 8, 9, 16, 7, 5, 13])
    fmt = {4: "l", 3: "h", 1: "b", 6: "b", 8: "h", 9: "l", 16: "q", 7: "b", 5: "ll", 13: "l"}[t1]
    vals = [count] + [rng.randint(0, 3)] * (len(fmt) - 1)
    num = struct.pack(e + fmt, *vals) if t1 in (6, 8, 9, 16, 5) else struct.pack(e + fmt.upper(), *[v % 128 for v in vals])
    t2 = rng.choice([7] * 6 + [1, 3, 2])
    tags = [(0xB000, 7, 4, b"0100"), (0xB001, t1, 1, num)]
    if rng.random() < 0.9:
        unit = {7: 1, 1: 1, 2: 1, 3: 2}[t2]
        tags.append((0xB002, t2, len(entries) // unit, entries[:len(entries) // unit * unit]))
    if rng.random() < 0.1:
        rng.shuffle(tags)
    body = head + tiff_ifd(e, tags)
    if rng.random() < 0.15:
        body = body[:rng.randrange(len(body))]
    return b"MPF\0" + body


def photoshop(rng):
    s = b"Photoshop 3.0\0"
    for _ in range(rng.randint(0, 3)):
        name = rand_bytes(rng, rng.randint(0, 3))
        blk = b"8BIM" + struct.pack(">H", rng.choice([0x03ED, 0x0404, 7])) + bytes([len(name)]) + name
        if len(blk) % 2:
            blk += b"\0"
        data = rand_bytes(rng, rng.randint(0, 20))
        blk += struct.pack(">L", len(data)) + data + (b"\0" if len(data) % 2 else b"")
        s += blk
    if rng.random() < 0.5:
        s = s[:rng.randint(14, len(s))]
    return s


def new_segment(rng, segs):
    k = rng.randrange(26)
    if k == 0:
        return seg(0xE0 + rng.randrange(16), rand_bytes(rng, rng.randint(0, 40)))
    if k == 1:
        return seg(0xE0, (b"JFIF\0\1\2" + bytes([rng.randrange(3)]) + b"\0\x48\0\x48\0\0")[:rng.randint(4, 16)])
    if k == 2:
        return seg(0xEE, (b"Adobe\0\x64\0\0\0\0" + bytes([rng.randrange(3)]))[:rng.randint(5, 14)])
    if k == 3:
        return seg(0xE1, b"Exif\0\0" + exif_block(rng)[rng.choice([0, 6])::])
    if k == 4:
        return seg(0xE1, b"http://ns.adobe.com/xap/1.0/\0" + xmp_packet(rng))
    if k == 5:
        return seg(0xE2, (b"ICC_PROFILE\0" + bytes([rng.randint(0, 3), rng.randint(0, 3)]) +
                          rand_bytes(rng, 10))[:rng.randint(12, 26)])
    if k == 6:
        return seg(0xE2, mpf(rng))
    if k == 7:
        return seg(0xED, photoshop(rng))
    if k == 8:
        return seg(0xFE, rand_bytes(rng, rng.randint(0, 20)))
    if k == 9:
        return seg(0xDD, struct.pack(">H", rng.randint(0, 6))[:rng.choice([2, 2, 1, 3])])
    if k == 10:
        return bytes([0xFF, 0x01])  # TEM: no length
    if k == 11:
        return bytes([0xFF, 0xD0 + rng.randrange(8)])  # RSTn: no length
    if k == 12:
        return bytes([0xFF, 0xD8])
    if k == 13:
        return bytes([0xFF, 0xD9])
    if k == 14:
        return seg(rng.choice([0xDC, 0xDE, 0xDF]), rand_bytes(rng, rng.randint(0, 8)))
    if k == 15:
        return bytes([0xFF, 0xF0 + rng.randrange(14)]) + (struct.pack(">H", 4) + b"ab" if rng.random() < 0.5 else b"")
    if k == 16:
        return seg(rng.randint(0x02, 0xBF), rand_bytes(rng, rng.randint(0, 6)))
    if k == 17:
        return seg(rng.choice([0xC8, 0xCC]), rand_bytes(rng, rng.randint(0, 6)))
    sofs = [s for s in segs if s[1:2] in (b"\xc0", b"\xc1", b"\xc2")]
    dqts = [s for s in segs if s[1:2] == b"\xdb"]
    if k == 18 and sofs:
        return sofs[0]
    if k == 19 and dqts:
        return dqts[0][:rng.randint(5, len(dqts[0]))] if rng.random() < 0.5 else dqts[0]
    if k == 20:
        return seg(0xDB, bytes([rng.choice([0, 1, 0x10, 0x11])]) + rand_bytes(rng, rng.choice([64, 128, 10])))
    if k == 21:
        return seg(0xE1, b"Exif\0\0" + rand_bytes(rng, rng.randint(0, 20)))
    if k == 22:
        return seg(0xE0, b"JFXX\0" + rand_bytes(rng, 4))
    if k == 23:
        return seg(rng.choice([0xC3, 0xC5, 0xC9, 0xCB]), sofs[0][4:] if sofs else b"")
    return seg(0xE0 + rng.randrange(16), rand_bytes(rng, rng.randint(0, 4)))


def junk(rng):
    return rng.choice([lambda: bytes(rng.randint(0, 0xFE) for _ in range(rng.randint(1, 4))),
                       lambda: b"\xff" * rng.randint(1, 3), lambda: b"\xff\x00", lambda: b"\x00",
                       lambda: b"\xff\x00" + bytes([rng.randint(0, 0xFE)])])()


def sof_edit(rng, s):
    s = bytearray(s)
    if len(s) < 10:
        return bytes(s)
    f = rng.randrange(6)
    if f == 0:
        s[4] = rng.choice([12, 16, 0, 9])
    elif f == 1:
        s[9] = rng.choice([0, 1, 2, 3, 4, 5])
    elif f == 2 and len(s) >= 12:
        c = rng.randrange((len(s) - 10) // 3)
        s[11 + 3 * c] = rng.randint(1, 4) << 4 | rng.randint(1, 4)
    elif f == 3 and len(s) >= 13:
        c = rng.randrange((len(s) - 10) // 3)
        s[12 + 3 * c] = rng.randint(0, 4)
    elif f == 4:
        s[5:7] = struct.pack(">H", rng.choice([0, 1, struct.unpack(">H", s[5:7])[0] + rng.randint(-2, 2)]) & 0xFFFF)
    else:
        s[7:9] = struct.pack(">H", rng.choice([0, 1, struct.unpack(">H", s[7:9])[0] + rng.randint(-2, 2)]) & 0xFFFF)
    return bytes(s)


def dpi_case(rng):
    """--dpi: a small JPEG whose EXIF holds a ResolutionUnit (or not) and an XResolution of any type, count and
    value (Orientation 1 at most, so no rotation writes the EXIF back), with or without a JFIF segment giving the
    DPI: what Pillow's open reads in _read_dpi_from_exif, where some values raise."""
    e = rng.choice(["<", ">"])
    unit = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 9: 4, 10: 8, 11: 4, 12: 8}
    tags = []
    if rng.random() < 0.8:
        tags.append((0x0128, 3, 1, struct.pack(e + "H", rng.choice([2, 3]))))
    t = rng.choice([1, 7, 2, 2, 2, 3, 4, 5, 10, 11, 12, 6, 9])
    if t == 2:
        val = rng.choice([b"5", b"x", b"", b"\0", b"55", b"5\0", b"\xb2", b"0", b" "])
        c = len(val)
    else:
        c = rng.choice([0, 1, 1, 2, 3])
        val = rand_bytes(rng, c * unit[t])
    if rng.random() < 0.9:
        tags.append((0x011A, t, c, val))
    if rng.random() < 0.3:
        tags.append((0x0112, 3, 1, struct.pack(e + "H", 1)))
    if rng.random() < 0.15:
        tags.append((0x011A, 5, 1, struct.pack(e + "LL", 72, 1)))  # a repeat: Pillow 13 keeps the first, 12 the last
    if rng.random() < 0.1:
        rng.shuffle(tags)
    tiff = (b"II*\0" if e == "<" else b"MM\0*") + tiff_ifd(e, tags)
    b = io.BytesIO()
    picture(rng, "RGB").save(b, "JPEG", quality=80)
    segs, rest = split(b.getvalue())
    segs = [x for x in segs if x[1] != 0xE0]  # Pillow's own JFIF segment: one of ours, or none
    jfif = rng.choice([None, 0, 1, 2])
    if jfif is not None:
        segs.insert(0, seg(0xE0, b"JFIF\0\1\1" + bytes([jfif]) + b"\0\x48\0\x48\0\0"))
    segs.insert(1 if jfif is not None else 0, seg(0xE1, b"Exif\0\0" + tiff))
    return b"\xff\xd8" + b"".join(segs) + rest


def jpeg(rng):
    data = encode(rng)
    if rng.random() < 1 / 3:
        return data
    segs, rest = split(data)
    for _ in range(rng.randint(1, 3)):
        what = rng.randrange(12)
        at = rng.randint(0, len(segs))
        if what == 0:
            segs.insert(at, junk(rng))
        elif what in (1, 2, 3):
            segs.insert(at, new_segment(rng, segs))
        elif what == 4 and segs:
            i = rng.randrange(len(segs))
            s = bytearray(segs[i])
            if len(s) >= 4:
                n = struct.unpack(">H", s[2:4])[0]
                s[2:4] = struct.pack(">H", rng.choice([0, 1, 2, 3, n - 1, n + 1, n + 2, 0xFFFF]) & 0xFFFF)
            segs[i] = bytes(s)
        elif what == 5:
            segs = [sof_edit(rng, s) if s[1:2] in (b"\xc0", b"\xc1", b"\xc2") else s for s in segs]
        elif what == 6 and segs:
            del segs[rng.randrange(len(segs))]
        elif what == 7 and len(segs) > 1:
            i, j = rng.randrange(len(segs)), rng.randrange(len(segs))
            segs[i], segs[j] = segs[j], segs[i]
        elif what == 8:
            tables = [s for s in segs if s[1:2] in (b"\xdb", b"\xc4")]
            segs = [b"\xff\xd8" + b"".join(tables) + b"\xff\xd9\xff\xd8"[:rng.choice([2, 4])]] + segs
        elif what == 9:
            rest = rng.choice([rest[:-2], rest + rand_bytes(rng, rng.randint(1, 9)), rest + b"\xff\xd9",
                               rest[:-2] + b"\xff\xd8\xff\xd9", rest + data])
        elif what == 10:
            tail = rng.randint(1, 40)
            if rng.random() < 0.5:
                rest = rest[:max(0, len(rest) - tail)]
            else:
                rest = rest[:rng.randint(0, len(rest) if LARGE else min(len(rest), 30))]
                break
        else:
            head = bytearray(b"".join(segs))
            for _ in range(rng.randint(1, 2)):
                if head:
                    head[rng.randrange(len(head))] = rng.randrange(256)
            segs = [bytes(head)]
    return b"\xff\xd8" + b"".join(segs) + rest


def main():
    dump, outdir, n, seed, py, flags = parse_args(sys.argv[1:])
    paths = write_cases(outdir, n, seed, "j%05d.jpg", dpi_case if "--dpi" in flags else jpeg)
    major = subprocess.run([py, "-c", "import PIL; print(PIL.__version__.split('.')[0])"], capture_output=True,
                           text=True, check=True).stdout.strip()
    if "--resized" in flags:  # the command's own path (a JPEG decoded straight into the resize) and Pillow's resize
        ours, theirs = verdicts([dump, major, "224"], paths), verdicts([py, "-c", ORACLE_224], paths)
    else:
        ours, theirs = verdicts([dump, major], paths), verdicts([py, "-c", ORACLE_EXIF], paths)
    diff = ok = 0
    for p in paths:
        a, b = ours.get(p, "missing"), theirs.get(p, "missing")
        ok += b.startswith("OK")
        if a.split()[0] == b.split()[0] == "ERR" or a == b:
            continue
        diff += 1
        print(os.path.basename(p), "| ours:", a, "| pillow:", b)
    print("%d files (%d decoded by Pillow), %d differ" % (n, ok, diff))


if __name__ == "__main__":
    main()
