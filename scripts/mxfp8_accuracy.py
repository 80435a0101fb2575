#!/usr/bin/env python3
"""scripts/mxfp8_accuracy.py — accuracy of the emulated SM100 numerics (MXFP8 Linear layers, bf16 attention)
against HF transformers fp32, per image, on real photos and the fixture inputs.

Steps:
  1. HF reference: SiglipVisionModel (fp32, eager attention, CPU) from MODEL_DIR (a full-size random
     checkpoint from `python3 scripts/make_fixtures.py --full-size /tmp/sg_full`, or the real one) on each
     photo, preprocessed the PIL way: ImageOps.exif_transpose -> convert("RGB") -> resize((224, 224),
     BILINEAR) -> float32(p * (1/255) in double) -> (x - 0.5) / 0.5 (kernel/model.h sg_pixel_to_float).
  2. Our emulation: build/tools/sg_mxfp8_forward on the same float pixels, once per mode / ablation.
  3. Per image cosine and max |d| vs HF; min/mean per run; the issue's target is cos >= 0.999 for every image.
If MODEL_DIR also holds pixels.f32 + pooled.f32 (make_fixtures' reference inputs) those are measured too.

  nice python3 scripts/mxfp8_accuracy.py [--model /tmp/sg_full] [--photos '.carry/photos/*.jpg']
                                         [--out /tmp/sg_mxfp8] [--threads 2] [--quick]

Reference-data tooling only (needs torch, transformers, Pillow); never used by the binary or `make test`.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (label, tool arguments). The first is the SM100 plan; the rest are context and ablations.
RUNS = [
    ("mxfp8 (SM100 plan: MXFP8 linears, bf16 Q/K/V/P)", ["--mode", "mxfp8"]),
    ("bf16 weights only", ["--mode", "bf16w"]),
    ("bf16 weights+inputs+attention", ["--mode", "bf16"]),
    ("fp32 (emulation plumbing)", ["--mode", "fp32"]),
    ("MXFP8 weights only", ["--w", "mxfp8", "--x", "fp32", "--attn", "fp32"]),
    ("MXFP8 inputs only", ["--w", "fp32", "--x", "mxfp8", "--attn", "fp32"]),
    ("bf16 attention only", ["--mode", "fp32", "--attn", "bf16"]),
    ("mxfp8, FC1+FC2 only (rest bf16)", ["--mode", "mxfp8", "--bf16", "patch,qkv,out,head"]),
    ("mxfp8, head in bf16", ["--mode", "mxfp8", "--bf16", "head"]),
]


def preprocess(path):
    from PIL import Image, ImageOps
    im = ImageOps.exif_transpose(Image.open(path)).convert("RGB").resize((224, 224), Image.BILINEAR)
    a = np.asarray(im, dtype=np.uint8).astype(np.float64) * (1.0 / 255.0)
    x = (a.astype(np.float32) - np.float32(0.5)) / np.float32(0.5)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def hf_reference(model_dir, pixels, threads):
    import torch
    from transformers import SiglipVisionModel
    torch.set_num_threads(threads)
    model = SiglipVisionModel.from_pretrained(model_dir, attn_implementation="eager", dtype=torch.float32).eval()
    outs = []
    with torch.no_grad():
        for i in range(0, len(pixels), 4):
            outs.append(model(pixel_values=torch.from_numpy(pixels[i:i + 4])).pooler_output.float().numpy())
    return np.concatenate(outs).astype(np.float32)


def run_tool(tool, model, px_path, ref_path, args, threads):
    cmd = ["nice", tool, model, px_path, "--ref", ref_path, "--threads", str(threads)] + args
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 2):
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr}")
    cos = [float(m.group(1)) for m in re.finditer(r"^image \d+: cos (\S+)", p.stdout, re.M)]
    s = re.search(r"summary: .* min_cos (\S+) mean_cos (\S+) max_abs (\S+)", p.stdout)
    return cos, float(s.group(1)), float(s.group(2)), float(s.group(3))


def parse_args(default_out, quick=False):
    """The options of both accuracy scripts (this one and fp8_accuracy.py); --quick only where asked for."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="/tmp/sg_full")
    ap.add_argument("--photos", default=os.path.join(ROOT, ".carry/photos/*.jpg"))
    ap.add_argument("--out", default=default_out)
    ap.add_argument("--threads", type=int, default=2)
    if quick:
        ap.add_argument("--quick", action="store_true", help="only the first four runs")
    return ap.parse_args()


