#!/usr/bin/env python3
"""scripts/hf_text_bench.py — HF SiglipModel.get_text_features speed on this GPU, for gpu-text-check.sh.

  python3 scripts/hf_text_bench.py CKPT [BATCH]

The checkpoint gpu-text-check.sh made (full-size random SiglipModel), sdpa, bf16 on cuda, timed like
scripts/hf_bench.py (CUDA events, warm-up, median of 10) at BATCH (default 1024) on the same two id sets
tests/tools/sg_text_check times: "fixture" (the reference queries' ids, repeated) and "random" (<bos> + 13 random
ids over the vocabulary). The attention mask is passed exactly when the checkpoint's tokenizer returned one (its
references then include text_mask.i32: the fixture's mask, and for "random" a mask on those 14), as
get_text_features(**inputs) gets it; google/siglip2-base-patch16-224's tokenizer returns none. Ids and mask are
already on the GPU (as HF users time a model). Prints one JSON object per line.
"""
import json
import os
import sys

import numpy as np
import torch
from transformers import SiglipModel


def bench(fn, iters=10, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    ckpt = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    T = 64
    ids = np.fromfile(os.path.join(ckpt, "text_ids.i32"), "<i4").reshape(-1, T)
    mpath = os.path.join(ckpt, "text_mask.i32")
    mask = np.fromfile(mpath, "<i4").reshape(-1, T) if os.path.exists(mpath) else None
    print(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}), flush=True)
    with torch.inference_mode():
        m = SiglipModel.from_pretrained(ckpt, attn_implementation="sdpa", dtype=torch.bfloat16).cuda().eval()
        V = m.config.text_config.vocab_size
        rng = np.random.default_rng(12345)
        rid = np.zeros((n, T), np.int64)
        rid[:, 0] = 2
        rid[:, 1:14] = rng.integers(0, V, size=(n, 13))
        rmask = np.zeros((n, T), np.int64)
        rmask[:, :14] = 1
        sets = {"fixture": (np.resize(ids, (n, T)), None if mask is None else np.resize(mask, (n, T))),
                "random": (rid, None if mask is None else rmask)}
        for name, (i, k) in sets.items():
            kw = {"input_ids": torch.from_numpy(np.ascontiguousarray(i)).long().cuda()}
            if k is not None:
                kw["attention_mask"] = torch.from_numpy(np.ascontiguousarray(k)).long().cuda()
            ms = bench(lambda: m.get_text_features(**kw))
            print(json.dumps({"impl": "hf-sdpa-bf16", "attention_mask": mask is not None, "ids": name, "batch": n,
                              "ms_per_batch": round(ms, 3), "queries_per_s": round(n / ms * 1e3, 1)}), flush=True)


if __name__ == "__main__":
    main()
