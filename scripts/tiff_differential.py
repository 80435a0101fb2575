#!/usr/bin/env python3
"""scripts/tiff_differential.py — random and damaged TIFFs, our decoder's verdict and pixels against Pillow's.

Design: a seeded generator writes N TIFFs byte by byte (struct): either byte order; bilevel, grey (1/2/4/8/16
bits, WhiteIsZero or BlackIsZero), grey + extra sample, palette (1/2/4/8 bits, + extra), RGB / RGBA / RGBX (8 and
16 bits, every ExtraSamples value, none), CMYK (8/16, + extras), and now and then modes this decoder refuses
(YCbCr, Lab, float, 32-bit, signed, 12-bit); strips of random RowsPerStrip or tiles (multiples of 16 and odd
sizes), planar 1 and 2, compression none / LZW / Deflate (8 and 32946) / PackBits (now and then JPEG or CCITT
numbers), Predictor 1 and 2 (and odd ones), FillOrder 1 and 2, an Orientation tag (0..9), types LONG or SHORT,
a ColorMap of the right or a wrong size. A share of the files is then damaged: cut at a random length, random
bytes changed, byte counts or offsets changed, StripByteCounts dropped, strips swapped, tags duplicated. Each
file is decoded by Pillow (Image.open(path).convert("RGB"); Pillow applies the Orientation at load; any
exception is a refusal) in the Python given by --python, and by DUMP (tests/fuzz/gif_dump.c, a generic
sg_decode_rgb driver; an argument 12 sets pillow_major 12). Prints every file whose verdict, size or pixels
differ, and a count. --jpeg writes JPEG-compressed TIFFs instead (make_jpeg). Usage:
tiff_differential.py DUMP OUTDIR [N] [SEED] [--python PY] [--pillow12] [--jpeg]
"""
import struct
import sys
import zlib

from pillow_oracle import ORACLE, parse_args, verdicts, write_cases

def lzw_encode(data):
    """TIFF LZW as libtiff writes it: Clear first, codes MSB first, the width one code early, EOI last."""
    out, acc, nacc = bytearray(), 0, 0
    nbits = 9

    def emit(c):
        nonlocal acc, nacc
        acc = (acc << nbits) | c
        nacc += nbits
        while nacc >= 8:
            out.append((acc >> (nacc - 8)) & 255)
            nacc -= 8

    emit(256)
    table, nxt, w = {bytes([i]): i for i in range(256)}, 258, b""
    for c in data:
        wc = w + bytes([c])
        if wc in table:
            w = wc
            continue
        emit(table[w])
        table[wc] = nxt
        nxt += 1
        if nxt == 4094:
            emit(256)
            table, nxt, nbits = {bytes([i]): i for i in range(256)}, 258, 9
        elif nxt > (1 << nbits) - 1:
            nbits += 1
        w = bytes([c])
    if w:
        emit(table[w])
    emit(257)
    if nacc:
        out.append((acc << (8 - nacc)) & 255)
    return bytes(out)


def packbits(data):
    out, i, n = bytearray(), 0, len(data)
    while i < n:
        j = i
        while j + 1 < n and data[j + 1] == data[i] and j - i < 127:
            j += 1
        if j > i:
            out += bytes([257 - (j - i + 1), data[i]])
            i = j + 1
            continue
        j = i + 1
        while j < n and j - i < 128 and not (j + 1 < n and data[j] == data[j + 1]):
            j += 1
        out += bytes([j - i - 1]) + data[i:j]
        i = j
    return bytes(out)


