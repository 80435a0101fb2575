#!/usr/bin/env bash
# scripts/gpu-bench.sh — one command on a GPU machine: our backends side by side with HF, same GPU, same run.
#
#   scripts/gpu-bench.sh        (results: table on stdout, gpu-bench.json under $OUT, else /tmp/sg-gpu-bench)
#
# 1. builds (as gpu-check.sh) and makes/reuses the full-size random checkpoint (speed does not depend on values);
# 2. HF SiglipVisionModel sdpa bf16 at batch 1/32/256/1024 and torch.compile at 256 (scripts/hf_bench.py;
#    SG_BENCH_COMPILE=max-autotune-no-cudagraphs for baselines.md's mode, 0 to skip);
# 3. each of our GPU backends (cuda, sm90, sm100, sm90:fp8 = sm90 with --precision fp8; 'unavailable: reason' when
#    one does not construct) at the same batch sizes through tests/tools/sg_gpu_bench (cold start, median latency,
#    throughput with 2 batches in flight so uploads overlap compute); and the cuda forward's CUDA graph alone with
#    pixels already on the GPU (tests/tools/sg_gpu_graph_bench, CUDA events, as HF is timed), and the same with the
#    sm90 megakernel's layers, bf16 and fp8 (the report adds their ratio: issue 12's FP8 target); then HF, cuda,
#    sm90 and sm90:fp8 again at 256 and 1,024 images, sustained: after 4 s of back-to-back calls and timed over
#    4 s more, the clock where the power limit holds it in a long job (SG_BENCH_SUSTAIN=S seconds, 0 to skip;
#    SG_BENCH_SUSTAIN_BATCH);
# 4. end to end: a 4,000-JPEG corpus (.carry/bench/make_corpus.py from the photos) through HF's DataLoader
#    pipeline (.carry/bench/e2e_hf.py, which also times Pillow decode-only and decode+resize on 16 processes) and
#    through siglip2-embed -b 256 -v per backend (files → npy, exact preprocessing; the whole process is timed,
#    start-up included), whose -v report (start-up, per-stage CPU, waits, peak memory) is kept and printed; then
#    every corpus image's embedding, as written, against HF fp32 (scripts/hf_embed.py, scripts/gpu_compare.py
#    --unit) with issue 12's gates: cosine >= 0.9999 for every image, 0.999 for sm90:fp8 (a failure exits 1 after
#    the report);
# 5. prints the table with images/s, latency and ratios to HF (scripts/gpu_report.py), our exact end-to-end
#    rate beside Pillow's decode-only rate of the same run, issue 12's targets judged on this run's figures (met
#    or not met), and writes the JSON.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# shellcheck source=scripts/lib-gpu.sh
. scripts/lib-gpu.sh
RES=${OUT:-/tmp/sg-gpu-bench}
WORK=${SG_WORK:-/tmp/sg-gpu-work}
mkdir -p "$RES" "$WORK"
JOBS=$(nproc 2>/dev/null || echo 2)
PY=${PYTHON:-python3}
BATCHES=${SG_BENCH_BATCHES:-1,32,256,1024}
NCORPUS=${SG_BENCH_CORPUS:-4000}
BENCH=$ROOT/.carry/bench
[ -d "$BENCH" ] || BENCH=$ROOT/../shared/bench
die() { echo "gpu-bench: $*" >&2; exit 1; }
T0=$SECONDS
stamp() { echo "== [$((SECONDS - T0))s] $*"; }

