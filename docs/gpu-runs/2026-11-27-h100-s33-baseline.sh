#!/usr/bin/env bash
# Session 33: the lean batch-1 lab beside the megakernel's batch 1 in one call on one GPU (the baseline in the same
# run). Builds the product and the graph-replay tool, makes the full-size random checkpoint, then: sm90 and cuda
# batch-1 graph replays (tests/tools/sg_gpu_graph_bench, median), the megakernel's batch-1 task trace
# (SG_SM90_TRACE, the profile instantiation; scripts/mega_trace.py: the critical path by kind, and per layer for
# layers 0, 5 and 11), then scripts/sm90-lean-lab.sh (the lab's checks, table, sanitizers). Writes
# $1/baseline.txt and $1/lean/, then $1/done (run with setsid; collected by .carry/collect.sh).
cd "$(dirname "$0")/../.." || exit 1
R=${1:?usage: $0 OUTDIR}
mkdir -p "$R"
W=/tmp/s33b; mkdir -p $W
DEPS=(); [ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader
  make -j16 "${DEPS[@]}" siglip2-embed build/tools/sg_gpu_graph_bench > $W/build.log 2>&1 || { tail -30 $W/build.log; exit 1; }
  echo "built: $(date -u)"
  python3 scripts/make_fixtures.py --full-size $W/ckpt > $W/ckpt.log 2>&1 || { tail $W/ckpt.log; exit 1; }
  echo "checkpoint: $(date -u)"
  echo "== graph replays, batch 1 (ms, median)"
  for b in sm90 cuda sm90 cuda; do build/tools/sg_gpu_graph_bench $W/ckpt 1 $b 2>>$W/graph.err; done
  echo "== megakernel batch-1 trace (profile instantiation)"
  rm -f $W/trace.csv
  for i in 1 2 3 4 5 6; do
    SG_SM90_TRACE=$W/trace.csv ./siglip2-embed --weights $W/ckpt --backend sm90 --batch 1 -q \
      .carry/photos/$(ls .carry/photos | head -1) -o $W/emb$i.jsonl 2>>$W/trace.err || tail -5 $W/trace.err
  done
  python3 scripts/mega_trace.py $W/trace.csv --batch 1 2>&1 | tail -60
  for L in 0 5 11; do echo "-- layer $L"; python3 scripts/mega_trace.py $W/trace.csv --batch 1 --layer $L 2>&1 | tail -25; done
  echo "== the lean lab: $(date -u)"
  bash scripts/sm90-lean-lab.sh "$R/lean" 2>&1 | grep -v refused
  date -u
} > "$R/baseline.txt" 2>&1
touch "$R/done"
