#!/usr/bin/env bash
# scripts/sm100-check.sh OUTDIR — everything about the Blackwell backend that a Hopper (H100/H200) machine can
# check, in one call of about 2-3 minutes on 16 cores; logs and a summary go to OUTDIR.
#
#   1. Builds in its own folder ($SM100_CHECK_BUILD, default /tmp/sg-build-sm100chk) with kernel/sm100 and the lab's
#      kernel/lab/sm100_*.cu compiled for sm_100a AND sm_90 (Makefile variable GENCODE_SM100 overridden on the
#      command line; the tcgen05 code is guarded, so on sm_90 only the plain-CUDA quantisers and the mma.sync
#      attention have bodies). If build/libsiglip2.a exists, build/ is copied first and only those and the tests
#      are recompiled. Uses DEPS_PREFIX=.carry/deps when
#      the Debian headers are missing (the GPU machine).
#   2. Runs test_sm100_quant (GPU quantisers bit-exact against the CPU's sg_mxfp8_quantize, on this GPU),
#      test_sm100_attn (the Blackwell megakernel's mma.sync attention task, which runs on sm_90 too),
#      test_sm100_backend (the backend's refusals; the device one on this non-B200 GPU), test_sm100_desc, and
#      test_sm100_tile and test_sm100_gemm (tcgen05 on the GPU: SKIP without a B200; on one they are the checks).
#   3. Runs scripts/sm100-sass-check.sh (ptxas registers/spills, and the SASS opcodes with cuobjdump).
# Exit status: 0 when nothing FAILed, 1 otherwise. OUTDIR/summary.txt has every PASS/FAIL/SKIP line.
# On the GPU machine, after the usual build in the same call (then only kernel/sm100 is recompiled here):
#   make -j16 DEPS_PREFIX=.carry/deps && scripts/sm100-check.sh $OUT/sm100        (carry: .carry)
set -u
OUT="${1:?usage: scripts/sm100-check.sh OUTDIR}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
mkdir -p "$OUT"
BUILD="${SM100_CHECK_BUILD:-${TMPDIR:-/tmp}/sg-build-sm100chk}"
JOBS="${JOBS:-$(nproc)}"
SUM="$OUT/summary.txt"
: >"$SUM"
note() { echo "$@" | tee -a "$SUM"; }
T0=$SECONDS

note "== sm100-check $(date -u +%FT%TZ) on $(hostname)"
(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>&1 || echo "no nvidia-smi") | \
    sed 's/^/   GPU: /' | tee -a "$SUM"
DEPS=()
if [ ! -e /usr/include/turbojpeg.h ] && [ -d .carry/deps ]; then DEPS=(DEPS_PREFIX=.carry/deps); fi

# 1. Build.
if [ -f build/libsiglip2.a ] && [ ! -d "$BUILD" ]; then
    cp -a build "$BUILD"
    rm -f "$BUILD"/kernel/sm100/*.o "$BUILD"/kernel/lab/sm100_*.o "$BUILD"/libsiglip2.a "$BUILD"/liblab.a \
        "$BUILD"/tests/test_sm100_*
fi
TARGETS=()
for t in test_sm100_quant test_sm100_attn test_sm100_backend test_sm100_desc test_sm100_tile test_sm100_gemm; do TARGETS+=("$BUILD/tests/$t"); done
if ! make -j"$JOBS" BUILD="$BUILD" "${DEPS[@]}" \
        GENCODE_SM100="-gencode arch=compute_100a,code=sm_100a -gencode arch=compute_90,code=sm_90" \
        "${TARGETS[@]}" >"$OUT/build.log" 2>&1; then
    note "FAIL: build (sm_100a + sm_90 for kernel/sm100 and kernel/lab/sm100_*) failed; tail of $OUT/build.log:"
    tail -30 "$OUT/build.log" | sed 's/^/    /' | tee -a "$SUM"
    exit 1
fi
note "   build: $((SECONDS - T0)) s"

# 2. Tests (each prints PASS/FAIL/SKIP lines; a non-zero exit without a FAIL line counts as a failure). Files
# in OUTDIR: summary.txt, build.log, tests.log, sass.log (the device tool returns at most 8).
fail=0
: >"$OUT/tests.log"
for t in test_sm100_quant test_sm100_attn test_sm100_backend test_sm100_desc test_sm100_tile test_sm100_gemm; do
    t1=$SECONDS
    SG_ROOT="$ROOT" timeout 300 "$BUILD/tests/$t" >"$OUT/.$t.log" 2>&1
    rc=$?
    { echo "=== $t (exit $rc)"; cat "$OUT/.$t.log"; } >>"$OUT/tests.log"
    grep -E '^(PASS|FAIL|SKIP|    )' "$OUT/.$t.log" | sed "s/^/[$t] /" | tee -a "$SUM"
    if [ "$rc" -ne 0 ]; then
        grep -q '^FAIL' "$OUT/.$t.log" || note "FAIL: [$t] exited with status $rc"
        fail=1
    fi
    rm -f "$OUT/.$t.log"
    note "   $t: $((SECONDS - t1)) s"
done

# 3. Offline kernel checks with cuobjdump.
t1=$SECONDS
scripts/sm100-sass-check.sh >"$OUT/sass.log" 2>&1 || fail=1
sed 's/^/[sass] /' "$OUT/sass.log" | tee -a "$SUM"
note "   sass check: $((SECONDS - t1)) s; total $((SECONDS - T0)) s"
if grep -q '^\(\[[^]]*\] \)\?FAIL' "$SUM"; then fail=1; fi
note "== sm100-check: $([ $fail -eq 0 ] && echo 'no failures' || echo 'FAILURES (see above)')"
exit $fail
