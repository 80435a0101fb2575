#!/usr/bin/env python3
"""scripts/fp8_accuracy.py — which SM90 (Hopper) FP8 recipe keeps the pooled embedding within cosine 0.999 of
HF transformers fp32 for every image (issue 6's FP8 target)?

Runs the CPU emulation (build/tools/sg_mxfp8_forward, kernel/cpu/cpu_mxfp8.c) with E4M3 Linear layers chosen
per kind (QKV, out-proj, FC1, FC2; the patch embedding and the MAP head stay bf16, as does attention: Q, K, V
and P in bf16, as in the Hopper megakernel) under four scale recipes:
  fp8      DeepGEMM's SM90 recipe: fp32 scales amax/448, inputs per 1 x 128 block (per token along K),
           weights per 128 x 128 block, promotion into fp32 per 128-wide K block;
  fp8pow2  the same blocks with power-of-two scales 2^ceil(log2(amax/448));
  chan     fp8chan weights: one fp32 scale per output channel (inputs still fp8, 1 x 128);
  chantok  fp8chan weights and inputs: one fp32 scale per output channel and one per token (the whole K row),
           no promotion per 128-wide K block: the Hopper megakernel's --precision fp8 FC1 (sm90_fc1_fp8.cuh). The
           emulation sums in fp32, so the tensor core's own accumulation over the whole K, unpromoted, is not
           modelled here; on an H100 the kernel measured min cosine 0.9995763 on the photos against the
           emulation's 0.999579 (same worst image; scripts/gpu-check.sh, 2026-11-26).
The product is modelled as "exact inside each 128-wide block, fp32 across blocks" (cpu_mxfp8.h); the
tensor core's own accumulation inside a block is measured separately by kernel/lab/test_sm90_fp8.c on a GPU.
The HF reference and the photo preprocessing are scripts/mxfp8_accuracy.py's (imported, not copied).

  nice python3 scripts/fp8_accuracy.py [--model /tmp/sg_full] [--photos '.carry/photos/*.jpg']
                                       [--out /tmp/sg_fp8] [--threads 2]
                                       [--only-sets FC1,FC1+FC2] [--only-recipes chan,chantok]

--only-sets takes the labels' first words in SETS (QKV+out+FC1+FC2, QKV+out+FC1, QKV+FC1+FC2, QKV+FC1,
FC1+FC2, FC1, FC2, out+FC1), --only-recipes the recipe names above (fp8, fp8pow2, chan, chantok); either
restricts the runs to those (the all-bf16 run is always made; the weights-only / inputs-only ablations only
with recipe fp8 and set QKV+out+FC1+FC2). Both default to all.
HF outputs are cached in OUT (with the model path and photo list they were made from) and reused when both
match. Reference-data tooling only (needs torch, transformers, Pillow); never used by the binary or
`make test`.
"""
import argparse
import glob
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mxfp8_accuracy as mx  # noqa: E402  (the HF reference, the tool runner, options, fixtures, report)

OTHER = "patch,head"  # never FP8 here: 0.7 % + 1.3 % of the FLOPs (docs/megakernel.md §1)
# Linear kinds in FP8 -> the kinds the tool keeps in bf16 (with OTHER).
SETS = [
    ("QKV+out+FC1+FC2", ""),
    ("QKV+out+FC1 (FC2 bf16)", "fc2"),
    ("QKV+FC1+FC2 (out bf16)", "out"),
    ("QKV+FC1", "out,fc2"),
    ("FC1+FC2", "qkv,out"),
    ("FC1", "qkv,out,fc2"),
    ("FC2", "qkv,out,fc1"),
    ("out+FC1", "qkv,fc2"),
]
# (name for --only-recipes, label, tool arguments)
RECIPES = [
    ("fp8", "fp8 1x128/128x128 fp32 scales", ["--w", "fp8", "--x", "fp8"]),
    ("fp8pow2", "fp8 power-of-two scales", ["--w", "fp8pow2", "--x", "fp8pow2"]),
    ("chan", "fp8 per-channel weights", ["--w", "fp8chan", "--x", "fp8"]),
    ("chantok", "fp8 per-channel weights, per-token inputs", ["--w", "fp8chan", "--x", "fp8chan"]),
]
# FLOP share of each Linear kind (docs/megakernel.md §1: QKV 23.5 %, out 7.8 %, MLP 63 % = FC1 + FC2).
FLOPS = {"QKV": 23.5, "out": 7.8, "FC1": 31.5, "FC2": 31.5}


