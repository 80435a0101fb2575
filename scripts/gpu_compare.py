#!/usr/bin/env python3
"""scripts/gpu_compare.py — one backend's embeddings against the HF reference, per image, matched by path.

  python3 scripts/gpu_compare.py REF.npy GOT.npy LABEL [MIN_COS]

Both .npy files come with a .paths file beside them (one path per row; siglip2-embed writes FILE.paths for
binary formats, hf_embed.py writes the same). Prints LABEL, image count, min and mean cosine and max |d|, and
the worst image; exits 1 if any image is below MIN_COS (default 0.9999, the issue's target) or missing.
"""
import os
import sys

import numpy as np


def load(path):
    x = np.load(path)
    with open(path + ".paths") as f:
        names = [os.path.realpath(l.rstrip("\n")) for l in f]
    if len(names) != x.shape[0]:
        sys.exit(f"{path}: {x.shape[0]} rows but {len(names)} paths")
    return dict(zip(names, x.astype(np.float64)))


def main():
    ref, got, label = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
    min_cos = float(sys.argv[4]) if len(sys.argv) > 4 else 0.9999
    missing = [p for p in ref if p not in got]
    cos, dmax, worst = [], 0.0, None
    for p, r in ref.items():
        if p not in got:
            continue
        g = got[p]
        c = float(r @ g / np.sqrt((r @ r) * (g @ g)))
        cos.append(c)
        dmax = max(dmax, float(np.abs(r - g).max()))
        if worst is None or c < worst[0]:
            worst = (c, os.path.basename(p))
    ok = not missing and cos and min(cos) >= min_cos and np.isfinite(dmax)
    print(f"{'PASS' if ok else 'FAIL'}: {label}: {len(cos)} images, min cosine {min(cos) if cos else float('nan'):.7f}"
          f" (>= {min_cos}), mean {np.mean(cos) if cos else float('nan'):.7f}, max |d| {dmax:.3g}"
          f", worst {worst[1] if worst else '-'}" + (f", {len(missing)} missing" if missing else ""))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
