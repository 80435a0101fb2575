#!/usr/bin/env python3
"""scripts/gif_differential.py — random and damaged GIFs, our decoder's verdict and pixels against Pillow's.

Design: a seeded generator writes N GIFs (random LZW minimum code sizes 0..13 and odd ones, clear / end codes in
odd places, codes past the table, a table left full at 4096 without a clear, interlace, local / global palettes
of every size and grey ramps, transparency and disposal extensions, short or odd-length extension blocks, stray
bytes between blocks, frames of zero size or past the screen, truncation, a missing trailer, a second frame,
now and then more than 64 KiB of data so Pillow's 64 KiB reads matter). Each file is decoded by Pillow
(Image.open(f).convert("RGB"); any exception is a refusal) in the Python given by --python (default: this one)
and by DUMP, a program that reads paths on stdin and prints "path OK w h fnv1a64" or "path ERR reason" (built
tests/fuzz/gif_dump.c; its top comment has the build command). Prints every file whose verdict, size or pixels
differ, and a count. Usage: gif_differential.py DUMP OUTDIR [N] [SEED] [--python PY]
"""
import struct

from pillow_oracle import compare_main

def lzw(rng, idx, bits, style):
    """Codes (value, width) for idx with Pillow's table rules; style adds damage."""
    clear, end = 1 << bits, (1 << bits) + 1
    out = []
    dnext, dsize, dfirst = clear + 2, bits + 1, True  # the decoder's state

    def emit(c):
        nonlocal dnext, dsize, dfirst
        out.append((c, dsize))
        if c == clear:
            dnext, dsize, dfirst = clear + 2, bits + 1, True
        elif c != end:
            if not dfirst and dnext < 4096:
                if dnext == (1 << dsize) - 1 and dsize < 12:
                    dsize += 1
                dnext += 1
            dfirst = False

    if rng.random() < 0.8:
        emit(clear)
    table, enext, w = {}, clear + 2, b""
    use_table = 2 <= bits <= 8 and rng.random() < 0.9
    for k in idx:
        r = rng.random()
        if r < style.get("junk", 0):
            emit(rng.randrange(0, min(1 << dsize, dnext + 3)))
            continue
        if r < style.get("junk", 0) + style.get("midclear", 0):
            if w:
                emit(table.get(w, w[0]) if len(w) > 1 else w[0])
                w = b""
            emit(clear)
            table, enext = {}, clear + 2
        if r > 1 - style.get("midend", 0):
            emit(end)
        kb = bytes([k])
        if not use_table:
            emit(k)
            continue
        if w + kb in table or not w:
            w = w + kb
            continue
        emit(table[w] if len(w) > 1 else w[0])
        if enext < 4096:
            table[w + kb] = enext
            enext += 1
        elif style.get("fullclear", True):
            emit(clear)
            table, enext = {}, clear + 2
        w = kb
    if w:
        emit(table[w] if len(w) > 1 else w[0])
    if rng.random() < 0.85:
        emit(end)
    acc = nb = 0
    data = bytearray()
    for c, s in out:
        acc |= (c & ((1 << s) - 1)) << nb
        nb += s
        while nb >= 8:
            data.append(acc & 255)
            acc >>= 8
            nb -= 8
    if nb:
        data.append(acc & 255)
    return bytes(data)


def blocks(rng, data, terminate=True):
    out, i = bytearray(), 0
    big = rng.random() < 0.7
    while i < len(data):
        n = 255 if big else rng.randint(1, 255)
        out += bytes([min(n, len(data) - i)]) + data[i:i + n]
        i += n
    if terminate:
        out.append(0)
    return bytes(out)


def palette(rng, n):
    if rng.random() < 0.1:
        return bytes(v for i in range(n) for v in (i, i, i))
    return bytes(rng.randrange(256) for _ in range(3 * n))


