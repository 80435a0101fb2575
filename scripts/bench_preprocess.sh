#!/usr/bin/env bash
# scripts/bench_preprocess.sh [N] — preprocessing speed, ours vs Pillow, one core, on the shared photo corpus mix.
#
# Builds (once) a corpus of N JPEGs (default 200) with ../shared/bench/get-photos.sh + make_corpus.py in
# $SG_BENCH_DIR (default /tmp/sg_bench_preprocess), then prints per-image ms of decode, resize and total
# for build/tools/sg_pre_bench (ours: exact whole-image, exact streamed = decoded straight into the resize,
# which siglip2-embed runs, and --fast-decode) and scripts/bench_preprocess.py (Pillow, exact and draft), and
# the ratios. Times are per-thread CPU time, median of REPS (default 3) per image.
# Needs: make (for the tool), python3 with Pillow (reference only), apt-get download (for the photos).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
REPS=${REPS:-3}
DIR=${SG_BENCH_DIR:-/tmp/sg_bench_preprocess}
SHARED=${SG_SHARED:-../shared}
PY=${PYTHON:-python3}
if [ ! -d "$DIR/corpus" ] || [ "$(find -L "$DIR/corpus" -name '*.jpg' | wc -l)" -lt "$N" ]; then
    mkdir -p "$DIR"
    [ -d "$DIR/photos" ] || sh "$SHARED/bench/get-photos.sh" "$DIR/photos"
    "$PY" "$SHARED/bench/make_corpus.py" "$DIR/photos" "$DIR/corpus" "$N"
fi
BENCH=${SG_PRE_BENCH:-build/tools/sg_pre_bench} # SG_PRE_BENCH: a prebuilt tool, to skip make
[ -n "${SG_PRE_BENCH:-}" ] || make -s "$BENCH"
mapfile -t files < <(find -L "$DIR/corpus" -name '*.jpg' | sort | head -n "$N")
echo "corpus: ${#files[@]} JPEGs in $DIR/corpus; load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
ours=$(nice "$BENCH" --reps "$REPS" "${files[@]}")
pil=$(nice "$PY" scripts/bench_preprocess.py --reps "$REPS" "${files[@]}")
echo "$ours"
echo "$pil"
num() { sed -n "s/.*$1 \([0-9.]*\) ms.*/\1/p" | head -1; }
od=$(echo "$ours" | grep "ours exact" | num decode); orr=$(echo "$ours" | grep "ours exact" | num resize)
ot=$(echo "$ours" | grep "ours exact" | num total); of=$(echo "$ours" | grep "fast-decode" | num total)
os=$(echo "$ours" | grep "ours streamed" | num total)
pd=$(echo "$pil" | grep "pillow exact" | num decode); pr=$(echo "$pil" | grep "pillow exact" | num resize)
pt=$(echo "$pil" | grep "pillow exact" | num total); pf=$(echo "$pil" | grep "draft" | num total)
awk -v od="$od" -v orr="$orr" -v ot="$ot" -v os="$os" -v of="$of" -v pd="$pd" -v pr="$pr" -v pt="$pt" -v pf="$pf" 'BEGIN {
    printf "speedup vs Pillow (per core): decode %.2fx  resize %.2fx  total %.2fx  streamed total %.2fx  fast-decode vs draft %.2fx  fast-decode vs Pillow exact %.2fx\n",
           pd / od, pr / orr, pt / ot, pt / os, pf / of, pt / of
    printf "streamed vs whole image (ours, exact): %.2f ms vs %.2f ms per image: %.1f%% less CPU; vs Pillow decode alone: %.2fx\n",
           os, ot, 100 * (1 - os / ot), pd / os }'
