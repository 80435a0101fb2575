#!/usr/bin/env python3
"""scripts/webp_differential.py — random WebP containers: our verdicts and pixels against Pillow's.

    python3 scripts/webp_differential.py DUMP OUTDIR [N] [SEED] [--python PY] [--container | --random | --photos DIR]

DUMP is tests/fuzz/gif_dump.c built against the library (see its header). Writes N files into OUTDIR, each a
small valid WebP (lossy, lossless, lossy with raw or lossless alpha, VP8X still with EXIF / XMP, animated with
a first frame smaller than the canvas) with one to three container changes: cut short, RIFF size changed, a
chunk's size field changed, VP8X flags or canvas changed, an ANMF's offsets or size changed, a chunk put inside
an ANMF (before or after its frame, counted in its size or not), an ALPH header
byte changed, chunks inserted (unknown, EXIF, XMP, ICCP, ANIM, ANMF, ALPH, VP8X, a second image), dropped,
swapped or repeated, odd payloads with and without their pad byte, bytes after the RIFF end. Then runs DUMP and
Pillow (scripts/pillow_oracle.py) on them and prints each disagreement (verdict, size or hash); exit status 1
when there is one. --container compares verdicts and sizes only (the codecs stubbed out while they are written).
--random makes each case from a new random image instead of the ten fixed ones: sizes 1..200 (now and then 700
wide), content noise, flat, gradient, a few colours (2..300: every colour-indexing packing), blocks, smooth; cwebp
lossless (-z 0..9, -exact, -near_lossless) or lossy (-q, -m, -segments, -f, -sharpness, -strong / -nostrong, -sns,
-sharp_yuv; alpha: -alpha_method, -alpha_filter, -alpha_q); an eighth become two-frame animations (the first
smaller than the canvas at an even offset), a sixth get EXIF / XMP orientation 1..9; 45 % are then mutated as
above. --photos DIR makes real photos instead (DIR's JPEGs cropped and resized by cwebp to a photo folder's sizes,
500 x 375 to 4032 x 3024, lossy -q 60..95 or now and then lossless, unmutated), e.g. .carry/photos.
"""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pillow_oracle as po  # noqa: E402
import webp_files as wf  # noqa: E402

EXIF6 = bytes.fromhex("49492a00080000000100120103000100000006000000")  # II*, IFD0: Orientation SHORT 6
XMP3 = b'<x:xmpmeta><rdf:Description tiff:Orientation="3"/></x:xmpmeta>'


def bases():
    """The valid files every case starts from (deterministic: cwebp and Pillow at fixed settings)."""
    rgb, rgba = wf.pattern(23, 17, 1), wf.pattern(23, 17, 2, alpha=True)
    lossy = wf.cwebp(rgb, "-q", "80")
    lossless = wf.cwebp(rgb, "-lossless")
    alpha_raw = wf.cwebp(rgba, "-q", "70", "-alpha_method", "0", "-exact")
    alpha_ll = wf.cwebp(rgba, "-q", "70", "-alpha_method", "1", "-alpha_filter", "best", "-exact")
    small = wf.cwebp(wf.pattern(9, 7, 3), "-q", "90")
    small_ll = wf.cwebp(wf.pattern(9, 7, 4, alpha=True), "-lossless", "-exact")
    anim = wf.riff([wf.vp8x(0x12, 30, 20), wf.anim(), wf.anmf(4, 6, 9, 7, wf.image_chunks(small)),
                    wf.anmf(0, 0, 23, 17, wf.image_chunks(lossless))])
    anim_ll = wf.riff([wf.vp8x(0x12, 15, 13), wf.anim(), wf.anmf(6, 2, 9, 7, wf.image_chunks(small_ll))])
    anim_alpha = wf.riff([wf.vp8x(0x12, 27, 19), wf.anim(), wf.anmf(2, 2, 23, 17, wf.image_chunks(alpha_raw))])
    return [lossy, lossless, alpha_raw, alpha_ll, wf.still_ext(alpha_ll, exif=EXIF6, xmp=XMP3),
            wf.still_ext(lossy, flags=0, exif=EXIF6), wf.still_ext(lossless, flags=0, xmp=XMP3, iccp=b"\0" * 7),
            anim, anim_ll, anim_alpha]


def split(data):
    """(chunk list as written bytes, riff size) of a file, ANMF payloads kept whole."""
    return [wf.chunk(t, p) for t, p in wf.parse(data)], struct.unpack_from("<I", data, 4)[0]


