#!/usr/bin/env python3
"""scripts/psd_differential.py — random and damaged PSDs, our decoder's verdict and pixels against Pillow's.

Design: a seeded generator writes N PSDs section by section (struct): every colour mode (bitmap, greyscale,
indexed, RGB, CMYK, multichannel, duotone, Lab, and numbers Pillow has no mode for), 1/8/16/32 bits and odd
depths, 0-56 channels (the mode's, more, fewer), sizes from 1 x 1 to 40 x 20, now and then up to 400 x 200 (past
Pillow's 64 KiB reads), 0 or huge; colour mode data of 768 bytes or other lengths; image resources (odd and even
names and data, an ICC profile, the section length right or wrong); a layer and mask section (layer records with
channel lists, blend data, masks, names and channel data, now and then a layer count or block length the records
do not match, or random bytes: Pillow 12 and 13 never parse the records to open or convert, so a decoder that did
would refuse files Pillow decodes); compression raw, PackBits (row byte counts right or wrong, packets per row
or across rows, 0x80 no-ops) or a ZIP / unknown id. About half the files are damaged: bytes changed (header or
anywhere, a few or many), a section length changed, bytes inserted or removed, the file cut short, bytes
appended. Each file is decoded by Pillow (Image.open(f).convert("RGB"); any exception is a refusal) in the Python
given by --python and by DUMP (tests/fuzz/gif_dump.c, a generic sg_decode_rgb driver, given Pillow's major
version). Prints every file whose verdict, size or pixels differ and a count; Lab files Pillow decodes and we
refuse on purpose (Pillow converts Lab through LittleCMS) are counted apart.
Usage: psd_differential.py DUMP OUTDIR [N] [SEED] [--python PY]
"""
import struct
import subprocess
import sys

from pillow_oracle import ORACLE, parse_args, verdicts, write_cases

NEED = {0: 1, 1: 1, 2: 1, 3: 3, 4: 4, 7: 1, 8: 1, 9: 3}  # channels Pillow's mode needs, by colour mode


def pixels(rng, n):
    """n bytes: random, smooth (long runs for PackBits) or a few values."""
    kind = rng.randrange(3)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(n))
    if kind == 1:
        out, v = bytearray(), rng.randrange(256)
        while len(out) < n:
            if rng.random() < 0.3:
                v = rng.randrange(256)
            out += bytes([v]) * rng.randint(1, 12)
        return bytes(out[:n])
    vals = [rng.randrange(256) for _ in range(rng.randint(1, 3))]
    return bytes(rng.choice(vals) for _ in range(n))


def packbits(rng, data):
    """PackBits packets for data: runs (2-128 copies) and literals (1-128 bytes), a 0x80 no-op now and then."""
    out, i = bytearray(), 0
    while i < len(data):
        if rng.random() < 0.03:
            out.append(0x80)
        run = 1
        while i + run < len(data) and run < 128 and data[i + run] == data[i]:
            run += 1
        if run >= 2 and rng.random() < 0.9:
            out += bytes([257 - run, data[i]])
            i += run
        else:
            k = min(rng.randint(1, 128), len(data) - i)
            out.append(k - 1)
            out += data[i:i + k]
            i += k
    return bytes(out)


def pascal(rng, pad):
    """A Pascal string padded to a multiple of pad (its length byte included); sometimes unpadded."""
    name = bytes(rng.randrange(32, 127) for _ in range(rng.choice([0, 0, 1, 2, 5, 11])))
    s = bytes([len(name)]) + name
    if rng.random() < 0.9:
        s += bytes(-len(s) % pad)
    return s


def resources(rng):
    """Image resource entries: signature, id, name, data (padded to even, or not now and then)."""
    out = b""
    for _ in range(rng.choice([0, 1, 1, 2, 4])):
        rid = rng.choice([1005, 1033, 1036, 1039, 1060, rng.randrange(65536)])  # 1039: ICC profile
        data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 4, 28, rng.randint(0, 200)])))
        pad = bytes(len(data) & 1) if rng.random() < 0.9 else b""
        out += rng.choice([b"8BIM", b"8BIM", b"MeSa"]) + struct.pack(">H", rid) + pascal(rng, 2) + \
            struct.pack(">I", len(data)) + data + pad
    return out


