#!/usr/bin/env bash
# Session 24, call 4: does the whole megakernel's energy follow the values too? Energy per image at 1,024 images with
# gpu-check's full-size random checkpoint against the same checkpoint with every value made constant (every weight
# matrix, embedding and the MAP head's probe 2^-7; LayerNorm gamma 1; biases and beta 0, so past the first LayerNorm
# every activation is zero). The same kernel, tasks, bytes and instructions; only the values differ (the constant
# model's embeddings mean nothing). Energy of 60 replays = E(90 replays) - E(30) under scripts/energy_trace.py, as in
# session 23's diag.sh; two rounds, alternating; bf16 sm90 and sm90:fp8.
#   OUT=DIR bash docs/gpu-runs/2026-11-27-h100-s24-values.sh      (on an H100, from the repo root)
set -uo pipefail
R=${OUT:-/tmp/s24v}
W=${SG_WORK:-/tmp/sg-gpu-work}
mkdir -p "$R" "$W"
export PATH=/usr/local/cuda/bin:$PATH
DEPS=()
[ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
make -j"$(nproc)" "${DEPS[@]}" build/tools/sg_gpu_graph_bench >"$R/build.log" 2>&1 || { tail -20 "$R/build.log"; exit 1; }
CK=$W/siglip2-base-random
if [ ! -f "$CK/model.safetensors" ]; then
    python3 scripts/make_fixtures.py --full-size "$CK" >"$R/ckpt.log" 2>&1 || { tail "$R/ckpt.log"; exit 1; }
fi
python3 - "$CK" "$W/siglip2-base-constant" <<'PY' || exit 1
import os, shutil, sys
import numpy as np
from safetensors.numpy import load_file, save_file
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
shutil.copy(os.path.join(src, "config.json"), dst)
out = {}
for k, v in load_file(os.path.join(src, "model.safetensors")).items():
    x = (1.0 if k.endswith("weight") else 0.0) if "norm" in k else 0.0 if k.endswith("bias") else 2.0 ** -7
    out[k] = np.full_like(v, x)
save_file(out, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
print(f"constant checkpoint: {len(out)} tensors")
PY
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee "$R/gpu.txt"
VARS="random:sm90 constant:sm90 random:sm90:fp8 constant:sm90:fp8"
for round in 1 2; do
    for v in $VARS; do
        ck=${v%%:*}; be=${v#*:}
        for it in 30 90; do
            SG_GRAPH_ITERS=$it SG_GRAPH_WINDOW=1 timeout 120 python3 scripts/energy_trace.py /tmp/tr.csv -- \
                build/tools/sg_gpu_graph_bench "$W/siglip2-base-$ck" 1024 "$be" 2>&1 | sed "s/^/$v $round $it /"
        done
    done
done >"$R/values.txt"
python3 - "$R/values.txt" <<'PY'
import collections, re, sys
E, ips = collections.defaultdict(dict), collections.defaultdict(dict)
for line in open(sys.argv[1]):
    p = line.split(" ", 3)
    if len(p) < 4: continue
    v, rnd, it, rest = p[0], p[1], int(p[2]), p[3]
    m = re.search(r'"img_s": ([0-9.]+)', rest)
    if m and it == 90: ips[v][rnd] = float(m.group(1))
    m = re.match(r"\| sm90\S*-1024-x\d+ \| [0-9.]+ \| ([0-9.]+) \| [0-9.]+ mJ \| (\d+) \| (\d+) \|", rest.strip())
    if m: E[(v, rnd)][it] = (float(m.group(1)), m.group(2), m.group(3))
print("| checkpoint:backend | round | images/s (90 replays) | mJ per image (60 replays) | mean W (90) | median MHz (90) |")
print("|---|---:|---:|---:|---:|---:|")
for (v, rnd), e in sorted(E.items(), key=lambda kv: (kv[0][0].split(":", 1)[1], kv[0][1], kv[0][0])):
    if 30 in e and 90 in e:
        mj = (e[90][0] - e[30][0]) / (60 * 1024) * 1000
        print(f"| {v} | {rnd} | {ips[v].get(rnd, 0):,.0f} | {mj:.1f} | {e[90][1]} | {e[90][2]} |")
PY
