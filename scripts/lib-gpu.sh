# scripts/lib-gpu.sh — sourced by the GPU scripts: the quick loops (scripts/sm90-ab.sh, scripts/sm90-profile.sh) use
# the full-size random checkpoint they time with and the card's state at the start of a run (these two need WORK,
# RES, PY and stamp()); gpu-check.sh and gpu-bench.sh use the backend specs' helpers (no variables needed); the
# lab scripts (sm90-lab.sh, sm90-fp8-lab.sh, sm90-chain-lab.sh, sm90-lean-lab.sh) run their sanitizers through
# sg_lab_sanitizers.

# A backend spec: BACKEND, or BACKEND:PRECISION (sm90:fp8: FC1 and FC2 of layers 2-11 in FP8).
# SG_SPECS: the specs gpu-check.sh checks and gpu-bench.sh times (those that cannot start are skipped there).
SG_SPECS=(cuda sm90 sm100 sm90:fp8)
# sg_spec_args: the command's flags for it, to be word-split where used ("--backend sm90 --precision fp8");
# sg_spec_file: a file-name stem for it (sm90-fp8);
# sg_spec_gate: its gate against HF fp32, issue 12's: cosine >= 0.999 for FP8, else >= 0.9999.
sg_spec_args() { local b=${1%%:*}; echo "--backend $b${1#"$b"}" | sed 's/:/ --precision /'; }
sg_spec_file() { echo "${1/:/-}"; }
sg_spec_gate() { if [ "${1#*:}" = fp8 ]; then echo 0.999; else echo 0.9999; fi; }

# sg_gpu_checkpoint: sets CKPT to $WORK/siglip2-base-random, made once with scripts/make_fixtures.py (speed does not
# depend on the values); exits on failure.
sg_gpu_checkpoint() {
    CKPT=$WORK/siglip2-base-random
    if [ ! -f "$CKPT/model.safetensors" ]; then
        stamp checkpoint
        $PY scripts/make_fixtures.py --full-size "$CKPT" >"$WORK/ckpt.log" 2>&1 || { tail "$WORK/ckpt.log"; exit 1; }
    fi
}

# sg_gpu_info: the GPU's name, driver, clocks, power and temperature, printed and kept as $RES/gpu.txt.
sg_gpu_info() {
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv |
        tee "$RES/gpu.txt"
}

# sg_lab_sanitizers OUT LIMIT CMD...: compute-sanitizer memcheck, synccheck and racecheck on a lab test's command
# (each under `timeout LIMIT`), each log kept as OUT/sanitizer-TOOL.txt, its exit status and summary lines printed.
# Without compute-sanitizer (PATH, then $CUDA_HOME/bin) it says so and runs nothing.
sg_lab_sanitizers() {
    local out=$1 limit=$2 san tool
    shift 2
    san=$(command -v compute-sanitizer || echo "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer")
    if [ ! -x "$san" ]; then
        echo "compute-sanitizer not found (looked in PATH and ${CUDA_HOME:-/usr/local/cuda}/bin): sanitizer runs skipped"
        return 0
    fi
    for tool in memcheck synccheck racecheck; do
        echo "=== compute-sanitizer --tool $tool (${*##*/})"
        timeout "$limit" "$san" --tool "$tool" "$@" >"$out/sanitizer-$tool.txt" 2>&1
        echo "exit $?"
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|FAIL" "$out/sanitizer-$tool.txt" | head -5
    done
}