stamp "build"
DEPS=()
[ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
make -j"$JOBS" "${DEPS[@]}" siglip2-embed build/tools/sg_gpu_bench build/tools/sg_gpu_graph_bench >"$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; die "build failed"; }
BIN=$ROOT/siglip2-embed
CKPT=$WORK/siglip2-base-random
if [ ! -f "$CKPT/model.safetensors" ]; then
    stamp "checkpoint"
    $PY scripts/make_fixtures.py --full-size "$CKPT" >"$WORK/ckpt.log" 2>&1 || { tail "$WORK/ckpt.log"; die "checkpoint"; }
fi
# Warm the page cache so cold start measures the load from cache, as the issue defines it.
cat "$CKPT/model.safetensors" >/dev/null

stamp "HF encoder"
$PY scripts/hf_bench.py "$BATCHES" | tee "$WORK/hf_bench.jsonl" || echo "hf_bench failed"

: >"$WORK/ours.jsonl"
for B in "${SG_SPECS[@]}"; do
    stamp "ours: $B"
    F=$(sg_spec_file "$B")
    build/tools/sg_gpu_bench "$CKPT" "$B" "$BATCHES" 2>"$WORK/bench-$F.err" | tee -a "$WORK/ours.jsonl"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        reason=$(tail -1 "$WORK/bench-$F.err" | sed "s/^unavailable: //")
        echo "{\"backend\": \"$B\", \"unavailable\": $(printf '%s' "$reason" | $PY -c 'import json,sys; print(json.dumps(sys.stdin.read()))')}" |
            tee -a "$WORK/ours.jsonl"
    fi
done

stamp "ours: cuda forward graph replays, pixels already on the GPU (as HF is timed)"
build/tools/sg_gpu_graph_bench "$CKPT" "$BATCHES" 2>"$WORK/graph-bench.err" | tee "$WORK/ours_graph.jsonl" ||
    tail -3 "$WORK/graph-bench.err"
stamp "ours: sm90 (Hopper megakernel) forward graph replays, pixels already on the GPU"
build/tools/sg_gpu_graph_bench "$CKPT" "$BATCHES" sm90 2>"$WORK/graph-bench-sm90.err" | tee -a "$WORK/ours_graph.jsonl" ||
    tail -3 "$WORK/graph-bench-sm90.err"
stamp "ours: sm90:fp8 (Hopper megakernel, FC1 and FC2 of layers 2-11 in FP8) forward graph replays, pixels already on the GPU"
build/tools/sg_gpu_graph_bench "$CKPT" "$BATCHES" sm90:fp8 2>"$WORK/graph-bench-sm90-fp8.err" |
    tee -a "$WORK/ours_graph.jsonl" || tail -3 "$WORK/graph-bench-sm90-fp8.err"

# The sustained rate: the short runs above time a card that has just come off idle, whose power reading (a moving
# average) lets the first second or so run a higher clock; after seconds of continuous load the power limit holds
# the clock lower (docs/perf-notes.md, session 26). The same forwards, each after SUSTAIN s of back-to-back calls and
# timed over SUSTAIN s more, at SUSTAIN_BATCH images: what a long job sees. SG_BENCH_SUSTAIN=0 skips it.
SUSTAIN=${SG_BENCH_SUSTAIN:-4}
SUSTAIN_BATCH=${SG_BENCH_SUSTAIN_BATCH:-256,1024}
: >"$WORK/sustained.jsonl"
if [ "$SUSTAIN" != 0 ]; then
    stamp "sustained: ${SUSTAIN} s of calls, then ${SUSTAIN} s timed, batch $SUSTAIN_BATCH: HF, cuda, sm90, sm90:fp8"
    SG_BENCH_SUSTAIN=$SUSTAIN $PY scripts/hf_bench.py "$SUSTAIN_BATCH" 2>"$WORK/sustained-hf.err" | grep '"impl"' |
        tee -a "$WORK/sustained.jsonl" || tail -3 "$WORK/sustained-hf.err"
    for B in cuda sm90 sm90:fp8; do
        SG_GRAPH_SUSTAIN=$SUSTAIN build/tools/sg_gpu_graph_bench "$CKPT" "$SUSTAIN_BATCH" "$B" \
            2>"$WORK/sustained-$(sg_spec_file "$B").err" | tee -a "$WORK/sustained.jsonl" ||
            tail -3 "$WORK/sustained-$(sg_spec_file "$B").err"
    done
fi

PHOTOS=$ROOT/.carry/photos
if [ ! -d "$PHOTOS" ]; then
    PHOTOS=$WORK/photos
    [ -d "$PHOTOS" ] || sh "$BENCH/get-photos.sh" "$PHOTOS" >/dev/null 2>&1
fi
CORPUS=$WORK/corpus$NCORPUS
if [ ! -d "$CORPUS" ]; then
    stamp "corpus of $NCORPUS JPEGs"
    $PY "$BENCH/make_corpus.py" "$PHOTOS" "$CORPUS" "$NCORPUS" || die "make_corpus failed"
fi
stamp "end to end: HF DataLoader"
OUT=$WORK $PY "$BENCH/e2e_hf.py" "$CORPUS" >"$WORK/e2e_hf.log" 2>&1 || { tail "$WORK/e2e_hf.log"; echo "e2e_hf failed"; }
tail -12 "$WORK/e2e_hf.log"
: >"$WORK/e2e_ours.jsonl"
for B in "${SG_SPECS[@]}"; do
    grep -q "\"backend\": \"$B\", \"load_s\"" "$WORK/ours.jsonl" || continue
    stamp "end to end: siglip2-embed --backend $B"
    F=$(sg_spec_file "$B")
    rm -f "$WORK/e2e-$F.npy" "$WORK/e2e-$F.npy.paths"
    t=$EPOCHREALTIME
    # shellcheck disable=SC2046
    if "$BIN" --weights "$CKPT" $(sg_spec_args "$B") -b 256 -v -f npy -o "$WORK/e2e-$F.npy" "$CORPUS" \
        2>"$WORK/e2e-$F.err"; then
        t1=$EPOCHREALTIME
        sed 's/^/    /' "$WORK/e2e-$F.err"   # -v: where the time went
        $PY -c "import json, numpy as np; n = np.load('$WORK/e2e-$F.npy').shape[0]; s = $t1 - $t; \
print(json.dumps({'backend': '$B', 'images': n, 'seconds': round(s, 3), 'img_s': round(n / s, 1), \
'verbose': open('$WORK/e2e-$F.err').read()}))" |
            tee -a "$WORK/e2e_ours.jsonl" | cut -c1-200
    else
        tail -3 "$WORK/e2e-$F.err"
    fi
done
# The same corpus's embeddings, as the command wrote them, against HF fp32 image by image (every crop is a new
# input; gpu-check's 13 photos are the sources): the gates of issue 12, cosine >= 0.9999 (0.999 for sm90:fp8).
stamp "end to end: accuracy of every corpus image against HF fp32"
: >"$WORK/e2e_accuracy.txt"
find "$CORPUS" -name '*.jpg' | sort >"$WORK/corpus.list"
if $PY scripts/hf_embed.py "$CKPT" "$WORK/e2e-hf.npy" --list "$WORK/corpus.list" >"$WORK/e2e-hf.log" 2>&1; then
    tail -1 "$WORK/e2e-hf.log"
    for B in "${SG_SPECS[@]}"; do
        F=$(sg_spec_file "$B")
        [ -f "$WORK/e2e-$F.npy" ] || continue
        $PY scripts/gpu_compare.py "$WORK/e2e-hf.npy" "$WORK/e2e-$F.npy" "siglip2-embed --backend $B vs HF fp32" \
            "$(sg_spec_gate "$B")" --unit | tee -a "$WORK/e2e_accuracy.txt" | grep -q '^PASS' || accuracy_failed=1
    done
    cat "$WORK/e2e_accuracy.txt"
else
    tail -5 "$WORK/e2e-hf.log"
    echo "FAIL: HF fp32 reference on the corpus" | tee -a "$WORK/e2e_accuracy.txt"
    accuracy_failed=1
fi
stamp "report"
$PY scripts/gpu_report.py "$WORK" "$RES/gpu-bench.json"
[ -z "${accuracy_failed:-}" ] || die "an end-to-end output failed its accuracy gate (see the table's last section)"
