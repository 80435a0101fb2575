# scripts/lib-sass.sh — sourced (not run) by the SASS checks and by `make deps`: the one rule for finding cuobjdump.
# shellcheck shell=bash
#
#   . scripts/lib-sass.sh; sg_find_cuobjdump      sets CUOBJDUMP to the tool's path, or to "" when there is none
#
# Why one place: scripts/sm90-sass-check.sh, scripts/sm100-sass-check.sh (and through it tests/test_sm100_offline.c),
# tests/test_sass_offline.sh and the Makefile's deps recipe must agree on which cuobjdump they use, or a check could
# SKIP in one place while another found the tool. The rule, first match wins:
#   1. $CUOBJDUMP, when set (a path or a command name; kept as given when it cannot be resolved, so a wrong
#      setting makes the check fail loudly instead of skipping)
#   2. cuobjdump in PATH
#   3. $CUDA_HOME/bin/cuobjdump (CUDA_HOME defaults to /usr/local/cuda, as in the Makefile)
#   4. <repo>/.deps/cuda-tools/bin/cuobjdump (what `make deps` fetches: scripts/get-sass-tools.sh)
# cuobjdump -sass runs nvdisasm, which it looks for in NVDISASM_PATH (a directory) or PATH. When NVDISASM_PATH is
# not set and the found cuobjdump has an nvdisasm beside it, NVDISASM_PATH is set (and exported) to that directory,
# so the pair that was installed together is used together (the wheels' 13.2 nvdisasm with its 13.2 cuobjdump).

sg_find_cuobjdump() {
    local root tool="" dir
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    if [ -n "${CUOBJDUMP:-}" ]; then
        tool="$(command -v "$CUOBJDUMP" 2>/dev/null || echo "$CUOBJDUMP")"
    elif command -v cuobjdump >/dev/null 2>&1; then
        tool="$(command -v cuobjdump)"
    elif [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump" ]; then
        tool="${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump"
    elif [ -x "$root/.deps/cuda-tools/bin/cuobjdump" ]; then
        tool="$root/.deps/cuda-tools/bin/cuobjdump"
    fi
    CUOBJDUMP="$tool"
    if [ -n "$tool" ] && [ -z "${NVDISASM_PATH:-}" ]; then
        dir="$(dirname "$tool")"
        if [ -x "$dir/nvdisasm" ]; then
            NVDISASM_PATH="$dir"
            export NVDISASM_PATH
        fi
    fi
}
