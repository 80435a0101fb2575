#!/usr/bin/env python3
"""scripts/gemm_energy.py: the vendor's kernels at this model's shapes under sustained load, for energy per FLOP.

    python3 scripts/energy_trace.py TRACE.csv -- python3 scripts/gemm_energy.py [BATCH] [SECONDS]

scripts/gemm_bounds.py times each piece of the forward alone in short bursts, where the card keeps its top clock.
At 1,024 images the megakernel runs for seconds at the card's power limit, where what decides throughput is energy
per FLOP. This runs the same vendor ops (cuBLASLt through torch's addmm / F.linear, SDPA attention, FP8
_scaled_mm; gemm_bounds.py's factories) each for SECONDS (default 1.5) of back-to-back CUDA-graph replays (20 calls
a graph) at M = 196 x BATCH (default 1,024), printing one WINDOW line per op for energy_trace.py, which gives
joules, mean power, the clock and TFLOP per joule.
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gemm_bounds as gb  # noqa: E402  (its op factories and shapes)

def run(name, fn, flop, seconds):
    g = gb.capture(fn)  # gb.REPS calls a replay
    t0 = time.time()
    n = 0
    while time.time() - t0 < seconds:
        for _ in range(4):
            g.replay()
        n += 4
        torch.cuda.synchronize()
    t1 = time.time()
    print(f"WINDOW {name} {t0:.6f} {t1:.6f} {n * gb.REPS} {flop:.6e}", flush=True)
    time.sleep(1.0)  # let the card cool back to its idle clock between ops


def main():
    b = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
    torch.backends.cuda.matmul.allow_tf32 = False
    m = gb.T * b
    ops = [("qkv", lambda: gb.linear_op(m, gb.D, 3 * gb.D)),
           ("out", lambda: gb.linear_op(m, gb.D, gb.D)),
           ("fc1", lambda: gb.linear_op(m, gb.D, gb.FF)),
           ("fc2", lambda: gb.linear_op(m, gb.FF, gb.D)),
           ("attention", lambda: gb.attention_op(b)),
           ("fc1_fp8", lambda: gb.fp8_linear_op(m, gb.D, gb.FF)),
           ("fc2_fp8", lambda: gb.fp8_linear_op(m, gb.FF, gb.D))]
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, M = {m}", flush=True)
    for name, make in ops:
        try:
            fn, flop = make()
        except RuntimeError as e:  # e.g. no FP8 matmul in this torch
            print(f"{name}: unavailable ({e})", flush=True)
            continue
        run(name, fn, flop, seconds)


if __name__ == "__main__":
    main()
