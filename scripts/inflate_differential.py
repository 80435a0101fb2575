#!/usr/bin/env python3
"""scripts/inflate_differential.py — preprocess/inflate.c against its previous version and Python's zlib.

Builds tests/fuzz/inflate_dump.c with the working tree's preprocess/inflate.c and, under the names
old_zlib_inflate / old_zlib_inflate_exact, the inflate.c of a git revision (--old, default HEAD), then feeds it
streams: random, low-entropy, repetitive and photo-like data compressed at every level, strategy (default,
FILTERED, HUFFMAN_ONLY, RLE, FIXED), window (9..15 bits), memLevel and with flushes between pieces (stored and
multi-block streams), and empty data; each then whole, cut at a random length, with bytes flipped, with
garbage appended or fully random after a valid header. Each goes to sg_zlib_inflate with caps below, at and
above its true length and to sg_zlib_inflate_exact with n below, at and above it. Counts differences between
new and old (result code, output length, output hash; must be 0) and between new and Python:
decompressobj().decompress(data, cap) (zlib.error -> -1, unconsumed_tail -> 1, else 0 and the bytes) and,
for exact n, decompress(data, n) giving n bytes without zlib.error (n = 0: success). Exit status 1 on any
new-vs-old difference.
With --lzw, also TIFF LZW streams of the same data (random Clears, then mutated) through sg_tiff_lzw into n
bytes (at, below and above the length), against the previous tiff_codecs.c only.
  python3 scripts/inflate_differential.py [--n 20000] [--seed 1] [--old REV] [--san] [--lzw]
"""
import argparse, hashlib, os, random, struct, subprocess, sys, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(old_rev, san):
    flags = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"] if san else ["-O2"]
    src = subprocess.run(["git", "-C", ROOT, "show", f"{old_rev}:preprocess/inflate.c"], check=True,
                         capture_output=True).stdout
    tmp = f"/tmp/inflate_diff_{os.getpid()}"
    os.makedirs(tmp, exist_ok=True)
    open(f"{tmp}/old.c", "wb").write(src)
    subprocess.run(["cc", *flags, "-I", ROOT, "-c", "-Dsg_zlib_inflate=old_zlib_inflate",
                    "-Dsg_zlib_inflate_exact=old_zlib_inflate_exact", "-Dsg_zlib_inflate_png=old_zlib_inflate_png",
                    f"{tmp}/old.c", "-o", f"{tmp}/old.o"], check=True)
    src = subprocess.run(["git", "-C", ROOT, "show", f"{old_rev}:preprocess/tiff_codecs.c"], check=True,
                         capture_output=True).stdout
    open(f"{tmp}/old_codecs.c", "wb").write(src)
    subprocess.run(["cc", *flags, "-I", ROOT, "-c", "-Dsg_tiff_lzw=old_tiff_lzw", "-Dsg_tiff_packbits=old_tiff_packbits",
                    "-Dsg_tiff_deflate=old_tiff_deflate", "-Dsg_tiff_unpredict=old_tiff_unpredict",
                    f"{tmp}/old_codecs.c", "-o", f"{tmp}/old_codecs.o"], check=True)
    subprocess.run(["cc", *flags, "-Wall", "-Werror", "-I", ROOT, f"{ROOT}/tests/fuzz/inflate_dump.c",
                    f"{ROOT}/preprocess/inflate.c", f"{ROOT}/preprocess/tiff_codecs.c", f"{tmp}/old.o",
                    f"{tmp}/old_codecs.o", "-o", f"{tmp}/inflate_dump"], check=True)
    return f"{tmp}/inflate_dump"


