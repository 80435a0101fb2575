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
           no promotion per 128-wide K block: the Hopper megakernel's --precision fp8 FC1 (sm90_fp8row.cuh). The
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
--fc2-study replaces the table above with the FC2-per-layer study (a Hopper recipe "FC1 in FP8 on every layer,
FC2 in FP8 on a subset"): FC1 chantok on all layers, FC2 in FP8 (fp8chan weights) on each layer subset, its
input H (fp32 GELU output, not rounded to bf16 first) scaled per token either by
  bound  the a-priori bound ||y_r|| C + B (y_r LayerNorm-2's output, C and B per-layer constants of FC1's
         weights and bias: cpu_mxfp8.h sg_mx_fc1_bound), scale bound/448, E4M3 satfinite; or
  chan   the exact per-token amax of H (the fp8chan input format);
FC2 of the other layers, QKV, out-proj, patch and head in bf16. Subsets: --fc2-subsets (whitespace-separated
specs: "none", "all", "firstK", "lastK" or a comma list of layer indexes; default none, all, first/last
4, 6, 7, 8, 9), and with --fc2-greedy N a greedy choice (start empty, add the layer whose FC2 in FP8 keeps the
lowest min cosine over both input sets highest; recipe --fc2-greedy-recipe, default bound) up to N layers,
each prefix then measured in both recipes. It also logs bound_r / max_j |H_rj| per token and layer (all
12 layers' FC2 in FP8, bound recipe) and prints its median / min / max.

  nice python3 scripts/fp8_accuracy.py --fc2-study [--fc2-subsets 'none all first4 last4']
                                       [--fc2-greedy 9] [--fc2-greedy-recipe bound|chan] [--out DIR] ...

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
    """This script's own options (--only-sets, --only-recipes, the --fc2-* study), taken off sys.argv before
    mxfp8_accuracy's parser sees the rest; returns (set labels, recipe names, FC2 study options or None)."""
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--only-sets")
    ap.add_argument("--only-recipes")
    ap.add_argument("--fc2-study", action="store_true")
    ap.add_argument("--fc2-subsets", default=FC2_SUBSETS)
    ap.add_argument("--fc2-greedy", type=int, default=0)
    ap.add_argument("--fc2-greedy-recipe", default="bound", choices=[r[0] for r in FC2_RECIPES])
    o, rest = ap.parse_known_args()
    sys.argv[1:] = rest
    study = o if o.fc2_study else None
    sets = o.only_sets.split(",") if o.only_sets else None
    recipes = o.only_recipes.split(",") if o.only_recipes else None
    known_sets = [label.split(" ")[0] for label, _ in SETS]
    for name, known, what in [(n, known_sets, "set") for n in sets or []] + \
                             [(n, [r[0] for r in RECIPES], "recipe") for n in recipes or []]:
        if name not in known:
            sys.exit(f"fp8_accuracy: {what} '{name}', expected one of {', '.join(known)}")
    return sets, recipes, study


# The FC2 study (--fc2-study).
FC2_LAYERS = 12  # SigLIP2 base
FC2_SUBSETS = "none all " + " ".join(f"first{k} last{k}" for k in (4, 6, 7, 8, 9))
FC2_BASE = ["--w", "fp8chan", "--x", "fp8chan", "--attn", "bf16", "--bf16", OTHER + ",qkv,out,fc2"]
FC2_RECIPES = [("bound", "a-priori bound ||y|| C + B", ["--fc2-x", "bound"]),
               ("chan", "exact per-token amax", ["--fc2-x", "fp8chan"])]
FC2_MARGIN = 0.9992  # the study's margin over the 0.999 gate


def fc2_layers(spec):
    """A subset spec (none, all, firstK, lastK, or comma-separated indexes) -> sorted tuple of layers."""
    if spec == "none":
        return ()
    if spec == "all":
        return tuple(range(FC2_LAYERS))
    for pre, f in (("first", lambda k: range(k)), ("last", lambda k: range(FC2_LAYERS - k, FC2_LAYERS))):
        if spec.startswith(pre) and spec[len(pre):].isdigit():
            return tuple(f(int(spec[len(pre):])))
    try:
        layers = tuple(sorted({int(t) for t in spec.split(",")}))
    except ValueError:
        sys.exit(f"fp8_accuracy: --fc2-subsets spec '{spec}', expected none, all, firstK, lastK or 0,1,..")
    if any(not 0 <= l < FC2_LAYERS for l in layers):
        sys.exit(f"fp8_accuracy: --fc2-subsets spec '{spec}': layers are 0..{FC2_LAYERS - 1}")
    return layers


def fc2_study(a, o, tool, sets, report):
    cache = {}

    def measure(layers, recipe):
        """{set name: (min, mean, per-image cosines)} for FC2 FP8 on `layers` with input recipe `recipe`."""
        key = (tuple(sorted(layers)), recipe if layers else "-")
        if key not in cache:
            args = list(FC2_BASE)
            if layers:
                args += ["--fc2-layers", ",".join(map(str, key[0]))] + dict((r[0], r[2]) for r in FC2_RECIPES)[recipe]
            res = {}
            for set_name, names, px_path, ref_path in sets:
                cos, mn, mean, _ = mx.run_tool(tool, a.model, px_path, ref_path, args, a.threads)
                res[set_name] = (mn, mean, dict(zip(names, cos)))
            cache[key] = res
            report["runs"].append({"fc2_layers": list(key[0]), "fc2_x": key[1], "args": args,
                                   "sets": {k: {"min_cos": v[0], "mean_cos": v[1], "per_image": v[2]}
                                            for k, v in res.items()}})
        return cache[key]

    def worst(res):
        return min(v[0] for v in res.values())

    names = [s[0] for s in sets]
    print(f"\n== FC2 per layer: FC1 FP8 (chantok) on all {FC2_LAYERS} layers, FC2 FP8 (fp8chan weights) on the "
          f"subset; reference HF fp32 eager, model {a.model}")
    head = " | ".join(f"{n} min (mean)" for n in names)
    print(f"| FC2 FP8 layers | n | FC2 input scale | {head} | >= {FC2_MARGIN} |")
    print("|---|---:|---|" + "---:|" * len(names) + ":---:|")

    def row(label, layers, recipe):
        res = measure(layers, recipe)
        cells = " | ".join(f"{res[n][0]:.6f} ({res[n][1]:.6f})" for n in names)
        rl = "-" if not layers else recipe
        print(f"| {label} | {len(layers)} | {rl} | {cells} | {'yes' if worst(res) >= FC2_MARGIN else 'no'} |",
              flush=True)

    for spec in o.fc2_subsets.split():
        layers = fc2_layers(spec)
        label = spec if spec in ("none", "all") or "," in spec else f"{spec} ({','.join(map(str, layers))})"
        for rname, _, _ in (FC2_RECIPES if layers else FC2_RECIPES[:1]):
            row(label, layers, rname)

    if o.fc2_greedy:
        chosen, order = [], []
        for step in range(min(o.fc2_greedy, FC2_LAYERS)):
            best = max((l for l in range(FC2_LAYERS) if l not in chosen),
                       key=lambda l: worst(measure(chosen + [l], o.fc2_greedy_recipe)))
            chosen.append(best)
            order.append((best, worst(measure(chosen, o.fc2_greedy_recipe))))
        print(f"\ngreedy order ({o.fc2_greedy_recipe}, layer: worst min cosine after adding it): " +
              ", ".join(f"{l}: {w:.6f}" for l, w in order))
        report["fc2_greedy"] = {"recipe": o.fc2_greedy_recipe, "order": order}
        for k in range(1, len(chosen) + 1):
            for rname, _, _ in FC2_RECIPES:
                row(f"greedy{k} ({','.join(map(str, sorted(chosen[:k])))})", chosen[:k], rname)

    # How loose is the bound: bound_r / max_j |H_rj| per token and layer, all layers' FC2 in FP8 (bound).
    ratios = []
    for set_name, names_, px_path, ref_path in sets:
        log = os.path.join(a.out, f"bound_log_{set_name.split()[0]}.bin")
        mx.run_tool(tool, a.model, px_path, ref_path, FC2_BASE + ["--fc2-layers", "all", "--fc2-x", "bound",
                                                                  "--bound-log", log], a.threads)
        ratios.append(np.fromfile(log, dtype=[("layer", "<i4"), ("ratio", "<f4")]))
    r = np.concatenate(ratios)
    print(f"\nbound_r / max_j |H_rj| over {len(r)} (token, layer) pairs (both sets, all {FC2_LAYERS} layers' FC2 "
          f"FP8 with the bound): median {np.median(r['ratio']):.3f}, min {r['ratio'].min():.3f}, "
          f"max {r['ratio'].max():.3f}")
    per_layer = {}
    for l in range(FC2_LAYERS):
        x = r["ratio"][r["layer"] == l]
        per_layer[l] = {"median": float(np.median(x)), "min": float(x.min()), "max": float(x.max())}
    print("per layer median (min..max): " + ", ".join(f"{l}: {v['median']:.2f} ({v['min']:.2f}..{v['max']:.2f})"
                                                       for l, v in per_layer.items()))
    report["bound_ratio"] = {"median": float(np.median(r["ratio"])), "min": float(r["ratio"].min()),
                             "max": float(r["ratio"].max()), "per_layer": per_layer}


def main():
    only_sets, only_recipes, study = only_args()
    a = mx.parse_args("/tmp/sg_fp8")
    tool = mx.prepare(a)
    sets = references(a, sorted(glob.glob(a.photos)))
    if study:
        report = mx.new_report(a.model)
        fc2_study(a, study, tool, sets, report)
        mx.write_report(a.out, report)
        return

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
