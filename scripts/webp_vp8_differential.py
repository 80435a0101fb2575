#!/usr/bin/env python3
"""scripts/webp_vp8_differential.py — random and damaged lossy WebPs, our VP8 decoder against Pillow 13's libwebp.

Design: a seeded generator draws N images (sizes 1..300, mostly small; photo-like, flat, noisy, striped /
checkered high-contrast, gradient content), encodes each with libwebp 1.2 through webp_vp8_encode.py (random
quality, method, segments, SNS, filter strength / sharpness / type, autofilter, 1..8 token partitions, passes,
sharp YUV, preprocessing), cwebp, or Pillow's save (quality, method), takes the "VP8 "
payload and damages some: bytes flipped anywhere (the frame header and first partition more often), the payload
cut short, the first partition's size changed, random bytes in place of the first partition's headers and modes
(random segment / filter / quantiser headers and probabilities) or of the tokens (coefficients large enough to
wrap libwebp's 16-bit transform), a random pad byte after an odd-sized payload. Each
file is a plain RIFF / WEBP / "VP8 " file with consistent sizes, so only the VP8 decoder's verdict differs
between files. Pillow (Image.open(f).convert("RGB"), MAX_IMAGE_PIXELS off; any exception is a refusal) in the
Python given by --python, against DUMP (tests/fuzz/webp_vp8_dump.c: "path OK w h fnv1a64" or "path ERR
reason"). Prints every file whose verdict, size or pixels differ, and a count. Files are kept in OUTDIR.
--noise gives every file the random-partition damage.
Usage: webp_vp8_differential.py DUMP OUTDIR [N] [SEED] [--python PY] [--noise]
"""
import io
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

import webp_files as wf
import webp_vp8_encode
from pillow_oracle import ORACLE as PILLOW_ORACLE, parse_args, verdicts, write_cases

# Pillow's side: pillow_oracle.ORACLE with no decompression-bomb cap.
ORACLE = PILLOW_ORACLE.replace('warnings.simplefilter("ignore")\n',
                               'warnings.simplefilter("ignore")\nImage.MAX_IMAGE_PIXELS = None\n')


