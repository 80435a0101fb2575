#!/usr/bin/env python3
"""scripts/webp_differential.py — random WebP containers: our verdicts and pixels against Pillow's.

    python3 scripts/webp_differential.py DUMP OUTDIR [N] [SEED] [--python PY] [--container]

DUMP is tests/fuzz/gif_dump.c built against the library (see its header). Writes N files into OUTDIR, each a
small valid WebP (lossy, lossless, lossy with raw or lossless alpha, VP8X still with EXIF / XMP, animated with
a first frame smaller than the canvas) with one to three container changes: cut short, RIFF size changed, a
chunk's size field changed, VP8X flags or canvas changed, an ANMF's offsets or size changed, a chunk put inside
an ANMF (before or after its frame, counted in its size or not), an ALPH header
byte changed, chunks inserted (unknown, EXIF, XMP, ICCP, ANIM, ANMF, ALPH, VP8X, a second image), dropped,
swapped or repeated, odd payloads with and without their pad byte, bytes after the RIFF end. Then runs DUMP and
Pillow (scripts/pillow_oracle.py) on them and prints each disagreement (verdict, size or hash); exit status 1
when there is one. --container compares verdicts and sizes only (the codecs stubbed out while they are written).
"""
import os
import random
import struct
import sys

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


# Pillow's side: the pipeline's Image.open -> exif_transpose -> convert("RGB"), any exception a refusal
ORACLE = po.ORACLE.replace('Image.open(p).convert("RGB")', 'ImageOps.exif_transpose(Image.open(p)).convert("RGB")') \
    .replace("from PIL import Image", "from PIL import Image, ImageOps")


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


def main():
    dump, outdir, n, seed, py, flags = po.parse_args(sys.argv[1:])
    base = bases()
    spares = [wf.chunk(b"JUNK", b"abc"), wf.chunk(b"EXIF", EXIF6), wf.chunk(b"XMP ", XMP3), wf.chunk(b"ICCP", b"x" * 4),
              wf.chunk(*wf.anim()), wf.chunk(b"ALPH", b"\x00" + b"\x80" * 391), wf.chunk(*wf.vp8x(0x10, 23, 17)),
              wf.chunk(b"ALPH", b""), wf.chunk(b"ANMF", b"\0" * 16)] + \
        [wf.chunk(t, p) for t, p in wf.parse(base[0]) + wf.parse(base[1]) + wf.parse(base[7])[2:3]]
    paths = po.write_cases(outdir, n, seed, "w%05d.webp", lambda rng: mutate(rng, rng.choice(base), spares, "--container" not in flags))
    ours = po.verdicts([dump], paths)
    pil = po.verdicts([py, "-c", ORACLE], paths)
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