def layer_section(rng, bits):
    """A layer and mask information section: layer records and their channel data, a global mask, or junk."""
    pick = rng.randrange(6)
    if pick == 0:
        return b""
    if pick == 1:
        return bytes(rng.randrange(256) for _ in range(rng.choice([4, 8, rng.randint(1, 40)])))
    count = rng.choice([0, 1, 1, 2, 3])
    recs, chdata = b"", b""
    for _ in range(count):
        top, left = rng.randint(-3, 5), rng.randint(-3, 5)
        bottom, right = top + rng.choice([0, 1, 3, 6, -1]), left + rng.choice([0, 1, 4, 7, -1])
        ids = rng.choice([[0], [0, 1, 2], [-1, 0, 1, 2], [0, 1, 2, 3], [-1, 0, 1, 2, -2],
                          [rng.randint(-3, 8) for _ in range(rng.randint(0, 6))]])
        lw, lh = max(right - left, 0), max(bottom - top, 0)
        datas = []
        for _ in ids:
            comp = rng.choice([0, 0, 1])
            rows = [pixels(rng, lw * max(bits, 8) // 8) for _ in range(lh)]
            if comp == 0:
                datas.append(struct.pack(">H", 0) + b"".join(rows))
            else:
                enc = [packbits(rng, r) for r in rows]
                datas.append(struct.pack(">H", 1) + b"".join(struct.pack(">H", len(e)) for e in enc) + b"".join(enc))
        recs += struct.pack(">iiiiH", top, left, bottom, right, len(ids))
        recs += b"".join(struct.pack(">hI", c, len(d)) for c, d in zip(ids, datas))
        recs += b"8BIM" + rng.choice([b"norm", b"mul ", b"scrn"]) + bytes([rng.randrange(256), 0, rng.randrange(32), 0])
        mask = rng.choice([b"", struct.pack(">iiiiBB", 0, 0, 2, 2, 0, 0) + bytes(2)])
        blend = rng.choice([b"", bytes(rng.randrange(256) for _ in range(8))])
        extra = struct.pack(">I", len(mask)) + mask + struct.pack(">I", len(blend)) + blend + pascal(rng, 4)
        if rng.random() < 0.2:
            extra += b"8BIMluni" + struct.pack(">I", 4) + bytes(4)
        recs += struct.pack(">I", len(extra)) + extra
        chdata += b"".join(datas)
    if rng.random() < 0.2:  # a count the records do not hold (Pillow's _layerinfo would refuse most)
        count = rng.choice([count + 1, 1000, -1000, rng.randint(-32768, 32767)])
    info = struct.pack(">h", rng.choice([count, -count])) + recs + chdata
    info += bytes(len(info) & 1)
    glob = rng.choice([struct.pack(">I", 0), b"", struct.pack(">I", 13) + bytes(13)])
    size = len(info) if rng.random() < 0.8 else rng.choice([2, 10, len(info) + 20, max(len(info) - 20, 0)])
    return struct.pack(">I", size) + info + glob


def psd(rng):
    mode = rng.choice([0, 0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 7, 8, 9, 9, rng.choice([5, 6, 10, 11, 65535])])
    good = 1 if mode == 0 and rng.random() < 0.5 else 8
    bits = good if rng.random() < 0.85 else rng.choice([1, 8, 16, 16, 32, 32, 2, 0, 24])
    need = NEED.get(mode, 3)
    nch = need + rng.choice([0, 0, 0, 1, 1, 2]) if rng.random() < 0.9 else rng.choice([0, need - 1, rng.randint(1, 56)])
    nch = max(nch, 0)
    w, h = rng.randint(1, rng.choice([3, 17, 40])), rng.randint(1, rng.choice([3, 20]))
    if rng.random() < 0.02:  # past Pillow's 64 KiB reads
        w, h = rng.randint(100, 400), rng.randint(50, 200)
    huge = rng.random() < 0.04
    if huge:
        w, h = rng.choice([(0, 5), (5, 0), (100000, 100000), (20000, 5000), (1 << 31, 1), (4096, 4096), (70000, 1)])
    version = 1 if rng.random() < 0.97 else rng.choice([0, 2, 3])
    head = b"8BPS" + struct.pack(">H6xHIIHH", version, nch, h, w, bits, mode)

    if mode == 2:
        cm = bytes(rng.randrange(256) for _ in range(rng.choice([768, 768, 768, 0, 767, 769, 772, 3])))
    elif mode == 8 or rng.random() < 0.1:
        cm = bytes(rng.randrange(256) for _ in range(rng.choice([0, 4, 768, rng.randint(1, 60)])))
    else:
        cm = b""
    res = resources(rng)
    lm = layer_section(rng, bits)

    comp = rng.choice([0, 0, 1, 1, 1]) if rng.random() < 0.93 else rng.choice([2, 3, 4, 256])
    rowbytes = ((w * bits + 7) // 8) if not huge else 0
    chans = [[pixels(rng, rowbytes) for _ in range(h)] for _ in range(nch)] if not huge else []
    if comp == 1 and not huge:
        if rng.random() < 0.8:  # each row its own packets, as Photoshop writes them
            enc = [[packbits(rng, r) for r in ch] for ch in chans]
        else:  # one stream a channel, packets crossing rows (runs cut at a row's end by Pillow)
            enc = []
            for ch in chans:
                s = packbits(rng, b"".join(ch))
                cuts = sorted(rng.randint(0, len(s)) for _ in range(h - 1))
                enc.append([s[a:b] for a, b in zip([0] + cuts, cuts + [len(s)])])
        counts = [len(e) for ch in enc for e in ch]
        if rng.random() < 0.1:  # wrong counts
            counts = [rng.choice([c, 0, c + 1, max(c - 1, 0), rng.randrange(65536)]) for c in counts]
        data = b"".join(struct.pack(">H", c) for c in counts) + b"".join(e for ch in enc for e in ch)
    elif huge:
        data = bytes(rng.choice([0, 64, 10000]))
        if comp == 1 and data:
            data += b"\x81\x07" * 2
    else:
        data = b"".join(r for ch in chans for r in ch)
        if comp > 1:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 60)))

    lens = [len(cm), len(res), len(lm)]
    damage = rng.randrange(14)
    if damage == 1:  # a section length off
        k = rng.randrange(3)
        lens[k] = rng.choice([lens[k] + 1, max(lens[k] - 1, 0), lens[k] + rng.randint(2, 50), 0, 10 ** 6,
                              0xFFFFFFFF, max(lens[k] - rng.randint(2, 50), 0)])
    out = bytearray(head + struct.pack(">I", lens[0]) + cm + struct.pack(">I", lens[1]) + res +
                    struct.pack(">I", lens[2]) + lm + struct.pack(">H", comp) + data)
    if damage == 2:  # header bytes changed
        for _ in range(rng.randint(1, 2)):
            out[rng.randrange(4, 26)] = rng.randrange(256)
    if damage == 3:  # bytes changed anywhere after the signature
        for _ in range(rng.randint(1, 4)):
            out[rng.randrange(4, len(out))] = rng.randrange(256)
    if damage in (4, 5):  # cut short
        out = out[:rng.randrange(len(out))]
    if damage == 6:  # cut near the end
        out = out[:max(len(out) - rng.randint(1, 8), 0)]
    if damage == 7:
        out += bytes(rng.randrange(256) for _ in range(rng.randint(1, 30)))
    if damage == 8:  # many bytes changed
        for _ in range(rng.randint(5, 30)):
            out[rng.randrange(4, len(out))] = rng.randrange(256)
    if damage == 9:  # bytes inserted or removed: every later section moves
        at = rng.randrange(26, len(out) + 1)
        out[at:at + rng.randint(0, 3)] = bytes(rng.randrange(256) for _ in range(rng.randint(0, 3)))
    return bytes(out)


def main():
    dump, outdir, n, seed, py, _ = parse_args(sys.argv[1:])
    paths = write_cases(outdir, n, seed, "s%05d.psd", psd)
    major = subprocess.run([py, "-c", "import PIL; print(PIL.__version__.split('.')[0])"], capture_output=True,
                           text=True, check=True).stdout.strip()
    ours, theirs = verdicts([dump, major], paths), verdicts([py, "-c", ORACLE], paths)
    diff = lab = ok = 0
    for p in paths:
        a, b = ours.get(p, "missing"), theirs.get(p, "missing")
        ok += b.startswith("OK")
        if a.split()[0] == b.split()[0] == "ERR" or a == b:
            continue
        if a.startswith("ERR PSD: Lab colour") and b.startswith("OK"):
            lab += 1  # on purpose: Pillow converts Lab through LittleCMS
            continue
        diff += 1
        print(p, "| ours:", a, "| pillow:", b)
    print("%d files (Pillow decodes %d), %d differ, %d Lab files Pillow decodes and we refuse on purpose"
          % (n, ok, diff, lab))


if __name__ == "__main__":
    main()