def content(rng, w, h):
    """w x h RGB of one of several kinds, from rng (a random.Random)."""
    g = np.random.default_rng(rng.randrange(1 << 30))
    kind = rng.randrange(6)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    if kind == 0:  # photo-like: smooth waves, noise, a few hard shapes
        a = np.stack([128 + 100 * np.sin(x / rng.uniform(3, 20) + y / rng.uniform(3, 20)),
                      128 + 90 * np.cos(y / rng.uniform(3, 15)), 128 + 60 * np.sin((x + y) / rng.uniform(4, 30))], -1)
        a += g.normal(0, rng.uniform(0, 25), a.shape)
        for _ in range(rng.randrange(4)):
            x0, y0 = rng.randrange(w), rng.randrange(h)
            a[y0:y0 + rng.randrange(1, 40), x0:x0 + rng.randrange(1, 40)] = [rng.randrange(256) for _ in range(3)]
    elif kind == 1:  # flat
        a = np.zeros((h, w, 3)) + [rng.randrange(256) for _ in range(3)]
    elif kind == 2:  # noise
        a = g.integers(0, 256, (h, w, 3)).astype(np.float64)
    elif kind == 3:  # high-contrast stripes or checkers
        s = rng.randrange(1, 9)
        m = ((x // s + (y // s) * rng.randrange(2)) % 2)[..., None]
        a = m * [rng.randrange(256) for _ in range(3)] + (1 - m) * [rng.randrange(256) for _ in range(3)]
    elif kind == 4:  # gradient
        a = np.stack([x * 255 / max(w - 1, 1), y * 255 / max(h - 1, 1), (x + y) * 127 / max(w + h - 2, 1)], -1)
    else:  # blocks of random colours
        s = rng.randrange(2, 24)
        c = g.integers(0, 256, (h // s + 1, w // s + 1, 3))
        a = c[(y // s).astype(int), (x // s).astype(int)].astype(np.float64)
    return Image.fromarray(np.clip(a, 0, 255).astype(np.uint8), "RGB")


def vp8_payload(webp):
    """The "VP8 " chunk's payload of an encoder's output."""
    return next(p for t, p in wf.parse(webp) if t == b"VP8 ")


def encode(rng, im):
    r = rng.random()
    if r < 0.2:  # Pillow's own encoder (libwebp 1.6)
        b = io.BytesIO()
        im.save(b, "WEBP", quality=rng.randrange(0, 101), method=rng.randrange(0, 7))
        return vp8_payload(b.getvalue())
    if r < 0.3:  # cwebp
        args = ["cwebp", "-quiet", "-q", str(rng.randrange(0, 101)), "-m", str(rng.randrange(0, 7)),
                "-segments", str(rng.randrange(1, 5)), "-f", str(rng.choice([0, rng.randrange(0, 101)])),
                "-sharpness", str(rng.randrange(0, 8)), "-sns", str(rng.randrange(0, 101)),
                rng.choice(["-strong", "-nostrong"])] + (["-sharp_yuv"] if rng.random() < 0.3 else [])
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "a.png"), os.path.join(d, "a.webp")
            im.save(src)
            subprocess.run(args + [src, "-o", dst], check=True)
            with open(dst, "rb") as f:
                return vp8_payload(f.read())
    parts = rng.choice([0, 0, 1, 2, 3])  # libwebp 1.2 through ctypes: every option, token partitions included
    opts = dict(quality=float(rng.randrange(0, 101)), method=rng.randrange(0, 7), segments=rng.randrange(1, 5),
                sns_strength=rng.randrange(0, 101), filter_strength=rng.choice([0, rng.randrange(0, 101)]),
                filter_sharpness=rng.randrange(0, 8), filter_type=rng.randrange(2), autofilter=int(rng.random() < .2),
                partitions=parts, low_memory=int(parts > 0 or rng.random() < 0.2), pass_=rng.randrange(1, 4),
                use_sharp_yuv=int(rng.random() < 0.3), preprocessing=rng.randrange(0, 3))
    return vp8_payload(webp_vp8_encode.encode(im.tobytes(), im.width, im.height, **opts))


NOISE_ONLY = False  # --noise: every file gets the random-partition damage


def damage(rng, p):
    p = bytearray(p)
    kind = 0.99 if NOISE_ONLY else rng.random()
    if kind < 0.35:
        return bytes(p), kind
    if kind < 0.6:  # flipped bytes, the headers more often
        for _ in range(rng.randrange(1, 6)):
            i = rng.randrange(min(len(p), 40)) if rng.random() < 0.5 else rng.randrange(len(p))
            p[i] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
    elif kind < 0.85:  # cut short (anywhere, the headers included)
        p = p[:rng.randrange(0, len(p) + 1)] if rng.random() < 0.3 else p[:max(0, len(p) - rng.randrange(1, 40))]
    elif kind < 0.93 and len(p) > 10:  # the first partition's length
        tag = p[0] | p[1] << 8 | p[2] << 16
        part0 = max(0, (tag >> 5) + rng.randrange(-30, 31))
        tag = (tag & 31) | (part0 & 0x7FFFF) << 5
        p[0:3] = bytes([tag & 255, tag >> 8 & 255, tag >> 16])
    elif len(p) > 16:  # random bytes in a partition: garbage modes / headers, or tokens of any size
        part0 = (p[0] | p[1] << 8 | p[2] << 16) >> 5
        noise = bytes(rng.randrange(256) for _ in range(rng.randrange(8, 4000)))
        if rng.random() < 0.5 or 10 + part0 + 21 >= len(p):
            start = rng.randrange(10, min(len(p), 20))
            p = p[:start] + noise[:max(0, 10 + part0 - start)] + p[10 + part0:]
        else:
            p = p[:10 + part0 + 21] + noise
    return bytes(p), kind


def make_file(rng):
    w = rng.choice([rng.randrange(1, 33), rng.randrange(1, 301)])
    h = rng.choice([rng.randrange(1, 33), rng.randrange(1, 301)])
    p, _ = damage(rng, encode(rng, content(rng, w, h)))
    pad = b""
    if len(p) & 1:
        pad = bytes([rng.randrange(256) if rng.random() < 0.5 else 0])
    chunk = b"VP8 " + struct.pack("<I", len(p)) + p + pad
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def main():
    global NOISE_ONLY
    dump, outdir, n, seed, py, flags = parse_args(sys.argv[1:])
    NOISE_ONLY = "--noise" in flags
    paths = write_cases(outdir, n, seed, "c%05d.webp", make_file)
    ours = verdicts([dump], paths)
    theirs = verdicts([py, "-c", ORACLE], paths)
    bad = 0
    for p in paths:
        a, b = ours.get(p, "missing"), theirs.get(p, "missing")
        same = a == b or (a.startswith("ERR") and b.startswith("ERR"))
        if not same:
            bad += 1
            print("DIFF", p, "ours:", a, "| pillow:", b)
    ok = sum(1 for p in paths if theirs.get(p, "").startswith("OK"))
    print(f"{n} files (seed {seed}): {ok} decoded by Pillow, {n - ok} refused; {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
