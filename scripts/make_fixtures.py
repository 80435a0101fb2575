#!/usr/bin/env python3
"""scripts/make_fixtures.py — reference checkpoints and HF transformers outputs for the parity tests.

Design: the C/CUDA encoders are checked against Hugging Face transformers in fp32 on the CPU. This script
builds small random SigLIP vision models with a fixed seed, perturbs EVERY parameter (HF's init leaves
LayerNorm at 1/0 and biases at 0, which would hide bugs in those ops), saves them with save_pretrained as
real config.json + model.safetensors, and dumps HF's outputs for fixed float32 pixel inputs.

  python3 scripts/make_fixtures.py                      # writes tests/fixtures/tiny196 and tests/fixtures/tiny16
  python3 scripts/make_fixtures.py --out DIR            # same, under DIR
  python3 scripts/make_fixtures.py --photo x.jpg        # use a real photo for the processor-made image
  python3 scripts/make_fixtures.py --full-size /tmp/sg_full [--with-reference N]
                                                        # full-size random SigLIP2-base (about 370 MB, F32),
                                                        # optionally with HF outputs for N inputs

Each fixture directory holds (all float32 little-endian, C order):
  config.json, model.safetensors   the checkpoint as transformers saves it
  pixels.f32       [N, 3, S, S]  pixel_values, in [-1, 1] like real normalised pixels
  pooled.f32       [N, D]        vision_model(...).pooler_output
  last_hidden.f32  [N, T, D]     vision_model(...).last_hidden_state (after post_layernorm)
  image0_u8.raw    [S, S, 3]     uint8 HWC RGB image whose HF-processed pixels are pixels.f32[0] (the
                                 processor does not resize an S x S image), for testing the uint8 path
  meta.json        shapes, seed, library versions, attention implementation, what each image is

tiny196 is a full SiglipModel (nested vision_config, and text_model.* tensors a loader must ignore);
tiny16 is a standalone SiglipVisionModel (flat config). Runs offline; needs torch >= 2.9, transformers 5.x,
numpy, Pillow. Reference only: nothing here is a runtime or test dependency.
"""
import argparse
import importlib.util
import json
import os
import platform
import sys

# Everything this script needs is checked before anything is imported or written: a missing Pillow used to be
# found only after a 370 MB checkpoint had been saved (versions() and the processor need it on every path).
_NEEDED = {"numpy": "numpy", "torch": "torch", "transformers": "transformers", "PIL": "Pillow"}
_missing = [pip for mod, pip in _NEEDED.items() if importlib.util.find_spec(mod) is None]
if _missing and __name__ == "__main__":
    sys.exit(f"make_fixtures: needs {', '.join(_missing)} for {sys.executable} (reference tooling, e.g. "
             f"`{os.path.basename(sys.executable)} -m pip install {' '.join(_missing)}`); nothing was written")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (SiglipConfig, SiglipModel, SiglipTextConfig, SiglipVisionConfig,  # noqa: E402
                          SiglipVisionModel)

SEED = 20261121


def perturb_(model, seed):
    """Makes every parameter non-trivial, deterministically from seed, with magnitudes that keep activations
    in the range of a trained ViT (so an absolute tolerance of 1e-4 stays meaningful)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            r = torch.randn(p.shape, generator=g, dtype=torch.float32)
            if "layer_norm" in name or "layernorm" in name:
                # LN affine params: weight around 1 (+-0.25), bias small but non-zero.
                p.copy_(1.0 + 0.25 * r if name.endswith("weight") else 0.1 * r)
            elif name.endswith("bias") or name.endswith("in_proj_bias"):
                p.copy_(0.1 * r)
            elif "position_embedding" in name or "probe" in name or "token_embedding" in name:
                p.copy_(0.5 * r)
            elif p.dim() >= 2:
                # Linear/conv weights: std 1/sqrt(fan_in) keeps each layer's output near unit scale.
                fan_in = int(np.prod(p.shape[1:]))
                p.copy_(r / np.sqrt(fan_in))
            else:
                p.copy_(0.1 * r)


def versions():
    import PIL
    return {"torch": torch.__version__, "transformers": transformers.__version__, "numpy": np.__version__,
            "Pillow": PIL.__version__, "python": platform.python_version()}


def processor(size):
    """HF's SiglipImageProcessor with the siglip2-base-patch16-224 preprocessor_config, PIL backend
    (model-spec.md §2: bit-exact with Pillow's resize, which the C preprocess/ matches)."""
    kw = dict(do_resize=True, size={"height": size, "width": size}, resample=2, do_rescale=True,
              rescale_factor=1 / 255, do_normalize=True, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5])
    try:
        from transformers import SiglipImageProcessorPil
        return SiglipImageProcessorPil(**kw), "SiglipImageProcessorPil"
    except ImportError:
        from transformers import SiglipImageProcessor
        try:
            return SiglipImageProcessor(backend="pil", **kw), "SiglipImageProcessor(backend=pil)"
        except TypeError:
            return SiglipImageProcessor(**kw), "SiglipImageProcessor"


