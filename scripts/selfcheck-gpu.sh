#!/usr/bin/env bash
# scripts/selfcheck-gpu.sh — the megakernel self-check and its fallback, on a Hopper GPU (issue 7, item 4).
#
#   scripts/selfcheck-gpu.sh   (from anywhere; its logs as one selfcheck-logs.tgz under $OUT when set, else
#                              /tmp/sg-selfcheck)
#
# Conventions of scripts/gpu-check.sh: builds with make -j (DEPS_PREFIX=.carry/deps when present), reuses or
# makes the full-size random checkpoint in $SG_WORK (default /tmp/sg-gpu-work), embeds 3 photos from
# .carry/photos with --no-normalize -f npy. The verdict cache is a fresh folder ($WORK/selfcheck-cache) so the
# first run really runs the check. SIGLIP2_SELFCHECK_VERBOSE=1 makes every run print one stderr line
# "self-check of sm90 against cuda: passed|FAILED|... [(cached)] (reason; seconds); cache note", which is how the
# checks below tell a fresh check from a cache hit (the time of each run is printed too).
#   (a) auto with SIGLIP2_TEST_BREAK_BACKEND=sm90: the check fails, stderr says so, the run uses cuda, and the
#       output equals --backend cuda's byte for byte; a second run gets the FAIL from the cache, same output;
#   (b) auto without the break: sm90 chosen with the check passed (or, if sm90 cannot be created here, the
#       fallback reason printed and cuda used); the second run hits the cache; the embeddings agree with cuda
#       (cosine >= 0.9999); -v names its numerics (bf16); SIGLIP2_SELFCHECK=always reruns it, =off skips it; --info
#       reports the cached verdict;
#   (c) --backend sm90 with the break: forced (no fallback), output differs from cuda, and a warning names the
#       cached failure;
#   (d) an unwritable cache folder: the check still runs and the run still succeeds.
#   (e) SIGLIP2_TEST_BREAK_BACKEND=sm90:crash (the process aborts at the check, as after a kernel fault): the first
#       check runs in a child process, so auto survives on cuda (same bytes) and caches the crash as a failure;
#   (f) auto --precision fp8: sm90 with FC1 and FC2 (layers 2-11) in FP8 checked on its own (FP8 tolerance) and chosen; -v
#       names those numerics; its embeddings within cosine 0.999 of cuda's.
# Exits non-zero on any failure; the last line says how many checks passed, failed and were skipped.
# SG_SELFCHECK_BIN=PATH runs PATH instead of ./siglip2-embed: only for testing this script's own logic with a
# stand-in on a machine without a GPU.
set -uo pipefail
# --batch 32 everywhere: the self-check embeds one image, then one batch of up to --batch; every batch size runs
# through the megakernel, and 32 keeps the runs comparable with earlier ones.
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
RES=${OUT:-/tmp/sg-selfcheck}
WORK=${SG_WORK:-/tmp/sg-gpu-work}
mkdir -p "$RES" "$WORK"
JOBS=$(nproc 2>/dev/null || echo 2)
PY=${PYTHON:-python3}
npass=0 nfail=0 nskip=0
pass() { echo "PASS: $*"; npass=$((npass + 1)); }
fail() { echo "FAIL: $*"; nfail=$((nfail + 1)); }
skip() { echo "SKIP: $*"; nskip=$((nskip + 1)); }
finish() {
    tar czf "$RES/selfcheck-logs.tgz" -C "$SC" . 2>/dev/null
    echo "selfcheck-gpu: $npass passed, $nfail failed, $nskip skipped"
    [ "$nfail" -eq 0 ]
    exit
}
SC=$WORK/selfcheck
rm -rf "$SC"
mkdir -p "$SC"

echo "== selfcheck-gpu $(date -u +%FT%TZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

