#!/usr/bin/env python3
"""scripts/bench_cpu.py — seconds per image of the C fp32 CPU encoder next to HF transformers fp32 on the CPU.

Design: the same full-size random SigLIP2-base checkpoint (scripts/make_fixtures.py --full-size), the same
batch of random pixel_values in [-1, 1], the same thread count. Rounds alternate C, HF eager, HF sdpa so
that load from other processes on a shared machine falls on all three alike; each round times one forward
of the whole batch (the C side through tests/tools/sg_forward, which packs weights once and reports the
forward alone). Reported: median wall seconds per image, CPU seconds per image (all threads; insensitive to
other processes), achieved GFLOP/s (35.42 GFLOP per image at base size), the load average before and after,
and the C output against HF eager (max |Δ| and worst cosine of pooler_output and last_hidden_state).

  python3 scripts/bench_cpu.py [--model /tmp/sg_full] [--batch 4] [--rounds 3] [--threads 2]

Needs torch and transformers (reference only, like make_fixtures.py) and a built build/tools/sg_forward.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
from transformers import SiglipVisionModel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GFLOP = 35.42  # per image, base config: every GEMM and both attention products (docs/baselines.md)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def run_c(tool, model, pixels, n, threads, pooled_out, last_out):
    cmd = [tool, model, pixels, "--n", str(n), "--threads", str(threads), "--pooled", pooled_out, "--last", last_out]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"run 0: ([0-9.]+) s wall, ([0-9.]+) s cpu", out)
    return float(m.group(1)), float(m.group(2))


def run_hf(model, px):
    t0, c0 = time.perf_counter(), time.process_time()
    with torch.inference_mode():
        out = model(pixel_values=px)
    return time.perf_counter() - t0, time.process_time() - c0, out


def compare(a, b):
    a = a.reshape(a.shape[0], -1).astype(np.float64)
    b = b.reshape(b.shape[0], -1).astype(np.float64)
    mx = float(np.abs(a - b).max())
    cos = float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())
    return mx, cos


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="/tmp/sg_full")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tool", default=os.path.join(ROOT, "build", "tools", "sg_forward"))
    a = ap.parse_args()
    if not os.path.exists(os.path.join(a.model, "model.safetensors")):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_fixtures.py"), "--full-size", a.model],
                       check=True)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(7)
    px = rng.uniform(-1, 1, size=(a.batch, 3, 224, 224)).astype(np.float32)
    tmp = tempfile.mkdtemp(prefix="bench_cpu.")
    pix_path, pool_path, last_path = (os.path.join(tmp, x) for x in ("pixels.f32", "pooled.f32", "last.f32"))
    px.tofile(pix_path)
    models = {impl: SiglipVisionModel.from_pretrained(a.model, attn_implementation=impl, dtype=torch.float32).eval()
              for impl in ("eager", "sdpa")}
    tpx = torch.from_numpy(px)
    for m in models.values():  # warm-up: first-call allocations and oneDNN/MKL initialisation
        run_hf(m, tpx[:1])
    run_c(a.tool, a.model, pix_path, 1, a.threads, pool_path, last_path)
    load_before = loadavg()
    times = {"C fp32 (sg_cpu_forward)": [], "HF eager fp32": [], "HF sdpa fp32": []}
    ref = None
    for _ in range(a.rounds):
        times["C fp32 (sg_cpu_forward)"].append(run_c(a.tool, a.model, pix_path, a.batch, a.threads, pool_path, last_path))
        for impl, key in (("eager", "HF eager fp32"), ("sdpa", "HF sdpa fp32")):
            w, c, out = run_hf(models[impl], tpx)
            times[key].append((w, c))
            if impl == "eager":
                ref = out
    load_after = loadavg()
    D, T = 768, 196
    c_pool = np.fromfile(pool_path, dtype=np.float32).reshape(a.batch, D)
    c_last = np.fromfile(last_path, dtype=np.float32).reshape(a.batch, T, D)
    pm, pc = compare(c_pool, ref.pooler_output.numpy())
    lm, lc = compare(c_last, ref.last_hidden_state.numpy())
    print(f"machine: {os.cpu_count()} CPUs, {a.threads} threads; torch {torch.__version__}, "
          f"transformers {transformers.__version__}; batch {a.batch}, {a.rounds} rounds (median)")
    print(f"load average before {load_before}, after {load_after}")
    print("| implementation | wall s/image | cpu s/image | GFLOP/s (wall) | GFLOP per cpu-s |")
    print("|---|---:|---:|---:|---:|")
    for k, v in times.items():
        w = statistics.median(x[0] for x in v) / a.batch
        c = statistics.median(x[1] for x in v) / a.batch
        print(f"| {k} | {w:.3f} | {c:.3f} | {GFLOP / w:.1f} | {GFLOP / c:.1f} |")
    print(f"C vs HF eager, {a.batch} images: pooler_output max|d| {pm:.3g}, worst cos {pc:.9f}; "
          f"last_hidden_state max|d| {lm:.3g}, worst cos {lc:.9f}")


if __name__ == "__main__":
    main()