def synthetic_photo(rng, h, w):
    """A smooth, photo-like uint8 RGB image: gradients, a few discs and mild noise."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([x / w * 200 + 20, y / h * 180 + 40, (x + y) / (w + h) * 120 + 60], axis=-1)
    for _ in range(6):
        cy, cx, rad = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(0.05, 0.3) * min(h, w)
        mask = (y - cy) ** 2 + (x - cx) ** 2 < rad ** 2
        img[mask] = rng.uniform(0, 255, size=3)
    img += rng.normal(0, 6, size=img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def make_inputs(size, n, rng, photo):
    """Returns (pixels [n,3,S,S] float32, image0 uint8 [S,S,3], descriptions)."""
    from PIL import Image
    proc, proc_name = processor(size)
    desc = []
    # 0: a uint8 S x S image through the processor (no resize happens: Pillow returns a copy at equal size).
    img0 = synthetic_photo(rng, size, size)
    px = [proc(images=Image.fromarray(img0), return_tensors="np")["pixel_values"][0]]
    desc.append(f"synthetic uint8 {size}x{size} image (image0_u8.raw) through {proc_name}")
    # 1: a larger photo (real if given), resized by the processor with PIL BILINEAR.
    if photo:
        im = Image.open(photo).convert("RGB")
        desc.append(f"photo {os.path.basename(photo)} {im.size[0]}x{im.size[1]} through {proc_name}")
    else:
        im = Image.fromarray(synthetic_photo(rng, 3 * size // 2 + 7, 2 * size + 3))
        desc.append(f"synthetic {im.size[0]}x{im.size[1]} photo-like image through {proc_name} (bilinear resize)")
    px.append(proc(images=im, return_tensors="np")["pixel_values"][0])
    # rest: uniform random floats in [-1, 1].
    for _ in range(n - 2):
        px.append(rng.uniform(-1, 1, size=(3, size, size)))
        desc.append("uniform random in [-1, 1]")
    pixels = np.ascontiguousarray(np.stack(px).astype(np.float32))
    # HF's PIL backend normalises exactly like kernel/model.h sg_pixel_to_float; the torchvision backend
    # ((p - 127.5) / 127.5) differs by 1 ulp on half the byte values (model-spec.md §2). Image 0 must be the
    # PIL-backend pixels, since the tests feed image0_u8.raw through the C formula.
    ref0 = ((np.float32(img0.astype(np.float64) * (1 / 255)) - np.float32(0.5)) / np.float32(0.5)).transpose(2, 0, 1)
    if not np.array_equal(ref0, pixels[0]):
        print(f"note: {proc_name} differs from the PIL-backend formula by up to {np.abs(ref0 - pixels[0]).max():.3g}; "
              "image 0 uses the formula", file=sys.stderr)
        pixels[0] = ref0
        desc[0] += " (pixels from the PIL-backend formula: this processor differed)"
    return pixels, img0, desc


def vision_tower(model):
    """The module whose forward takes pixel_values and returns pooler_output: SiglipModel.vision_model, or
    the SiglipVisionModel itself (transformers 5.x has no .vision_model attribute on it)."""
    return model.vision_model if isinstance(model, SiglipModel) else model


def run_reference(vision_model, pixels):
    """HF fp32 on the CPU, in one batch."""
    with torch.no_grad():
        out = vision_model(pixel_values=torch.from_numpy(pixels))
    return (out.pooler_output.float().numpy().astype(np.float32),
            out.last_hidden_state.float().numpy().astype(np.float32))


def build(vcfg, kind, seed, attn):
    torch.manual_seed(seed)
    if kind == "SiglipModel":
        tcfg = SiglipTextConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                num_attention_heads=2, max_position_embeddings=16, projection_size=32,
                                bos_token_id=None, eos_token_id=None, pad_token_id=1)
        cfg = SiglipConfig(text_config=tcfg.to_dict(), vision_config=vcfg.to_dict())
        model = SiglipModel(cfg)
    else:
        model = SiglipVisionModel(vcfg)
    model = model.float().eval()
    perturb_(model, seed)
    model.config._attn_implementation = attn
    for m in model.modules():
        if hasattr(m, "config") and hasattr(m.config, "_attn_implementation"):
            m.config._attn_implementation = attn
    return model


def write_fixture(outdir, name, vcfg, kind, n, seed, attn, photo):
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    model = build(vcfg, kind, seed, attn)
    model.save_pretrained(d)
    rng = np.random.default_rng(seed)
    pixels, img0, desc = make_inputs(vcfg.image_size, n, rng, photo)
    pooled, last = run_reference(vision_tower(model), pixels)
    # Cross-check: the other attention implementation gives the same numbers (model-spec.md §8: ~1e-6).
    other = "sdpa" if attn == "eager" else "eager"
    model_o = build(vcfg, kind, seed, other)
    pooled_o, _ = run_reference(vision_tower(model_o), pixels)
    eager_vs_sdpa = float(np.abs(pooled - pooled_o).max())
    pixels.tofile(os.path.join(d, "pixels.f32"))
    pooled.tofile(os.path.join(d, "pooled.f32"))
    last.tofile(os.path.join(d, "last_hidden.f32"))
    img0.tofile(os.path.join(d, "image0_u8.raw"))
    S, D = vcfg.image_size, vcfg.hidden_size
    T = (S // vcfg.patch_size) ** 2
    meta = {
        "model_class": kind, "n": n, "image_size": S, "patch_size": vcfg.patch_size, "hidden_size": D,
        "tokens": T, "num_layers": vcfg.num_hidden_layers, "num_heads": vcfg.num_attention_heads,
        "intermediate_size": vcfg.intermediate_size, "hidden_act": vcfg.hidden_act,
        "shapes": {"pixels.f32": [n, 3, S, S], "pooled.f32": [n, D], "last_hidden.f32": [n, T, D],
                   "image0_u8.raw": [S, S, 3]},
        "dtype": "float32 little-endian, C order (image0_u8.raw: uint8 HWC RGB)",
        "seed": seed, "attn_implementation": attn, "device": "cpu", "precision": "fp32",
        f"max_abs_pooled_{attn}_vs_{other}": eager_vs_sdpa,
        "pooled_norms": [float(x) for x in np.linalg.norm(pooled, axis=1)],
        "pooled_max_abs": float(np.abs(pooled).max()), "last_hidden_max_abs": float(np.abs(last).max()),
        "images": desc, "versions": versions(),
        "generator": "scripts/make_fixtures.py",
    }
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))
    print(f"{d}: {kind} D={D} T={T} L={vcfg.num_hidden_layers} n={n}, {size / 1e6:.2f} MB, "
          f"pooled |max| {meta['pooled_max_abs']:.3f}, {attn} vs {other} max|d| {eager_vs_sdpa:.2e}")


def write_full_size(outdir, n_ref, seed, attn, threads):
    """Full-size random SigLIP2-base vision tower (SiglipVisionConfig defaults) as a standalone
    SiglipVisionModel, plus optional HF references for n_ref inputs."""
    os.makedirs(outdir, exist_ok=True)
    vcfg = SiglipVisionConfig()  # defaults = siglip2-base-patch16-224 (model-spec.md §1)
    model = build(vcfg, "SiglipVisionModel", seed, attn)
    model.save_pretrained(outdir)
    meta = {"model_class": "SiglipVisionModel", "seed": seed, "versions": versions(), "n": 0}
    if n_ref > 0:
        torch.set_num_threads(threads) if threads else None
        rng = np.random.default_rng(seed)
        pixels, img0, desc = make_inputs(vcfg.image_size, max(n_ref, 2), rng, None)
        pixels = pixels[:n_ref]
        pooled, last = run_reference(vision_tower(model), pixels)
        pixels.tofile(os.path.join(outdir, "pixels.f32"))
        pooled.tofile(os.path.join(outdir, "pooled.f32"))
        last.tofile(os.path.join(outdir, "last_hidden.f32"))
        img0.tofile(os.path.join(outdir, "image0_u8.raw"))
        meta.update({"n": n_ref, "image_size": 224, "hidden_size": 768, "tokens": 196,
                     "attn_implementation": attn, "images": desc[:n_ref],
                     "pooled_max_abs": float(np.abs(pooled).max())})
    with open(os.path.join(outdir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"{outdir}: full-size SiglipVisionModel, {n_ref} reference inputs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                                  "fixtures"), help="parent of tiny196/ and tiny16/")
    ap.add_argument("--photo", help="a real photo for image 1 (default: a synthetic photo-like image)")
    ap.add_argument("--full-size", metavar="OUTDIR", help="write a full-size random checkpoint instead")
    ap.add_argument("--with-reference", type=int, default=0, metavar="N", help="with --full-size: HF outputs for N inputs")
    ap.add_argument("--attn", default="eager", choices=["eager", "sdpa"])
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch default)")
    ap.add_argument("--seed", type=int, default=SEED)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    if a.full_size:
        write_full_size(a.full_size, a.with_reference, a.seed, a.attn, a.threads)
        return
    out = os.path.normpath(a.out)
    # 196 tokens like the real model (224/16), but tiny: D 64, 2 layers, 4 heads of 16, F 192 (3D rather
    # than 4D keeps the directory under 3 MB).
    write_fixture(out, "tiny196", SiglipVisionConfig(hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                                                     num_attention_heads=4, image_size=224, patch_size=16),
                  "SiglipModel", 3, a.seed, a.attn, a.photo)
    # 16 tokens, odd sizes (3 heads of 16, 3 layers) to catch shape assumptions.
    write_fixture(out, "tiny16", SiglipVisionConfig(hidden_size=48, intermediate_size=96, num_hidden_layers=3,
                                                    num_attention_heads=3, image_size=32, patch_size=8),
                  "SiglipVisionModel", 5, a.seed + 1, a.attn, a.photo)


if __name__ == "__main__":
    main()
