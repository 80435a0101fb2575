#!/usr/bin/env python3
"""scripts/hf_embed.py — HF transformers fp32 pooler_output for image files: the reference gpu-check.sh compares
every GPU backend against.

  python3 scripts/hf_embed.py WEIGHTS_DIR OUT.npy FILE...

Preprocessing is HF's PIL path, which siglip2-embed reproduces bit for bit (model-spec.md §2, §6):
Image.open → ImageOps.exif_transpose → convert("RGB") → resize((S, S), BILINEAR) → float32(p * (1/255) in
double) → (x - 0.5) / 0.5 → CHW. The model is SiglipVisionModel in float32, eager attention, on the GPU with
TF32 off (model-spec.md §8: 2e-6 from an f64 reference), else on the CPU. Writes OUT.npy [N, D] float32 and
OUT.npy.paths (the files, one per line, in row order).
"""
import sys

import numpy as np
import torch
from PIL import Image, ImageOps
from transformers import SiglipVisionModel


def pixels(path, size):
    im = ImageOps.exif_transpose(Image.open(path)).convert("RGB").resize((size, size), Image.BILINEAR)
    x = (np.asarray(im, dtype=np.float64) * (1 / 255)).astype(np.float32)
    x = (x - np.float32(0.5)) / np.float32(0.5)
    return x.transpose(2, 0, 1)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    wdir, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = SiglipVisionModel.from_pretrained(wdir, torch_dtype=torch.float32, attn_implementation="eager")
    model = model.to(dev).eval()
    size = model.config.image_size
    rows = []
    with torch.inference_mode():
        for i in range(0, len(files), 16):
            x = torch.from_numpy(np.stack([pixels(f, size) for f in files[i:i + 16]])).to(dev)
            rows.append(model(pixel_values=x).pooler_output.float().cpu().numpy())
    emb = np.concatenate(rows)
    np.save(out, emb)
    with open(out + ".paths", "w") as f:
        f.write("".join(p + "\n" for p in files))
    print(f"hf_embed: {len(files)} images, fp32 on {dev}, D = {emb.shape[1]}, torch {torch.__version__}")


if __name__ == "__main__":
    main()
