#!/usr/bin/env python3
"""scripts/bench_preprocess.py — Pillow's side of the preprocessing benchmark, one process, one thread.

    python3 scripts/bench_preprocess.py [--reps N] FILE...

For each file (bytes read into memory first, as build/tools/sg_pre_bench does) and each of N reps, times
  decode:  Image.open(BytesIO).convert("RGB")     (forces the full decode)
  resize:  .resize((224, 224), BILINEAR)           (HF's PIL path)
  draft:   Image.open; .draft("RGB", (224, 224)); .convert("RGB").resize(...)   (Pillow's fast JPEG path)
and prints the mean over images of the per-image median, in ms of this thread's CPU time (the build
machine is shared; wall time would count other people's work).
"""
import io
import statistics
import sys
import time

import PIL
from PIL import Image, features

clock = time.thread_time


def main():
    args = sys.argv[1:]
    reps = 3
    if args[:1] == ["--reps"]:
        reps, args = int(args[1]), args[2:]
    dec, rsz, drf = [], [], []
    for path in args:
        data = open(path, "rb").read()
        d, r, f = [], [], []
        for _ in range(reps):
            t0 = clock()
            im = Image.open(io.BytesIO(data)).convert("RGB")
            t1 = clock()
            im.resize((224, 224), Image.BILINEAR)
            t2 = clock()
            im2 = Image.open(io.BytesIO(data))
            im2.draft("RGB", (224, 224))
            im2.convert("RGB").resize((224, 224), Image.BILINEAR)
            t3 = clock()
            d.append(t1 - t0), r.append(t2 - t1), f.append(t3 - t2)
        dec.append(statistics.median(d)), rsz.append(statistics.median(r)), drf.append(statistics.median(f))
    n = len(dec)
    md, mr, mf = (1e3 * sum(x) / n for x in (dec, rsz, drf))
    print(f"images {n}, reps {reps}, Pillow {PIL.__version__} (libjpeg-turbo {features.version('libjpeg_turbo')}), one thread")
    print(f"pillow exact: decode {md:.2f} ms  resize {mr:.2f} ms  total {md + mr:.2f} ms")
    print(f"pillow draft + resize: total {mf:.2f} ms")


if __name__ == "__main__":
    main()
