#!/usr/bin/env python3
"""scripts/gemm_bounds.py — what the vendor's own kernels need for this model's pieces, run one at a time.

Issue 12's throughput target (16,000 images/s bf16 at batch 1,024 on an H100) is a claim about the whole forward.
This script asks how long the forward's pieces take when each runs *alone*, back to back, in the best kernels
PyTorch has on this GPU (cuBLASLt through F.linear with its bias epilogue, scaled_dot_product_attention's fused
attention, layer_norm, GELU), at the encoder's shapes (M = 196 tokens x batch):

    patch 768 -> 768, QKV 768 -> 2304, out-projection 768 -> 768, FC1 768 -> 3072 (+ GELU), FC2 3072 -> 768,
    the head's K/V projection 768 -> 1536 (the MAP head's other pieces act on one token per image: left out),
    attention (12 heads of 64, 196 keys), two LayerNorms per layer.

Each op is captured 20 times in one CUDA graph and replayed (no launch gaps, no dependency stalls, no
dispatch): the median replay / 20 is the op's GPU time. Summing the ops (x 12 layers) gives the time a forward
would take if every piece ran at its isolated vendor-kernel rate and nothing else cost anything: an upper bound
on what a forward made of these kernels reaches, and a yardstick for a fused one. Also FP8 (E4M3, per-row /
per-column scales, torch._scaled_mm) for FC1 and FC2, where this torch supports it.

Prints a table and one JSON object per line; the SM clock and power are sampled by nvidia-smi while it runs
(`--clock-log FILE`, written by the caller). Usage: gemm_bounds.py [BATCHES] (default 1,256,1024).
"""
import json
import sys

import torch
import torch.nn.functional as F

T, D, H, DH, FF = 196, 768, 12, 64, 3072
REPS = 20


def capture(fn):
    """fn() three times on a side stream (warm-up, as graph capture wants), then REPS calls captured in one CUDA
    graph, replayed three times; returns the graph (scripts/gemm_energy.py replays it too)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(REPS):
            fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    return g


def op_time_ms(fn, replays):
    """Median GPU time of one fn() call: REPS calls captured in one CUDA graph, replayed `replays` times."""
    g = capture(fn)
    ts = []
    for _ in range(replays):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / REPS)
    ts.sort()
    return ts[len(ts) // 2]


def linear_op(m, k, n, gelu=False):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) * k ** -0.5
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    if gelu:
        return lambda: F.gelu(F.linear(a, w, bias), approximate="tanh"), 2.0 * m * k * n
    return lambda: torch.addmm(bias, a, w.t(), out=out), 2.0 * m * k * n


def fp8_linear_op(m, k, n):
    """E4M3 x E4M3 -> bf16 with one scale per row of A and per column of B (the megakernel's recipe)."""
    a = (torch.randn(m, k, device="cuda") * 4).to(torch.float8_e4m3fn)
    w = (torch.randn(n, k, device="cuda") * 4).to(torch.float8_e4m3fn)
    sa = torch.rand(m, 1, device="cuda", dtype=torch.float32) + 0.5
    sb = torch.rand(1, n, device="cuda", dtype=torch.float32) + 0.5
    fn = lambda: torch._scaled_mm(a, w.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=True)
    fn()  # raises here if this torch / GPU cannot
    return fn, 2.0 * m * k * n


def attention_op(b):
    q, k, v = (torch.randn(b, H, T, DH, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    return lambda: F.scaled_dot_product_attention(q, k, v), 4.0 * b * H * T * T * DH


def layernorm_op(m):
    x = torch.randn(m, D, device="cuda", dtype=torch.float32)  # the residual stream is fp32 in ours
    w, bias = torch.ones(D, device="cuda"), torch.zeros(D, device="cuda")
    return lambda: F.layer_norm(x, (D,), w, bias, 1e-6).to(torch.bfloat16), 0.0


def main():
    batches = [int(b) for b in (sys.argv[1] if len(sys.argv) > 1 else "1,256,1024").split(",")]
    print(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}), flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    for b in batches:
        m = T * b
        replays = 10 if b >= 512 else 30
        # (name, per-forward count, factory)
        ops = [("patch", 1, lambda: linear_op(m, D, D)),
               ("qkv", 12, lambda: linear_op(m, D, 3 * D)),
               ("attention", 12, lambda: attention_op(b)),
               ("out", 12, lambda: linear_op(m, D, D)),
               ("fc1+gelu", 12, lambda: linear_op(m, D, FF, gelu=True)),
               ("fc1", 12, lambda: linear_op(m, D, FF)),
               ("fc2", 12, lambda: linear_op(m, FF, D)),
               ("head_kv", 1, lambda: linear_op(m, D, 2 * D)),
               ("layernorm", 25, lambda: layernorm_op(m)),
               ("fc1_fp8", 12, lambda: fp8_linear_op(m, D, FF)),
               ("fc2_fp8", 12, lambda: fp8_linear_op(m, FF, D))]
        res = {}
        for name, count, make in ops:
            try:
                fn, flops = make()
                ms = op_time_ms(fn, replays)
            except Exception as e:  # e.g. _scaled_mm's row-wise scales unsupported: say so, go on
                print(json.dumps({"batch": b, "op": name, "error": str(e)[:200]}), flush=True)
                continue
            res[name] = (ms, count)
            tf = flops / ms / 1e9 if flops else None
            print(json.dumps({"batch": b, "op": name, "ms": round(ms, 5), "tflops": tf and round(tf, 1),
                              "per_forward": count}), flush=True)
            torch.cuda.empty_cache()

        def total(names):
            return sum(res[n][0] * res[n][1] for n in names if n in res)

        gemms = ["patch", "qkv", "out", "fc1", "fc2", "head_kv"]
        rows = [("GEMMs alone (bf16, bias epilogue)", gemms),
                ("+ attention", gemms + ["attention"]),
                ("+ GELU unfused into FC1 (fc1+gelu for fc1)",
                 ["patch", "qkv", "out", "fc1+gelu", "fc2", "head_kv", "attention"]),
                ("+ LayerNorms", ["patch", "qkv", "out", "fc1+gelu", "fc2", "head_kv", "attention", "layernorm"]),
                ("GEMMs with FC1, FC2 in FP8", ["patch", "qkv", "out", "fc1_fp8", "fc2_fp8", "head_kv"])]
        print(f"batch {b}: sum of isolated vendor kernels per forward (12 layers)")
        for label, names in rows:
            if not all(n in res for n in names):
                continue
            ms = total(names)
            print(f"  {label:<46} {ms:9.3f} ms  {b / ms * 1e3:9.0f} images/s")
            print(json.dumps({"batch": b, "bound": label, "ms": round(ms, 4), "img_s": round(b / ms * 1e3, 1)}),
                  flush=True)


if __name__ == "__main__":
    with torch.inference_mode():
        main()