def extension(rng):
    kind = rng.random()
    if kind < 0.5:
        n = 4 if rng.random() < 0.85 else rng.randint(0, 6)
        body = bytes([rng.randrange(256) & rng.choice([0xFF, 0x1D, 0x01]), 10, 0, rng.randrange(256), 0, 0][:n])
        return b"!\xf9" + (bytes([n]) + body if n else b"") + b"\x00"
    if kind < 0.7:
        return b"!\xfe" + blocks(rng, bytes(rng.randrange(256) for _ in range(rng.randint(0, 300))))
    if kind < 0.9:
        if rng.random() < 0.5:
            body = b"\x0bNETSCAPE2.0" + (b"\x03\x01\x00\x00" if rng.random() < 0.6 else b"")
            return b"!\xff" + body + b"\x00"
        return b"!\xff" + blocks(rng, bytes(rng.randrange(256) for _ in range(rng.randint(0, 40))))
    return bytes([rng.choice([0x00, 0x21, 0x99, 0x2C, 0x3B])]) if rng.random() < 0.5 else b"!" + bytes(
        [rng.randrange(256)]) + blocks(rng, bytes(rng.randint(0, 20)))


def frame(rng, sw, sh, big):
    if big:
        fw, fh = rng.randint(300, 600), rng.randint(300, 600)
    elif rng.random() < 0.2:
        fw, fh = rng.randint(60, 200), rng.randint(60, 200)
    else:
        fw, fh = rng.randint(0, 24), rng.randint(0, 24)
    fx = rng.randint(0, 8) if rng.random() < 0.3 else 0
    fy = rng.randint(0, 8) if rng.random() < 0.3 else 0
    if fw == 0 and rng.random() < 0.7:
        fw = 1
    lp = rng.random() < 0.4
    lbits = rng.randrange(8)
    flags = (0x80 | lbits if lp else rng.choice([0, 0, 7])) | (0x40 if rng.random() < 0.3 else 0)
    out = b"," + struct.pack("<HHHHB", fx, fy, fw, fh, flags)
    if lp:
        out += palette(rng, 2 << lbits)
    r = rng.random()
    bits = rng.choice([0, 1, 9, 10, 11, 12, 13, 255]) if r < 0.25 else rng.choice([2, 3, 4, 8])
    vmax = min(256, 1 << bits) if bits < 13 else 256
    ncol = rng.choice([2, 4, vmax]) if rng.random() < 0.7 else vmax
    ncol = min(ncol, vmax)
    npix = fw * fh
    if rng.random() < 0.15:
        npix = rng.randint(0, npix + 20)
    idx = [rng.randrange(ncol) if rng.random() < 0.7 else 0 for _ in range(npix)]
    style = {"junk": rng.choice([0, 0, 0, 0.001, 0.02]), "midclear": rng.choice([0, 0, 0.001]),
             "midend": rng.choice([0, 0, 0, 0.0005, 0.01]), "fullclear": rng.random() < 0.6}
    out += bytes([bits & 255]) + blocks(rng, lzw(rng, idx, min(bits, 12), style), rng.random() < 0.9)
    return out


def gif(rng):
    big = rng.random() < 0.01
    sw, sh = (rng.randint(0, 30), rng.randint(0, 30)) if rng.random() < 0.9 else (0, 0)
    gp = rng.random() < 0.7
    gbits = rng.randrange(8)
    d = rng.choice([b"GIF89a", b"GIF87a"]) + struct.pack("<HHBBB", sw, sh, (0x80 | gbits) if gp else rng.choice(
        [0, 7]), rng.randrange(4), 0)
    if gp:
        d += palette(rng, 2 << gbits)
    for _ in range(rng.choice([0, 0, 1, 2, 3])):
        d += extension(rng)
    d += frame(rng, sw, sh, big)
    if rng.random() < 0.3:
        d += extension(rng) + frame(rng, sw, sh, False)
    if rng.random() < 0.8:
        d += b";"
    if rng.random() < 0.15:
        d = d[:rng.randint(13, len(d))]
    if rng.random() < 0.1:
        d = bytearray(d)
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(len(d))] = rng.randrange(256)
        d = bytes(d)
    return d


if __name__ == "__main__":
    compare_main("r%05d.gif", gif)