def fp8_share(label):
    kinds = label.split(" ")[0].split("+")
    return sum(FLOPS[k] for k in kinds)


def references(a, photos):
    """(name, image names, pixels path, HF pooled path) per input set, HF run only when not cached."""
    sets = []
    if photos:
        px_path, ref_path = os.path.join(a.out, "photos_pixels.f32"), os.path.join(a.out, "photos_pooled.f32")
        meta_path = os.path.join(a.out, "photos_ref.json")
        meta = {"model": os.path.abspath(a.model), "photos": photos,
                "model_mtime": os.path.getmtime(os.path.join(a.model, "model.safetensors"))}
        cached = os.path.exists(meta_path) and os.path.exists(ref_path) and json.load(open(meta_path)) == meta
        if not cached:
            px = np.stack([mx.preprocess(p) for p in photos]).astype(np.float32)
            px.tofile(px_path)
            mx.hf_reference(a.model, px, a.threads).tofile(ref_path)
            json.dump(meta, open(meta_path, "w"))
        print(f"photos: HF reference {'reused from' if cached else 'written to'} {ref_path}")
        sets.append(("photos", [os.path.basename(p) for p in photos], px_path, ref_path))
    fixtures = mx.fixture_set(a.model)
    if fixtures:
        sets.append(fixtures)
    return sets


def only_args():
    """This script's own options (--only-sets, --only-recipes), taken off sys.argv before mxfp8_accuracy's
    parser sees the rest; returns (set labels, recipe names), each None for all."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--only-sets")
    ap.add_argument("--only-recipes")
    o, rest = ap.parse_known_args()
    sys.argv[1:] = rest
    sets = o.only_sets.split(",") if o.only_sets else None
    recipes = o.only_recipes.split(",") if o.only_recipes else None
    known_sets = [label.split(" ")[0] for label, _ in SETS]
    for name, known, what in [(n, known_sets, "set") for n in sets or []] + \
                             [(n, [r[0] for r in RECIPES], "recipe") for n in recipes or []]:
        if name not in known:
            sys.exit(f"fp8_accuracy: {what} '{name}', expected one of {', '.join(known)}")
    return sets, recipes


def main():
    only_sets, only_recipes = only_args()
    a = mx.parse_args("/tmp/sg_fp8")
    tool = mx.prepare(a)
    sets = references(a, sorted(glob.glob(a.photos)))

    report = mx.new_report(a.model)
    runs = [("all Linears bf16 (the BF16 megakernel)", "bf16", ["--mode", "bf16"])]

    def wanted(rname, slabel):
        return (only_recipes is None or rname in only_recipes) and \
            (only_sets is None or slabel.split(" ")[0] in only_sets)

    for rname, rlabel, rargs in RECIPES:
        for slabel, bf16 in SETS:
            if not wanted(rname, slabel):
                continue
            kinds = OTHER + ("," + bf16 if bf16 else "")
            runs.append((f"{slabel} [{rlabel}]", slabel, rargs + ["--attn", "bf16", "--bf16", kinds]))
    if wanted("fp8", SETS[0][0]):
        runs.append(("weights only fp8, QKV+out+FC1+FC2", "-", ["--w", "fp8", "--x", "bf16", "--attn", "bf16",
                                                                "--bf16", OTHER]))
        runs.append(("inputs only fp8, QKV+out+FC1+FC2", "-", ["--w", "bf16", "--x", "fp8", "--attn", "bf16",
                                                               "--bf16", OTHER]))
    for set_name, names, px_path, ref_path in sets:
        print(f"\n== {set_name} ({len(names)} images), reference HF fp32 eager, model {a.model}")
        print(f"| {'FP8 Linears [recipe]':66s} | FP8 FLOPs | min cos | mean cos | max abs Δ | ≥ 0.999 |")
        print("|---|---:|---:|---:|---:|:---:|")
        for label, share_key, args in runs:
            cos, mn, mean, mxa = mx.run_tool(tool, a.model, px_path, ref_path, args, a.threads)
            share = f"{fp8_share(share_key):.1f} %" if share_key not in ("bf16", "-") else "-"
            ok = "yes" if mn >= 0.999 else "no"
            print(f"| {label:66s} | {share} | {mn:.6f} | {mean:.6f} | {mxa:.4f} | {ok} |", flush=True)
            report["runs"].append({"set": set_name, "run": label, "args": args, "min_cos": mn, "mean_cos": mean,
                                   "max_abs": mxa, "per_image": dict(zip(names, cos))})
    mx.write_report(a.out, report)


if __name__ == "__main__":
    main()
