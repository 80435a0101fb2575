#!/usr/bin/env bash
# Session 24 review rerun: the lab after the review commits, gpu-check (no sanitizers) with the shared spec helpers,
# and hf_embed.py's pool path on 200 corpus images against siglip2-embed sm90 / sm90:fp8.
cd "$(git rev-parse --show-toplevel 2>/dev/null || echo .)"  # run from the repo root: OUT=DIR bash docs/gpu-runs/2026-11-27-h100-s24-review.sh
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
DEPS=(); [ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
make -j"$(nproc)" "${DEPS[@]}" build/tests/test_sm90_lab siglip2-embed > "${OUT:?set OUT}"/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
build/tests/test_sm90_lab > $OUT/lab.txt 2>&1; echo "lab rc $?: $(grep -c '^PASS' $OUT/lab.txt) pass $(grep -c '^FAIL' $OUT/lab.txt) fail"
grep -E '256x192' $OUT/lab.txt | cut -c1-120 | head -3
timeout 200 compute-sanitizer --tool racecheck build/tests/test_sm90_lab --quick > $OUT/racecheck.txt 2>&1
echo "racecheck rc $?: $(grep 'RACECHECK SUMMARY' $OUT/racecheck.txt | tail -1)"
SG_CHECK_SANITIZE=0 OUT=$OUT/check bash scripts/gpu-check.sh > $OUT/check.txt 2>&1; echo "gpu-check rc $?"; grep -E 'vs HF fp32|gpu-check:' $OUT/check.txt
W=/tmp/sg-gpu-work; C=$W/corpus200
python3 ${BENCH:-.carry/bench}/make_corpus.py ${PHOTOS:-.carry/photos} $C 200
find $C -name '*.jpg' | sort > $W/c200.list
python3 scripts/hf_embed.py $W/siglip2-base-random $W/c200-hf.npy --list $W/c200.list
for B in sm90 sm90:fp8; do
  . scripts/lib-gpu.sh; F=$(sg_spec_file $B)
  ./siglip2-embed --weights $W/siglip2-base-random $(sg_spec_args $B) -b 64 -q -f npy -o $W/c200-$F.npy $C
  python3 scripts/gpu_compare.py $W/c200-hf.npy $W/c200-$F.npy "$B vs HF fp32 (200 corpus images)" $(sg_spec_gate $B) --unit
done
