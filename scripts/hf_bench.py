#!/usr/bin/env python3
"""scripts/hf_bench.py — HF SiglipVisionModel speed on this GPU, for gpu-bench.sh's side-by-side table.

A trimmed ../shared/bench/hf_baseline.py (same model config, random weights, same timing: CUDA events, warm-up,
median): sdpa bf16 at the given batch sizes, and torch.compile of it at batch 256. SG_BENCH_COMPILE picks the
compile mode: "max-autotune-no-cudagraphs" (baselines.md's 10.8k images/s; several minutes of autotuning),
"default" (the default here: about a minute), or "0" to skip. SG_BENCH_SUSTAIN=S: each batch size after S seconds
of back-to-back calls and timed over at least S seconds (the sustained rate; no torch.compile then). Prints one JSON
object per line.
"""
import json
import os
import sys
import time

import torch
from transformers import SiglipVisionConfig, SiglipVisionModel

BATCHES = [int(b) for b in (sys.argv[1] if len(sys.argv) > 1 else "1,32,256,1024").split(",")]
MODE = os.environ.get("SG_BENCH_COMPILE", "default")
SUSTAIN = float(os.environ.get("SG_BENCH_SUSTAIN", "0"))


def bench(fn, x, iters, warm=5, sustain=0.0):
    """Median ms of at least `iters` calls; with sustain > 0, after `sustain` seconds of calls and over at least as
    many (the clock where the power limit holds it under continuous load, as sg_gpu_graph_bench's SG_GRAPH_SUSTAIN)."""
    t0 = time.time()
    i = 0
    while i < warm or time.time() - t0 < sustain:
        fn(x)
        torch.cuda.synchronize()
        i += 1
    ts = []
    t0 = time.time()
    while len(ts) < iters or time.time() - t0 < sustain:
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(x)
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def run(name, fn, batches, sustain=0.0):
    for n in batches:
        x = torch.randn(n, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
        ms = bench(fn, x, 10 if n >= 512 else 20, sustain=sustain)
        row = {"impl": name, "batch": n, "latency_ms": round(ms, 4), "img_s": round(n / ms * 1e3, 1)}
        if sustain > 0:
            row["sustained_s"] = sustain
        print(json.dumps(row), flush=True)


def main():
    torch.manual_seed(0)
    cfg = SiglipVisionConfig(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                             image_size=224, patch_size=16, hidden_act="gelu_pytorch_tanh", layer_norm_eps=1e-6)
    print(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}), flush=True)
    with torch.inference_mode():
        m = SiglipVisionModel._from_config(cfg, attn_implementation="sdpa").cuda().to(torch.bfloat16).eval()
        run("hf-sdpa-bf16", lambda x: m(pixel_values=x).pooler_output, BATCHES, SUSTAIN)
        if MODE != "0" and SUSTAIN == 0:
            t = time.time()
            mc = torch.compile(m, mode=None if MODE == "default" else MODE)
            run(f"hf-sdpa-bf16-compile-{MODE}", lambda x: mc(pixel_values=x).pooler_output, [256])
            print(json.dumps({"compile_s": round(time.time() - t, 1)}), flush=True)


if __name__ == "__main__":
    main()