def fnv(b):
    h = 1469598103934665603
    for x in b:
        h = ((h ^ x) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def data_of(r):
    k = r.randrange(7)
    n = r.choice([0, 1, 2, r.randrange(300), r.randrange(5000), r.randrange(70000), r.randrange(300000)])
    if k == 0:
        return r.randbytes(n)
    if k == 1:
        al = r.randbytes(r.randrange(1, 6))
        return bytes(r.choice(al) for _ in range(n))
    if k == 2:
        p = r.randbytes(r.randrange(1, 300))
        return (p * (n // len(p) + 1))[:n]
    if k == 3:
        words = [r.randbytes(r.randrange(1, 9)) for _ in range(50)]
        out = bytearray()
        while len(out) < n:
            out += r.choice(words) + b" "
        return bytes(out[:n])
    # photo-like: a smooth walk with noise, as image rows
    v, out = r.randrange(256), bytearray(n)
    noise = r.choice([0, 1, 3, 8, 40])
    for i in range(n):
        v = (v + r.randint(-noise, noise)) & 255
        out[i] = v
    return bytes(out)


STRATS = [zlib.Z_DEFAULT_STRATEGY, zlib.Z_FILTERED, zlib.Z_HUFFMAN_ONLY, zlib.Z_RLE, zlib.Z_FIXED]


def compress(r, d):
    c = zlib.compressobj(r.randrange(-1, 10), zlib.DEFLATED, r.randrange(9, 16), r.randrange(1, 10), r.choice(STRATS))
    out, i = bytearray(), 0
    while i < len(d) or i == 0:
        j = len(d) if r.random() < 0.6 else min(len(d), i + r.randrange(1, 20000))
        out += c.compress(d[i:j])
        if j < len(d) and r.random() < 0.5:
            out += c.flush(r.choice([zlib.Z_SYNC_FLUSH, zlib.Z_FULL_FLUSH, zlib.Z_PARTIAL_FLUSH]))
        i = j
        if i >= len(d):
            break
    return bytes(out + c.flush())


def mutate(r, s):
    k = r.randrange(6)
    if k == 0 or not s:
        return s
    if k == 1:
        return s[:r.randrange(len(s) + 1)]
    if k == 2:
        b = bytearray(s)
        for _ in range(r.randrange(1, 4)):
            i = r.randrange(len(b))
            b[i] ^= 1 << r.randrange(8) if r.random() < 0.7 else r.randrange(1, 256)
        return bytes(b)
    if k == 3:
        return s + r.randbytes(r.randrange(1, 20))
    if k == 4:
        return s[:2] + r.randbytes(r.randrange(0, 400))
    b = bytearray(s[:r.randrange(len(s) + 1)])  # cut after a flip
    if b:
        b[r.randrange(len(b))] ^= 1 << r.randrange(8)
    return bytes(b)


def lzw(r, d):
    """TIFF LZW (MSB first, 9..12 bits, early change) with random Clears, as libtiff writes it."""
    out, acc, nacc = bytearray(), 0, 0
    def put(c, w):
        nonlocal acc, nacc
        acc, nacc = acc << w | c, nacc + w
        while nacc >= 8:
            out.append(acc >> (nacc - 8) & 255)
            nacc -= 8
            acc &= (1 << nacc) - 1
    tab, nxt, w = {}, 258, 9
    put(256, 9)
    cur = b""
    for ch in d:
        s = cur + bytes([ch])
        if len(s) == 1 or s in tab:
            cur = s
            continue
        put(cur[0] if len(cur) == 1 else tab[cur], w)
        tab[s] = nxt
        nxt += 1
        if nxt >= 1 << w and w < 12:
            w += 1
        if nxt >= 4093 or r.random() < 0.0005:
            put(256, w)
            tab, nxt, w = {}, 258, 9
        cur = bytes([ch])
    if cur:
        put(cur[0] if len(cur) == 1 else tab[cur], w)
        nxt += 1
        if nxt >= 1 << w and w < 12:
            w += 1
    put(257, w)
    if nacc:
        put(0, 8 - nacc)
    return bytes(out)


def py_inflate(s, cap):
    d = zlib.decompressobj()
    try:
        o = d.decompress(s, cap)
    except zlib.error:
        return (-1, 0, fnv(b""))
    if d.unconsumed_tail:
        return (1, 0, fnv(b""))
    return (0, len(o), fnv(o))


def py_exact(s, n):
    if n == 0:
        return (0, 0, fnv(b""))
    d = zlib.decompressobj()
    try:
        o = d.decompress(s, n)
    except zlib.error:
        o = b""
    if len(o) == n:
        return (0, n, fnv(o))
    return (-1, n, 0)  # a failure's output is not compared (inflate_dump.c prints 0)


def dump(i, rec):
    """Writes a differing record (mode, cap or n, length, stream) where it can be replayed from."""
    p = f"/tmp/inflate_diff_case_{os.getpid()}_{i}.bin"
    open(p, "wb").write(rec)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--old", default="HEAD")
    ap.add_argument("--san", action="store_true")
    ap.add_argument("--lzw", action="store_true", help="also TIFF LZW streams through sg_tiff_lzw (new vs old only)")
    a = ap.parse_args()
    exe = build(a.old, a.san)
    r = random.Random(a.seed)
    recs, expect = [], []
    for _ in range(a.n):
        d = data_of(r)
        full = compress(r, d)
        s = mutate(r, full)
        true = len(d)
        for _ in range(2):
            cap = r.choice([max(true - 1, 1), max(true, 1), true + 1, r.randrange(1, true + 2), 1 << 20,
                            r.randrange(1, 300)])
            recs.append(struct.pack("<BQI", ord("i"), cap, len(s)) + s)
            expect.append(py_inflate(s, cap))
            n = r.choice([true, max(true - 1, 0), true + 1, r.randrange(0, true + 2), 0, r.randrange(1, 300)])
            recs.append(struct.pack("<BQI", ord("x"), n, len(s)) + s)
            expect.append(py_exact(s, n))
        if a.lzw and len(d) < 80000:
            s = mutate(r, lzw(r, d))
            for n in {len(d), max(len(d) - 1, 0), len(d) + 1, r.randrange(0, len(d) + 2)}:
                recs.append(struct.pack("<BQI", ord("l"), n, len(s)) + s)
                expect.append(None)
    p = subprocess.run([exe], input=b"".join(recs), capture_output=True)
    if p.returncode:
        print("harness failed", p.returncode, p.stderr.decode()[-3000:])
        return 1
    lines = p.stdout.decode().splitlines()
    assert len(lines) == len(recs), (len(lines), len(recs))
    diff_old = diff_py = lzw_n = lzw_ok = 0
    verdicts, diff_mode = {}, {}
    for i, (ln, ex) in enumerate(zip(lines, expect)):
        f = ln.split()
        new = (int(f[0]), int(f[1]), int(f[2], 16))
        old = (int(f[3]), int(f[4]), int(f[5], 16))
        mode = chr(recs[i][0])
        verdicts[(mode, new[0])] = verdicts.get((mode, new[0]), 0) + 1
        if new != old:
            diff_old += 1
            diff_mode[mode] = diff_mode.get(mode, 0) + 1
            if diff_old <= 10:
                print("NEW!=OLD", i, mode, new, old, "record:", dump(i, recs[i]))
        if ex is None:  # LZW: against the previous version only
            if mode == "l":
                lzw_n += 1
                lzw_ok += new[0] == 0
        elif new != ex:
            diff_py += 1
            if diff_py <= 10:
                print("NEW!=PYTHON", i, mode, new, ex, "record:", dump(i, recs[i]))
    print(f"seed {a.seed}: {len(recs)} calls, {sum(len(x) for x in recs)} bytes; verdicts {sorted(verdicts.items())}; "
          f"new vs old: {diff_old} differences {sorted(diff_mode.items())}; new vs Python zlib: {diff_py} differences; "
          f"LZW (sg_tiff_lzw, in those calls): {lzw_n} calls, {lzw_ok} decoded")
    return 1 if diff_old else 0


if __name__ == "__main__":
    sys.exit(main())