def prepare(a):
    """Exits naming the fix when the model or the tool is missing; makes the output folder; returns the tool."""
    st = os.path.join(a.model, "model.safetensors")
    if not os.path.exists(st):
        sys.exit(f"{st} missing: run `python3 scripts/make_fixtures.py --full-size {a.model} --with-reference 3`")
    tool = os.path.join(ROOT, "build/tools/sg_mxfp8_forward")
    if not os.path.exists(tool):
        sys.exit(f"{tool} missing: run `make build/tools/sg_mxfp8_forward`")
    os.makedirs(a.out, exist_ok=True)
    return tool


def fixture_set(model_dir):
    """make_fixtures' reference inputs in the model folder as (name, image names, pixels, HF pooled), or None."""
    fx_px, fx_ref = os.path.join(model_dir, "pixels.f32"), os.path.join(model_dir, "pooled.f32")
    if not (os.path.exists(fx_px) and os.path.exists(fx_ref)):
        return None
    n = os.path.getsize(fx_px) // (3 * 224 * 224 * 4)
    return ("fixture inputs", [f"fixture{i}" for i in range(n)], fx_px, fx_ref)


def new_report(model_dir):
    """The report's head: the model and the library versions the reference came from; runs are appended."""
    import torch
    import transformers
    import PIL
    return {"model": model_dir, "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                             "Pillow": PIL.__version__, "numpy": np.__version__}, "runs": []}


def write_report(out_dir, report):
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(f"\nwrote {os.path.join(out_dir, 'report.json')}")


def main():
    a = parse_args("/tmp/sg_mxfp8", quick=True)
    tool = prepare(a)

    sets = []
    photos = sorted(glob.glob(a.photos))
    if photos:
        px = np.stack([preprocess(p) for p in photos]).astype(np.float32)
        px_path, ref_path = os.path.join(a.out, "photos_pixels.f32"), os.path.join(a.out, "photos_pooled.f32")
        px.tofile(px_path)
        hf_reference(a.model, px, a.threads).tofile(ref_path)
        sets.append(("photos", [os.path.basename(p) for p in photos], px_path, ref_path))
    fixtures = fixture_set(a.model)
    if fixtures:
        sets.append(fixtures)

    report = new_report(a.model)
    runs = RUNS[:4] if a.quick else RUNS
    for set_name, names, px_path, ref_path in sets:
        print(f"\n== {set_name} ({len(names)} images), reference HF fp32 eager, model {a.model}")
        print(f"{'run':52s} {'min cos':>10s} {'mean cos':>10s} {'max|d|':>8s}  >=0.999")
        for label, args in runs:
            cos, mn, mean, mx = run_tool(tool, a.model, px_path, ref_path, args, a.threads)
            ok = "yes" if mn >= 0.999 else "NO"
            print(f"{label:52s} {mn:10.6f} {mean:10.6f} {mx:8.4f}  {ok}")
            report["runs"].append({"set": set_name, "run": label, "args": args, "min_cos": mn, "mean_cos": mean,
                                   "max_abs": mx, "per_image": dict(zip(names, cos))})
            if label.startswith("mxfp8 (SM100"):
                print("   per image: " + ", ".join(f"{k} {v:.5f}" for k, v in zip(names, cos)))
    write_report(a.out, report)


if __name__ == "__main__":
    main()
