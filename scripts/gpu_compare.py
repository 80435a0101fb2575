#!/usr/bin/env python3
"""scripts/gpu_compare.py — one backend's embeddings against the HF reference, per image, matched by path.

  python3 scripts/gpu_compare.py REF.npy GOT.npy LABEL [MIN_COS] [--unit]

Both .npy files come with a .paths file beside them (one path per row; siglip2-embed writes FILE.paths for
binary formats, hf_embed.py writes the same). Prints LABEL, image count, min and mean cosine and max |d|, and
the worst image; exits 1 if any image is below MIN_COS (default 0.9999, the issue's target) or missing.
--unit compares directions: both rows are scaled to unit length before max |d| (for GOT written as the command
writes it by default, L2-normalised, against HF's unnormalised pooler output; the cosine is the same either way).
"""
import os
import sys

import numpy as np


def load(path, unit=False):
    x = np.load(path).astype(np.float64)
    if unit:
        x /= np.linalg.norm(x, axis=1, keepdims=True)
    with open(path + ".paths") as f:
        names = [os.path.realpath(l.rstrip("\n")) for l in f]
    if len(names) != x.shape[0]:
        sys.exit(f"{path}: {x.shape[0]} rows but {len(names)} paths")
    return dict(zip(names, x))


def main():
    unit = "--unit" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a != "--unit"]
    if len(args) not in (3, 4):
        sys.exit(__doc__)
    ref, got, label = load(args[0], unit), load(args[1], unit), args[2]
    min_cos = float(args[3]) if len(args) > 3 else 0.9999
    missing = [p for p in ref if p not in got]
    names = [p for p in ref if p in got]
    cos = np.array([ref[p] @ got[p] / np.sqrt((ref[p] @ ref[p]) * (got[p] @ got[p])) for p in names])
    d = np.array([np.abs(ref[p] - got[p]).max() for p in names])
    # min, mean and max stay NaN when any row is; the worst image is a NaN row first, else the lowest cosine
    if names:
        lo, mean, dmax = float(cos.min()), float(cos.mean()), float(d.max())
        worst = os.path.basename(names[int(np.argmin(np.where(np.isnan(cos), -np.inf, cos)))])
    else:
        lo, mean, dmax, worst = float("nan"), float("nan"), 0.0, "-"
    ok = not missing and len(names) > 0 and lo >= min_cos and np.isfinite(dmax)
    print(f"{'PASS' if ok else 'FAIL'}: {label}: {len(names)} images, min cosine {lo:.7f} (>= {min_cos}),"
          f" mean {mean:.7f}, max |d| {dmax:.3g}, worst {worst}" + (f", {len(missing)} missing" if missing else ""))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