# --- build
DEPS=()
[ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
if make -j"$JOBS" "${DEPS[@]}" siglip2-embed >"$SC/build.log" 2>&1; then
    pass "build (make -j$JOBS ${DEPS[*]})"
else
    tail -30 "$SC/build.log"
    fail "build: see $SC/build.log"
    finish
fi
BIN=${SG_SELFCHECK_BIN:-$ROOT/siglip2-embed} # override: only to test this script's own logic with a stand-in

# --- checkpoint (as gpu-check.sh makes it)
CKPT=$WORK/siglip2-base-random
if [ ! -f "$CKPT/model.safetensors" ]; then
    if $PY scripts/make_fixtures.py --full-size "$CKPT" >"$SC/ckpt.log" 2>&1; then
        pass "full-size random checkpoint written to $CKPT"
    else
        tail -20 "$SC/ckpt.log"
        fail "full-size random checkpoint: see $SC/ckpt.log"
        finish
    fi
fi

PHOTOS=$ROOT/.carry/photos
[ -d "$PHOTOS" ] || PHOTOS=$WORK/photos
mapfile -t FILES < <(ls "$PHOTOS"/*.jpg 2>/dev/null | sort | head -3)
if [ "${#FILES[@]}" -lt 2 ]; then
    fail "no photographs found in .carry/photos or $WORK/photos"
    finish
fi

export SIGLIP2_CACHE_DIR=$SC/cache SIGLIP2_SELFCHECK_VERBOSE=1
unset SIGLIP2_SELFCHECK SIGLIP2_TEST_BREAK_BACKEND

# run NAME [env assignments...] -- [siglip2-embed args...]: embeds FILES into $SC/NAME.npy; stderr in
# $SC/NAME.err; prints the wall time; returns the exit status.
run() {
    local name=$1; shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    rm -f "$SC/$name.npy" "$SC/$name.npy.paths"
    local t0 rc
    t0=$(date +%s%N)
    env "${envs[@]}" "$BIN" --weights "$CKPT" --batch 32 --no-normalize -v -q -f npy -o "$SC/$name.npy" "$@" \
        "${FILES[@]}" >"$SC/$name.out" 2>"$SC/$name.err"
    rc=$?
    printf '    %-14s exit %d, %5d ms; %s\n' "$name" "$rc" $((($(date +%s%N) - t0) / 1000000)) \
        "$(grep -m1 'self-check of' "$SC/$name.err" | cut -c1-200)"
    return $rc
}
same_bytes() { cmp -s "$SC/$1.npy" "$SC/$2.npy" && cmp -s "$SC/$1.npy.paths" "$SC/$2.npy.paths"; }
chosen() { sed -n 's/^siglip2-embed: backend \([a-z0-9]*\): .*/\1/p' "$SC/$1.err" | head -1; }

# --- the reference output, and whether sm90 can be created here at all
run cuda -- --backend cuda || { cat "$SC/cuda.err"; fail "--backend cuda did not run"; finish; }
HAVE_SM90=1
if ! run sm90 -- --backend sm90; then
    HAVE_SM90=0
    echo "INFO: --backend sm90 cannot run here: $(grep -v '^\s*$' "$SC/sm90.err" | tail -1)"
fi

# --- (a) auto, sm90 broken on purpose
run auto_break SIGLIP2_TEST_BREAK_BACKEND=sm90 -- --backend auto
if [ "$HAVE_SM90" = 1 ]; then
    if grep -q 'warning: the sm90 megakernel failed its self-check' "$SC/auto_break.err" &&
        grep -q 'self-check of sm90 against cuda: FAILED (image' "$SC/auto_break.err"; then
        pass "(a) auto + break: stderr names the failure: $(grep -m1 'warning:' "$SC/auto_break.err" | cut -c1-200)"
    else
        sed 's/^/    | /' "$SC/auto_break.err"
        fail "(a) auto + break: no self-check failure reported"
    fi
else
    skip "(a) auto + break: sm90 unavailable, so no self-check can run (auto used: $(chosen auto_break))"
fi
if [ "$(chosen auto_break)" = cuda ] && same_bytes auto_break cuda; then
    pass "(a) auto + break: backend cuda used, output == --backend cuda byte for byte"
else
    fail "(a) auto + break: backend '$(chosen auto_break)', output $(same_bytes auto_break cuda && echo equal || echo DIFFERENT)"
fi
run auto_break2 SIGLIP2_TEST_BREAK_BACKEND=sm90 -- --backend auto
if [ "$HAVE_SM90" = 1 ]; then
    if grep -q 'FAILED (cached)' "$SC/auto_break2.err" && [ "$(chosen auto_break2)" = cuda ] &&
        same_bytes auto_break2 cuda; then
        pass "(a) second auto + break run: FAIL read from the cache, cuda used, same bytes"
    else
        fail "(a) second auto + break run: $(grep -m1 'self-check of' "$SC/auto_break2.err")"
    fi
fi

# --- (b) auto, nothing broken
run auto1 -- --backend auto
run auto2 -- --backend auto
if [ "$HAVE_SM90" = 1 ]; then
    if [ "$(chosen auto1)" = sm90 ] && grep -q 'self-check of sm90 against cuda: passed (' "$SC/auto1.err" &&
        grep -q 'verdict written to' "$SC/auto1.err"; then
        pass "(b) auto: sm90 chosen, self-check ran and passed: $(grep -m1 'self-check of' "$SC/auto1.err" | cut -c1-200)"
    else
        sed 's/^/    | /' "$SC/auto1.err"
        fail "(b) auto: backend '$(chosen auto1)', self-check not passed"
    fi
    if grep -q '^siglip2-embed: numerics: bf16 GEMMs and attention with fp32 accumulation$' "$SC/auto1.err"; then
        pass "(b) auto: -v says the numerics ($(grep -m1 '^siglip2-embed: numerics' "$SC/auto1.err"))"
    else
        fail "(b) auto: -v numerics line: '$(grep -m1 'numerics' "$SC/auto1.err")'"
    fi
    if [ "$(chosen auto2)" = sm90 ] && grep -q 'passed (cached)' "$SC/auto2.err"; then
        pass "(b) second auto run: sm90, verdict from the cache (no check run)"
    else
        fail "(b) second auto run: $(grep -m1 'self-check of' "$SC/auto2.err")"
    fi
    # gpu_compare.py prints its own PASS/FAIL line
    if $PY scripts/gpu_compare.py "$SC/cuda.npy" "$SC/auto1.npy" "(b) auto (sm90) vs --backend cuda" 0.9999 \
        >"$SC/cmp_auto1.txt" 2>&1; then
        npass=$((npass + 1))
    else
        nfail=$((nfail + 1))
    fi
    tail -1 "$SC/cmp_auto1.txt"
    run auto_always SIGLIP2_SELFCHECK=always -- --backend auto
    if grep -q 'self-check of sm90 against cuda: passed (' "$SC/auto_always.err" &&
        ! grep -q 'passed (cached)' "$SC/auto_always.err"; then
        pass "(b) SIGLIP2_SELFCHECK=always: checked again despite the cached pass"
    else
        fail "(b) SIGLIP2_SELFCHECK=always: $(grep -m1 'self-check of' "$SC/auto_always.err")"
    fi
    run auto_off SIGLIP2_SELFCHECK=off SIGLIP2_TEST_BREAK_BACKEND=sm90 -- --backend auto
    if grep -q 'self-check of sm90 against cuda: skipped' "$SC/auto_off.err" && [ "$(chosen auto_off)" = sm90 ] &&
        ! same_bytes auto_off cuda; then
        pass "(b) SIGLIP2_SELFCHECK=off: unchecked, the broken sm90 runs (that is why it is unsafe)"
    else
        fail "(b) SIGLIP2_SELFCHECK=off: $(grep -m1 'self-check of' "$SC/auto_off.err"), backend $(chosen auto_off)"
    fi
    "$BIN" --weights "$CKPT" --batch 32 --info >"$SC/info.txt" 2>&1 # --batch: the key holds the batch plan
    if grep -q 'self-check of sm90: passed earlier' "$SC/info.txt"; then
        pass "(b) --info: $(grep -m1 'self-check of sm90' "$SC/info.txt" | cut -c1-160)"
    else
        grep 'self-check' "$SC/info.txt" | sed 's/^/    | /'
        fail "(b) --info does not report the cached verdict"
    fi
else
    if [ "$(chosen auto1)" = cuda ] && grep -q 'sm90 unavailable' "$SC/auto1.err" && same_bytes auto1 cuda; then
        pass "(b) auto without sm90: falls back to cuda and says why: $(grep -m1 'backend cuda' "$SC/auto1.err" | cut -c1-200)"
    else
        sed 's/^/    | /' "$SC/auto1.err"
        fail "(b) auto without sm90: backend '$(chosen auto1)'"
    fi
fi

# --- (c) forced sm90 with the break
if [ "$HAVE_SM90" = 1 ]; then
    if run forced_break SIGLIP2_TEST_BREAK_BACKEND=sm90 -- --backend sm90 && [ "$(chosen forced_break)" = sm90 ] &&
        ! same_bytes forced_break cuda && ! same_bytes forced_break sm90; then
        pass "(c) --backend sm90 + break: forced, no fallback, output differs from cuda and from unbroken sm90"
    else
        fail "(c) --backend sm90 + break: exit/backend/output not as expected (backend '$(chosen forced_break)')"
    fi
    $PY scripts/gpu_compare.py "$SC/cuda.npy" "$SC/forced_break.npy" "(c) broken sm90 vs cuda (expected low)" 0.99 \
        >"$SC/cmp_forced.txt" 2>&1
    echo "    INFO: $(tail -1 "$SC/cmp_forced.txt" | sed -E 's/^(PASS|FAIL): //')"
    if grep -q 'failed its self-check on this GPU before' "$SC/forced_break.err"; then
        pass "(c) --backend sm90 + break warns about the cached failure: $(grep -m1 'warning' "$SC/forced_break.err" | cut -c1-160)"
    else
        fail "(c) --backend sm90 + break: no warning about the cached failure"
    fi
else
    skip "(c) --backend sm90 + break: sm90 unavailable here"
fi

# --- (e) a megakernel that brings its process down during the check (as a kernel fault does to a CUDA context):
# the check runs in a child process, so the run goes on with cuda, and the crash is cached as a failure
run auto_crash SIGLIP2_TEST_BREAK_BACKEND=sm90:crash -- --backend auto
if [ "$HAVE_SM90" = 1 ]; then
    if [ "$(chosen auto_crash)" = cuda ] && same_bytes auto_crash cuda &&
        grep -q 'crashed in a child process' "$SC/auto_crash.err"; then
        pass "(e) auto + crash: run survives on cuda, same bytes: $(grep -m1 'warning:' "$SC/auto_crash.err" | cut -c1-200)"
    else
        sed 's/^/    | /' "$SC/auto_crash.err" | tail -8
        fail "(e) auto + crash: backend '$(chosen auto_crash)', output $(same_bytes auto_crash cuda && echo equal || echo DIFFERENT)"
    fi
    run auto_crash2 SIGLIP2_TEST_BREAK_BACKEND=sm90:crash -- --backend auto
    if [ "$(chosen auto_crash2)" = cuda ] && grep -q 'FAILED (cached)' "$SC/auto_crash2.err"; then
        pass "(e) second auto + crash run: the crash verdict read from the cache, cuda used"
    else
        fail "(e) second auto + crash run: backend '$(chosen auto_crash2)'"
    fi
else
    skip "(e) auto + crash: sm90 unavailable"
fi

# --- (f) auto with --precision fp8: its own self-check (the FP8 tolerance, 0.99; kernel/selfcheck.c), passed, sm90
# with FC1 and FC2 (layers 2-11) in FP8 chosen; its embeddings within the FP8 gate of cuda's
if [ "$HAVE_SM90" = 1 ]; then
    run auto_fp8 -- --backend auto --precision fp8
    if [ "$(chosen auto_fp8)" = sm90 ] && grep -q 'self-check of sm90 against cuda: passed' "$SC/auto_fp8.err"; then
        pass "(f) auto --precision fp8: sm90 chosen, its own check passed: $(grep -m1 'self-check of' "$SC/auto_fp8.err" | cut -c1-200)"
    else
        sed 's/^/    | /' "$SC/auto_fp8.err" | tail -5
        fail "(f) auto --precision fp8: backend '$(chosen auto_fp8)', self-check not passed"
    fi
    if grep -q '^siglip2-embed: numerics: fp8: FC1 of every layer and FC2 of layers 2-11 in E4M3' "$SC/auto_fp8.err"; then
        pass "(f) auto --precision fp8: -v says the numerics ($(grep -m1 '^siglip2-embed: numerics' "$SC/auto_fp8.err"))"
    else
        fail "(f) auto --precision fp8: -v numerics line: '$(grep -m1 'numerics' "$SC/auto_fp8.err")'"
    fi
    if $PY scripts/gpu_compare.py "$SC/cuda.npy" "$SC/auto_fp8.npy" "(f) auto --precision fp8 vs --backend cuda" 0.999 \
        >"$SC/cmp_fp8.txt" 2>&1 && grep -q '^PASS' "$SC/cmp_fp8.txt"; then
        pass "$(head -1 "$SC/cmp_fp8.txt" | sed 's/^PASS: //')"
    else
        fail "$(head -1 "$SC/cmp_fp8.txt" | sed 's/^FAIL: //')"
    fi
else
    skip "(f) auto --precision fp8: sm90 unavailable"
fi

# --- (d) unwritable cache folder
run nocache SIGLIP2_CACHE_DIR=/proc/siglip2-no-such-dir -- --backend auto
rc=$?
if [ "$rc" -eq 0 ] && { [ "$HAVE_SM90" = 0 ] || grep -q 'not cached' "$SC/nocache.err"; }; then
    pass "(d) unwritable cache folder: the run succeeds ($(chosen nocache))$( [ "$HAVE_SM90" = 1 ] && echo ', check ran, not cached')"
else
    fail "(d) unwritable cache folder: exit $rc, $(grep -m1 'self-check of' "$SC/nocache.err")"
fi

ls -la "$SIGLIP2_CACHE_DIR" > "$SC/cache-listing.txt" 2>&1
cat "$SIGLIP2_CACHE_DIR"/selfcheck-*.txt > "$SC/cache-files.txt" 2>/dev/null
# The runs' stderr and the cache files reach $RES inside selfcheck-logs.tgz only (finish): copied out one by one as
# well, they were a dozen files, and a results folder that holds too many came back without the other scripts'
# reports (session 7).
finish
