#!/usr/bin/env bash
# Session 26: is the graph bench's short window a burst? sm90 / cuda graph replays at 1,024, 10 replays against 200,
# and the API, under the NVML trace (power, clock); then the clock and power in 1-s buckets.
# Rerun: OUT=DIR bash docs/gpu-runs/2026-11-27-h100-s26-sustained-probe.sh (from the repo root; builds the two tools,
# makes the random checkpoint if missing). The "api-start" marker line it prints made energy_trace.py divide by zero
# then (its table was lost; res.txt kept the figures); energy_trace.py now reports it as an empty window.
cd "$(git rev-parse --show-toplevel 2>/dev/null || echo .)"
DEPS=(); [ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
make -j16 "${DEPS[@]}" build/tools/sg_gpu_graph_bench build/tools/sg_gpu_bench > /tmp/b.log 2>&1 || { tail -20 /tmp/b.log; exit 1; }
CK=/tmp/sg-gpu-work/siglip2-base-random
[ -f $CK/model.safetensors ] || python3 scripts/make_fixtures.py --full-size $CK > /tmp/ck.log 2>&1 || { tail /tmp/ck.log; exit 1; }
date -u
python3 scripts/energy_trace.py $OUT/trace.csv -- bash -c "
  export SG_GRAPH_WINDOW=1
  for r in 1 2; do
    echo \"== r\$r sm90 10\"; build/tools/sg_gpu_graph_bench $CK 1024 sm90; sleep 3
    echo \"== r\$r sm90 200\"; SG_GRAPH_ITERS=200 build/tools/sg_gpu_graph_bench $CK 1024 sm90
    echo \"== r\$r sm90 10 right after\"; build/tools/sg_gpu_graph_bench $CK 1024 sm90; sleep 3
    echo \"== r\$r sm90 api\"; echo \"WINDOW api-start \$(date +%s.%N) \$(date +%s.%N) 1 0\"; build/tools/sg_gpu_bench $CK sm90 1024 | grep batch; sleep 3
    echo \"== r\$r cuda 10\"; build/tools/sg_gpu_graph_bench $CK 1024; sleep 3
    echo \"== r\$r cuda 200\"; SG_GRAPH_ITERS=200 build/tools/sg_gpu_graph_bench $CK 1024; sleep 3
  done" > $OUT/res.txt 2>&1
grep -v '^WINDOW' $OUT/res.txt | grep -v '^t=' 
python3 - $OUT/trace.csv > $OUT/buckets.txt <<'PY'
import sys, csv
rows = list(csv.DictReader(open(sys.argv[1])))
t0 = float(rows[0]["time_s"]); b = {}
for r in rows:
    k = int(float(r["time_s"]) - t0); b.setdefault(k, []).append((float(r["power_w"]), int(r["sm_mhz"])))
for k in sorted(b):
    v = b[k]; print(f"t={k:4d}s  W {sum(p for p,_ in v)/len(v):6.1f}  MHz {sorted(c for _,c in v)[len(v)//2]}")
PY
date -u