def mutate(rng, data, spares, codec):
    chunks, rs = split(data)
    riff_size, tail, cut = None, b"", None
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(16)
        if k == 13 and not codec:  # the codecs' header bytes: not while they are stubbed out
            continue
        i = rng.randrange(len(chunks))
        c = bytearray(chunks[i])
        if k == 0:
            cut = rng.randrange(12, len(data) + 4)
        elif k == 1:
            riff_size = (rs + rng.choice([-9, -8, -2, -1, 1, 2, 7, 8, 100, 1 << 31, -rs + 4, -rs + 12])) & 0xFFFFFFFF
        elif k == 2:
            n = struct.unpack_from("<I", c, 4)[0]
            n = (n + rng.choice([-17, -9, -2, -1, 1, 2, 3, 9, 1 << 30, -n - 1, -n + 5])) & 0xFFFFFFFF
            c[4:8] = struct.pack("<I", n)
        elif k == 3 and c[:4] == b"VP8X" and len(c) > 8:
            c[8] = rng.choice([rng.randrange(256), c[8] ^ (1 << rng.randrange(8))])
        elif k == 4 and c[:4] == b"VP8X" and len(c) >= 18:
            j = rng.choice([12, 13, 15, 16])
            c[j] = (c[j] + rng.choice([-2, -1, 1, 2, 64])) & 0xFF
        elif k == 5 and c[:4] == b"ANMF" and len(c) >= 24:
            j = rng.randrange(8, 24)
            c[j] = (c[j] + rng.choice([-2, -1, 1, 2, 7, 128])) & 0xFF
        elif k == 6 and c[:4] == b"ALPH" and len(c) > 8:
            c[8] = rng.randrange(256)
        elif k == 7:
            chunks.insert(rng.randrange(len(chunks) + 1), rng.choice(spares))
            continue
        elif k == 8 and len(chunks) > 1:
            del chunks[i]
            continue
        elif k == 9 and i + 1 < len(chunks):
            chunks[i], chunks[i + 1] = chunks[i + 1], chunks[i]
            continue
        elif k == 10:
            chunks.insert(i, bytes(c))
        elif k == 11:
            tail += bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 7, 8, 20])))
        elif k == 12:  # an odd payload: one byte fewer with its pad byte, or the pad byte dropped
            n = struct.unpack_from("<I", c, 4)[0]
            if n % 2 == 0 and n > 0:
                c[4:8] = struct.pack("<I", n - 1)
            elif n % 2 == 1:
                c = c[:-1]
        elif k == 13 and c[:4] in (b"VP8 ", b"VP8L") and len(c) > 8:
            j = rng.randrange(8, min(len(c), 18))
            c[j] ^= 1 << rng.randrange(8)
        elif k == 15 and c[:4] == b"ANMF" and len(c) >= 24:  # a chunk inside the frame, its size counted or not
            at = rng.choice([24, len(c)])
            extra = rng.choice(spares)
            c = c[:at] + extra + c[at:]
            if rng.random() < 0.7:
                c[4:8] = struct.pack("<I", struct.unpack_from("<I", c, 4)[0] + len(extra))
        elif k == 14:
            c[:4] = rng.choice([b"VP8 ", b"VP8L", b"ALPH", b"VP8X", b"ANMF", b"ANIM", b"EXIF", b"XMP ", b"JUNK"])
        chunks[i] = bytes(c)
    out = wf.riff(chunks, riff_size, tail)
    return out[:cut] if cut is not None else out