def predict(buf, rowbytes, stride, bits, be):
    b = bytearray(buf)
    for r in range(0, len(b), rowbytes):
        row = b[r:r + rowbytes]
        if bits == 8:
            for i in range(len(row) - 1, stride - 1, -1):
                row[i] = (row[i] - row[i - stride]) & 255
        else:
            fmt = ">" if be else "<"
            vals = list(struct.unpack(fmt + "%dH" % (len(row) // 2), bytes(row[:len(row) // 2 * 2])))
            for i in range(len(vals) - 1, stride - 1, -1):
                vals[i] = (vals[i] - vals[i - stride]) & 0xFFFF
            row[:len(vals) * 2] = struct.pack(fmt + "%dH" % len(vals), *vals)
        b[r:r + rowbytes] = row
    return bytes(b)


MODES = [  # photometric, bits, samples, extras, sample format
    (1, 1, 1, (), 1), (0, 1, 1, (), 1), (1, 8, 1, (), 1), (0, 8, 1, (), 1), (1, 4, 1, (), 1), (0, 2, 1, (), 1),
    (1, 16, 1, (), 1), (0, 16, 1, (), 1), (1, 8, 2, (2,), 1), (1, 8, 2, (0,), 1), (1, 8, 2, (1,), 1),
    (3, 8, 1, (), 1), (3, 4, 1, (), 1), (3, 1, 1, (), 1), (3, 2, 1, (), 1), (3, 8, 2, (2,), 1), (3, 8, 2, (0,), 1),
    (2, 8, 3, (), 1), (2, 8, 4, (2,), 1), (2, 8, 4, (1,), 1), (2, 8, 4, (0,), 1), (2, 8, 4, (), 1),
    (2, 8, 5, (1, 0), 1), (2, 8, 5, (0, 0), 1), (2, 8, 4, (999,), 1), (2, 16, 3, (), 1), (2, 16, 4, (2,), 1),
    (2, 16, 4, (1,), 1), (2, 16, 4, (0,), 1), (5, 8, 4, (), 1), (5, 8, 5, (0,), 1), (5, 16, 4, (), 1),
    (1, 8, 1, (), 2), (6, 8, 3, (), 1), (8, 8, 3, (), 1), (1, 32, 1, (), 3), (1, 32, 1, (), 1), (1, 16, 1, (), 2),
    (1, 12, 1, (), 1), (2, 8, 3, (), 3),
]


def make(rng):
    be = rng.random() < 0.4
    E = ">" if be else "<"
    photo, bits, spp, extras, sfmt = rng.choice(MODES)
    w, h = rng.randint(1, 40), rng.randint(1, 40)
    planar = 2 if spp > 1 and rng.random() < 0.3 else 1
    comp = rng.choice([1, 1, 5, 5, 8, 32946, 32773, 32773] + ([7, 3, 4] if rng.random() < 0.1 else []))
    pred = rng.choice([1, 2, 2]) if comp in (5, 8, 32946) and bits in (8, 16) and rng.random() < 0.5 else 1
    if rng.random() < 0.03:
        pred = rng.choice([0, 3, 2])
    fill = 2 if rng.random() < 0.1 else 1
    tiled = rng.random() < 0.25
    if tiled:
        tw = rng.choice([16, 16, 32, 48]) if rng.random() < 0.85 else rng.randint(1, 20)
        th = rng.choice([16, 16, 32]) if rng.random() < 0.85 else rng.randint(1, 20)
    else:
        tw, th = w, rng.choice([h, h, rng.randint(1, h), rng.randint(1, 4), h + rng.randint(1, 5)])
    style = rng.random()
    nplanes = spp if planar == 2 else 1
    sbits = bits if planar == 2 else bits * spp
    rowbytes = (tw * sbits + 7) // 8
    across, down = (w + tw - 1) // tw, (h + th - 1) // th
    chunks = []
    for p in range(nplanes):
        for cy in range(down):
            for cx in range(across):
                rows = th if tiled else min(th, h - cy * th)
                n = rowbytes * rows
                if style < 0.4:
                    raw = bytes(rng.getrandbits(8) for _ in range(n))
                else:
                    base = rng.randint(0, 255)
                    raw = bytes((base + (i // max(1, rng.randint(1, 7))) * rng.randint(0, 3)) & 255 for i in range(n))
                if photo == 3 and bits == 8 and rng.random() < 0.7:
                    raw = bytes(b % 40 for b in raw)
                if comp == 1:
                    enc = raw
                else:
                    data = predict(raw, rowbytes, 1 if planar == 2 else spp, bits, be) if pred == 2 else raw
                    if comp == 5:
                        enc = lzw_encode(data)
                    elif comp in (8, 32946):
                        enc = zlib.compress(data, rng.choice([0, 1, 6, 9]))
                    elif comp == 32773:
                        enc = packbits(data)
                    else:
                        enc = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 30)))
                    if fill == 2:
                        enc = bytes(int(format(b, "08b")[::-1], 2) for b in enc)
                chunks.append(enc)
    # layout: header, chunks, then out-of-line values, then the IFD
    body = bytearray(b"MM\0*" if be else b"II*\0") + b"\0\0\0\0"
    offs = []
    for c in chunks:
        offs.append(len(body))
        body += c
        if rng.random() < 0.1:
            body += bytes(rng.randint(1, 9))
    counts = [len(c) for c in chunks]
    tags = {}
    L = 4 if rng.random() < 0.7 else 3

    def put(tag, typ, vals):
        tags[tag] = (typ, list(vals))

    put(256, L, [w])
    put(257, L, [h])
    put(258, 3, [bits] * spp if rng.random() < 0.8 else [bits])
    put(259, 3, [comp])
    put(262, 3, [photo])
    if fill != 1 or rng.random() < 0.1:
        put(266, 3, [fill])
    put(277, 3, [spp])
    if planar != 1 or rng.random() < 0.2:
        put(284, 3, [planar])
    if pred != 1 or rng.random() < 0.05:
        put(317, 3, [pred])
    if extras:
        put(338, 3, list(extras))
    if sfmt != 1 or rng.random() < 0.1:
        put(339, 3, [sfmt] * spp)
    if rng.random() < 0.25:
        put(274, 3, [rng.randint(0, 9)])
    if photo == 3:
        n = 3 << bits if rng.random() < 0.9 else rng.choice([768, 48, 6, 3 << bits])
        put(320, 3, [rng.randint(0, 65535) for _ in range(n)])
    if tiled:
        put(322, L, [tw])
        put(323, L, [th])
        put(324, 4, offs)
        put(325, L, counts)
    else:
        if th != h or rng.random() < 0.7:
            put(278, L, [th])
        put(273, 4, offs)
        put(279, L, counts)
    damage = rng.random()
    if damage < 0.06 and (279 in tags or 325 in tags):
        k = 279 if 279 in tags else 325
        typ, v = tags[k]
        v[rng.randrange(len(v))] = rng.choice([0, 1, v[0] + rng.randint(1, 50), 1 << 30])
    elif damage < 0.09 and 279 in tags:
        del tags[279]
    elif damage < 0.12:
        k = 273 if 273 in tags else 324
        typ, v = tags[k]
        if len(v) > 1:
            i, j = rng.randrange(len(v)), rng.randrange(len(v))
            v[i], v[j] = v[j], v[i]
        else:
            v[0] += rng.randint(-3, 3)
            v[0] = max(v[0], 0)
    elif damage < 0.14:
        k = 273 if 273 in tags else 324
        typ, v = tags[k]
        v.append(rng.randint(8, len(body)))
    ifd_entries = []
    for tag in sorted(tags):
        typ, vals = tags[tag]
        ifd_entries.append((tag, typ, vals))
    if rng.random() < 0.03 and ifd_entries:
        ifd_entries.insert(rng.randrange(len(ifd_entries)), rng.choice(ifd_entries))
    if len(body) % 2:
        body += b"\0"
    extra = bytearray()
    ifd_at = len(body)
    nent = len(ifd_entries)
    data_at = ifd_at + 2 + 12 * nent + 4
    ent = bytearray()
    for tag, typ, vals in ifd_entries:
        f = {3: "H", 4: "L"}[typ]
        if typ == 3 and any(v > 65535 for v in vals):
            f, typ = "L", 4
        payload = struct.pack(E + f * len(vals), *[v & 0xFFFFFFFF for v in vals])
        if len(payload) <= 4:
            ent += struct.pack(E + "HHL", tag, typ, len(vals)) + payload.ljust(4, b"\0")
        else:
            ent += struct.pack(E + "HHLL", tag, typ, len(vals), data_at + len(extra))
            extra += payload
            if len(extra) % 2:
                extra += b"\0"
    body += struct.pack(E + "H", nent) + ent + struct.pack(E + "L", 0) + extra
    body[4:8] = struct.pack(E + "L", ifd_at)
    if rng.random() < 0.15:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(body))
            body[i] = rng.getrandbits(8)
    if rng.random() < 0.1:
        body = body[:rng.randint(8, len(body))]
    return bytes(body)


JPEG_MODES = [(6, 3), (6, 3), (6, 3), (2, 3), (1, 1), (0, 1), (5, 4)]


def split_jpeg_tables(data):
    """A whole JPEG as libtiff's JPEG codec stores a strip: (the stream without its DQT / DHT segments, JPEGTables:
    SOI, those segments, EOI)."""
    keep, tab, i = bytearray(data[:2]), bytearray(b"\xff\xd8"), 2
    while data[i + 1] != 0xDA:
        ln = 2 + struct.unpack(">H", data[i + 2:i + 4])[0]
        (tab if data[i + 1] in (0xDB, 0xC4) else keep).extend(data[i:i + ln])
        i += ln
    keep += data[i:]
    return bytes(keep), bytes(tab + b"\xff\xd9")


def make_jpeg(rng):
    """--jpeg: a JPEG-compressed TIFF (Compression 7; its own random stream, so the other files of a seed stay
    as they were): photometric YCbCr (subsampling 4:4:4 / 4:2:2 / 4:2:0, the YCbCrSubsampling tag right, absent or
    wrong), RGB, grey, WhiteIsZero, CMYK; strips (any RowsPerStrip) or tiles; each strip or tile a JPEG made by
    Pillow's encoder (quality, progressive now and then), its tables moved to JPEGTables or left in place; now and
    then a last strip taller than the strip, a JPEG of the wrong size, 3 samples declared for grey, planar 2; then
    damaged as make() damages files (byte counts, bytes changed, the file cut)."""
    import io
    from PIL import Image
    be = rng.random() < 0.3
    E = ">" if be else "<"
    photo, spp = rng.choice(JPEG_MODES)
    w, h = rng.randint(1, 70), rng.randint(1, 70)
    tiled = rng.random() < 0.3
    if tiled:
        tw, th = rng.choice([16, 32, 48]), rng.choice([16, 16, 32])
    else:
        tw, th = w, rng.choice([h, rng.randint(1, h), rng.randint(1, 20), 8, 16, h + rng.randint(1, 5)])
    sub = rng.choice([0, 1, 2]) if photo == 6 else 0
    quality = rng.choice([5, 30, 75, 90, 100, rng.randint(1, 100)])
    prog = rng.random() < 0.1
    split = rng.random() < 0.8
    odd = rng.random()
    across, down = (w + tw - 1) // tw, (h + th - 1) // th
    noise = rng.random() < 0.5
    chunks, tables = [], b""
    for cy in range(down):
        for cx in range(across):
            rows = th if tiled else min(th, h - cy * th)
            jw, jh = tw, rows
            if not tiled and cy == down - 1 and odd < 0.05:
                jh = th  # the last strip's JPEG at the full strip height
            elif odd < 0.08 and cy == 0 and cx == 0:
                jw, jh = jw + rng.choice([0, 1, 8]), jh + rng.choice([-1, 0, 1, 8]) if jh > 1 else jh + 1
            n = jw * max(jh, 1) * spp
            if noise:
                raw = bytes(rng.getrandbits(8) for _ in range(n))
            else:
                base = rng.randint(0, 255)
                raw = bytes((base + (i // 5) * rng.randint(0, 2)) & 255 for i in range(n))
            arr_mode = {1: "L", 3: "RGB", 4: "CMYK"}[spp]
            img = Image.frombytes(arr_mode, (jw, max(jh, 1)), raw)
            buf = io.BytesIO()
            kw = {"keep_rgb": True} if photo == 2 else {}
            img.save(buf, "JPEG", quality=quality, subsampling=sub if spp == 3 else 0, progressive=prog, **kw)
            data = buf.getvalue()
            if split:
                data, tables = split_jpeg_tables(data)
            chunks.append(data)
    body = bytearray(b"MM\0*" if be else b"II*\0") + b"\0\0\0\0"
    offs = []
    for c in chunks:
        offs.append(len(body))
        body += c
        if len(body) % 2:
            body += b"\0"
    counts = [len(c) for c in chunks]
    tags = {256: (4, [w]), 257: (4, [h]), 258: (3, [8] * spp), 259: (3, [7]), 262: (3, [photo]), 277: (3, [spp])}
    if odd > 0.97:
        tags[277] = (3, [3 if spp == 1 else 1])
        tags[258] = (3, [8] * tags[277][1][0])
    elif odd > 0.95:
        tags[284] = (3, [2])
    if split:
        tags[347] = (7, list(tables))
    if photo == 6:
        r = rng.random()
        hv = [[1, 1], [2, 1], [2, 2]][sub]
        if r < 0.7:
            tags[530] = (3, hv)
        elif r < 0.8:
            tags[530] = (3, rng.choice([[1, 1], [2, 1], [2, 2], [4, 4]]))
    if rng.random() < 0.2:
        tags[274] = (3, [rng.randint(1, 8)])
    if tiled:
        tags.update({322: (4, [tw]), 323: (4, [th]), 324: (4, offs), 325: (4, counts)})
    else:
        tags.update({278: (4, [th]), 273: (4, offs), 279: (4, counts)})
    damage = rng.random()
    k = 279 if 279 in tags else 325
    if damage < 0.1:
        v = tags[k][1]
        i = rng.randrange(len(v))
        v[i] = rng.choice([0, 1, v[i] // 2, v[i] * 2 // 3, v[i] + rng.randint(1, 50)])
    ent, extra = bytearray(), bytearray()
    ifd_at = len(body)
    data_at = ifd_at + 2 + 12 * len(tags) + 4
    for tag in sorted(tags):
        typ, vals = tags[tag]
        payload = bytes(vals) if typ == 7 else struct.pack(E + {3: "H", 4: "L"}[typ] * len(vals), *vals)
        if len(payload) <= 4:
            ent += struct.pack(E + "HHL", tag, typ, len(vals)) + payload.ljust(4, b"\0")
        else:
            ent += struct.pack(E + "HHLL", tag, typ, len(vals), data_at + len(extra))
            extra += payload
            if len(extra) % 2:
                extra += b"\0"
    body += struct.pack(E + "H", len(tags)) + ent + struct.pack(E + "L", 0) + extra
    body[4:8] = struct.pack(E + "L", ifd_at)
    if rng.random() < 0.2:  # bytes changed in the strips' data
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(8, max(9, ifd_at))
            body[i] = rng.getrandbits(8)
    if rng.random() < 0.05:
        body = body[:rng.randint(8, len(body))]
    return bytes(body)


def main():
    dump, outdir, n, seed, py, flags = parse_args(sys.argv[1:])
    p12 = "--pillow12" in flags
    paths = write_cases(outdir, n, seed, "t%05d.tif", make_jpeg if "--jpeg" in flags else make)
    ours = verdicts([dump] + (["12"] if p12 else []), paths, check=False)
    theirs = verdicts([py, "-c", ORACLE], paths, check=False)
    diff = ok = refused = design = known = 0
    for p in paths:
        a, b = ours.get(p, "missing"), theirs.get(p, "missing")
        if a.startswith("OK"):
            ok += 1
        same = a == b if a.startswith("OK") or b.startswith("OK") else True
        if not b.startswith("OK"):
            refused += 1
        if not same and a.startswith("ERR") and ("rows it did not decode" in a or "block smoothing" in a):
            known += 1  # JPEG: a strip smaller than libtiff expects (Pillow returns stale buffer bytes), or a cut
            continue    # progressive strip (libjpeg-turbo 2.1 and 3.x smooth the missing coefficients differently)
        if not same and a.startswith("ERR") and ("is not supported" in a or "are not supported" in a):
            design += 1  # a mode or compression this decoder refuses by design (the message names it)
            continue
        if not same:
            diff += 1
            print("DIFF", p, "| ours:", a[:150], "| pillow:", b[:120])
    print("%d of %d differ (Pillow decodes %d, refuses %d; we decode %d; %d more that Pillow decodes are refused "
          "by design: a mode or compression named as not supported; %d refused as not reproducible: JPEG strips "
          "smaller than libtiff expects, cut progressive JPEG strips)" % (diff, n, n - refused, refused, ok, design, known))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
