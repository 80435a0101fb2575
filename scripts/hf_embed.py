#!/usr/bin/env python3
"""scripts/hf_embed.py — HF transformers fp32 pooler_output for image files: the reference gpu-check.sh compares
every GPU backend against.

  python3 scripts/hf_embed.py WEIGHTS_DIR OUT.npy FILE...
  python3 scripts/hf_embed.py WEIGHTS_DIR OUT.npy --list LISTFILE   (one path per line: a whole corpus)

Preprocessing is HF's PIL path, which siglip2-embed reproduces bit for bit (model-spec.md §2, §6):
Image.open → ImageOps.exif_transpose → convert("RGB") → resize((S, S), BILINEAR) → float32(p * (1/255) in
double) → (x - 0.5) / 0.5 → CHW. The model is SiglipVisionModel in float32, eager attention, on the GPU with
TF32 off (model-spec.md §8: 2e-6 from an f64 reference), else on the CPU. Writes OUT.npy [N, D] float32 and
OUT.npy.paths (the files, one per line, in row order). Many files are decoded and resized on a pool of worker
processes (up to 16), in order, while the model runs batches of 16 in this process.
"""
import os
import sys
from functools import partial
from multiprocessing import Pool

import numpy as np
import torch
from PIL import Image, ImageOps
from transformers import SiglipVisionModel


def pixels(path, size):
    im = ImageOps.exif_transpose(Image.open(path)).convert("RGB").resize((size, size), Image.BILINEAR)
    x = (np.asarray(im, dtype=np.float64) * (1 / 255)).astype(np.float32)
    x = (x - np.float32(0.5)) / np.float32(0.5)
    return x.transpose(2, 0, 1)


def pixel_batches(files, size, pool, n=16):
    """The files' pixel arrays, n at a time, in order; decoded on the pool's workers when there is one."""
    if pool is None:
        arrays = (pixels(f, size) for f in files)
    else:
        arrays = pool.imap(partial(pixels, size=size), files, chunksize=4)
    batch = []
    for a in arrays:
        batch.append(a)
        if len(batch) == n:
            yield np.stack(batch)
            batch = []
    if batch:
        yield np.stack(batch)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    wdir, out = sys.argv[1], sys.argv[2]
    if sys.argv[3] == "--list":
        if len(sys.argv) != 5:
            sys.exit(__doc__)
        with open(sys.argv[4]) as f:
            files = [l.rstrip("\n") for l in f if l.strip()]
    else:
        files = sys.argv[3:]
    if not files:
        sys.exit("hf_embed: no files")
    procs = min(16, os.cpu_count() or 1)
    # The workers are forked before torch touches the GPU; they only decode and resize.
    pool = Pool(procs) if procs > 1 and len(files) > 32 else None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = SiglipVisionModel.from_pretrained(wdir, torch_dtype=torch.float32, attn_implementation="eager")
    model = model.to(dev).eval()
    size = model.config.image_size
    rows = []
    with torch.inference_mode():
        for x in pixel_batches(files, size, pool):
            rows.append(model(pixel_values=torch.from_numpy(x).to(dev)).pooler_output.float().cpu().numpy())
    if pool is not None:
        pool.close()
        pool.join()
    emb = np.concatenate(rows)
    np.save(out, emb)
    with open(out + ".paths", "w") as f:
        f.write("".join(p + "\n" for p in files))
    print(f"hf_embed: {len(files)} images, fp32 on {dev}, D = {emb.shape[1]}, torch {torch.__version__}"
          + (f", decoded on {procs} processes" if pool is not None else ""))


if __name__ == "__main__":
    main()