def random_image(rng, w, h, alpha):
    """An h x w x 3 (or 4) uint8 array of a random kind."""
    g, ch = np.random.default_rng(rng.randrange(1 << 32)), 4 if alpha else 3
    kind = rng.choice(["noise", "flat", "gradient", "few", "few", "blocks", "smooth"])
    if kind == "noise":
        return g.integers(0, 256, (h, w, ch), dtype=np.uint8)
    if kind == "flat":
        return np.broadcast_to(g.integers(0, 256, ch, dtype=np.uint8), (h, w, ch)).copy()
    if kind == "few":
        pal = g.integers(0, 256, (rng.choice([2, 3, 4, 5, 16, 17, 200, 300]), ch), dtype=np.uint8)
        return pal[g.integers(0, len(pal), (h, w))]
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    if kind == "blocks":
        b = rng.choice([2, 4, 8, 13])
        return np.stack([((x // b) * 97 + (y // b) * 57 + 31 * c) * 7 % 256 for c in range(ch)], -1).astype(np.uint8)
    v = np.stack([g.uniform(0, 255) + g.uniform(-4, 4) * x + g.uniform(-4, 4) * y for _ in range(ch)], -1)
    if kind == "smooth":
        v = v * 0.5 + g.integers(-6, 7, v.shape)
    return np.clip(v, 0, 255).astype(np.uint8)


def cwebp_flags(rng, alpha):
    if rng.random() < 0.4:
        f = ["-lossless", "-z", str(rng.randrange(10))] + (["-exact"] if rng.random() < 0.3 else [])
        return f + (["-near_lossless", str(rng.choice([0, 20, 40, 60, 80]))] if rng.random() < 0.2 else [])
    f = ["-q", str(rng.randrange(101)), "-m", str(rng.randrange(7)), "-segments", str(rng.randrange(1, 5)),
         "-f", str(rng.randrange(101)), "-sharpness", str(rng.randrange(8)), rng.choice(["-strong", "-nostrong"]),
         "-sns", str(rng.randrange(101))] + (["-sharp_yuv"] if rng.random() < 0.2 else [])
    if alpha:
        f += ["-alpha_method", str(rng.randrange(2)), "-alpha_filter", rng.choice(["none", "fast", "best"]),
              "-alpha_q", str(rng.choice([0, 50, 100, rng.randrange(101)]))]
    return f


def random_still(rng, w, h):
    alpha = rng.random() < 0.35
    return wf.cwebp(random_image(rng, w, h, alpha), *cwebp_flags(rng, alpha))


def random_case(rng):
    """A new random file (--random): a still, an animation or a still with EXIF / XMP; mutated 45 % of the time."""
    if rng.random() < 0.12:
        w, h = rng.randrange(4, 160), rng.randrange(4, 160)
        fw, fh = rng.randrange(1, w + 1), rng.randrange(1, h + 1)
        x, y = rng.randrange(0, w - fw + 1) & ~1, rng.randrange(0, h - fh + 1) & ~1
        data = wf.riff([wf.vp8x(0x12, w, h), wf.anim(), wf.anmf(x, y, fw, fh, wf.image_chunks(random_still(rng, fw, fh))),
                        wf.anmf(0, 0, w, h, wf.image_chunks(random_still(rng, w, h)))])
    else:
        w, h = (rng.randrange(1, 700), rng.randrange(1, 60)) if rng.random() < 0.05 else \
            (rng.randrange(1, 201), rng.randrange(1, 201))
        data = random_still(rng, w, h)
        if rng.random() < 0.15:
            v = rng.randrange(1, 10)
            exif = (b"Exif\0\0" if rng.random() < 0.5 else b"") + bytes.fromhex("49492a000800000001001201030001000000") + \
                struct.pack("<HHI", v, 0, 0)
            xmp = b'<x:xmpmeta><rdf:Description tiff:Orientation="%d"/></x:xmpmeta>' % v
            data = wf.still_ext(data, flags=0, **({"exif": exif} if rng.random() < 0.7 else {"xmp": xmp}))
    return data


PHOTO_SIZES = [(500, 375), (800, 600), (1600, 1200), (2048, 1536), (4032, 3024)]


def photo(rng, srcdir):
    """A real photo (--photos): one of srcdir's JPEGs cropped and resized by cwebp, lossy or now and then lossless."""
    src = os.path.join(srcdir, rng.choice(sorted(f for f in os.listdir(srcdir) if f.lower().endswith(".jpg"))))
    w, h = rng.choice(PHOTO_SIZES)
    w, h = (h, w) if rng.random() < 0.3 else (w, h)
    q = ["-lossless", "-z", "1"] if rng.random() < 0.1 else ["-q", str(rng.randrange(60, 96)), "-m", str(rng.randrange(7))]
    with tempfile.TemporaryDirectory() as d:  # crops inside 1000 x 800 from the corner: every source is larger
        out = os.path.join(d, "p.webp")
        subprocess.run(["cwebp", "-quiet", "-crop", str(rng.randrange(200)), str(rng.randrange(200)), "1000", "800",
                        "-resize", str(w), str(h), *q, src, "-o", out], check=True)
        return open(out, "rb").read()


def main():
    argv, photos = sys.argv[1:], None
    if "--photos" in argv:
        i = argv.index("--photos")
        photos, argv = argv[i + 1], argv[:i] + argv[i + 2:]
    dump, outdir, n, seed, py, flags = po.parse_args(argv)
    base = bases()
    spares = [wf.chunk(b"JUNK", b"abc"), wf.chunk(b"EXIF", EXIF6), wf.chunk(b"XMP ", XMP3), wf.chunk(b"ICCP", b"x" * 4),
              wf.chunk(*wf.anim()), wf.chunk(b"ALPH", b"\x00" + b"\x80" * 391), wf.chunk(*wf.vp8x(0x10, 23, 17)),
              wf.chunk(b"ALPH", b""), wf.chunk(b"ANMF", b"\0" * 16)] + \
        [wf.chunk(t, p) for t, p in wf.parse(base[0]) + wf.parse(base[1]) + wf.parse(base[7])[2:3]]
    codec = "--container" not in flags

    def case(rng):
        if photos:
            return photo(rng, photos)
        if "--random" in flags:
            data = random_case(rng)
            return mutate(rng, data, spares, codec) if rng.random() < 0.45 else data
        return mutate(rng, rng.choice(base), spares, codec)
    paths = po.write_cases(outdir, n, seed, "w%05d.webp", case)
    ours = po.verdicts([dump], paths)
    pil = po.verdicts([py, "-c", po.ORACLE_EXIF], paths)  # the pipeline: exif_transpose, then convert("RGB")
    bad = 0
    for p in paths:
        a, b = ours[p].split(), pil[p].split()
        same = a[0] == b[0] and (a[0] == "ERR" or a[1:3] == b[1:3] and ("--container" in flags or a[3] == b[3]))
        if not same:
            bad += 1
            print(f"{p}: ours {ours[p]} | Pillow {pil[p]}")
    ok = sum(v.startswith("OK") for v in pil.values())
    print(f"{bad} of {n} differ (Pillow decodes {ok})", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
