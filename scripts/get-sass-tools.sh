#!/usr/bin/env bash
# scripts/get-sass-tools.sh — fetch cuobjdump + nvdisasm so the SASS checks can run where the CUDA toolkit lacks them.
#
#   scripts/get-sass-tools.sh [DEST]          (default DEST = <repo>/.deps/cuda-tools; the tools go to DEST/bin)
#
# Why: the SASS checks (scripts/sm90-sass-check.sh, scripts/sm100-sass-check.sh, run by `make test`) need cuobjdump,
# and cuobjdump -sass needs nvdisasm. The CI image and the build machines have nvcc 13.0 but neither tool, so those
# checks used to SKIP there. NVIDIA publishes both as PyPI wheels (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm);
# 13.2.51, the oldest CUDA 13 release on PyPI (there is no 13.0), disassembles the sm_90a and sm_100a objects that
# nvcc 13.0 builds. They are build-time tools only: nothing at run time uses them.
#
# How: python3's standard library alone (Debian's python3 has no pip): download each wheel of the pinned version
# from files.pythonhosted.org, check its sha256 against the value pinned below (from PyPI's JSON API,
# digests.sha256 of the manylinux x86_64 wheel), take only nvidia/cu13/bin/<tool> out of the zip into DEST/bin,
# chmod +x, then check that `cuobjdump --version` and `nvdisasm --version` run. Both are unpacked into a staging
# folder and moved into DEST/bin only when both wheels verified, so a failed or interrupted run never leaves a
# cuobjdump without its nvdisasm (the checks would then FAIL instead of SKIP) or a half-written tool.
# Idempotent: does nothing when DEST/bin holds both tools, they run, and cuobjdump reports the pinned version.
# On a machine that is not x86_64 it prints SKIP and exits 0 (only the x86_64 wheels are pinned).
# Exit status: 0 installed (or already there, or skipped), 1 failure (the message says what failed).
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:-$ROOT/.deps/cuda-tools}"
VERSION=13.2.51
# tool  wheel URL  sha256 (https://pypi.org/pypi/<name>/json, release 13.2.51, manylinux2014_x86_64 wheel)
WHEELS=(
    "cuobjdump https://files.pythonhosted.org/packages/a9/2c/af21e3b8eecbf1e9c373967fe517fd5236d061646664a98277de7d21c420/nvidia_cuda_cuobjdump-13.2.51-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 95c69d3ddf0c2c1f535ec44c3433a66aeee19f588d9d22f73356e20b25f12b50"
    "nvdisasm https://files.pythonhosted.org/packages/ad/34/f19b4dd50158e7dc18c55654f844d87bf188d2a2b230374620e6b126a6c9/nvidia_cuda_nvdisasm-13.2.51-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl 5a7acf77c55d6d2911ed6155d4d5bc156ffadf9df7a68a89b0c1155f4b13688c"
)

say() { echo "get-sass-tools: $*"; }
die() { echo "get-sass-tools: ERROR: $*" >&2; exit 1; }

# Both tools present, runnable, and of the pinned version.
tools_ok() {
    [ -x "$DEST/bin/cuobjdump" ] && [ -x "$DEST/bin/nvdisasm" ] || return 1
    "$DEST/bin/nvdisasm" --version >/dev/null 2>&1 || return 1
    "$DEST/bin/cuobjdump" --version 2>/dev/null | grep -q "V$VERSION"
}

arch="$(uname -m)"
if [ "$arch" != x86_64 ]; then
    say "SKIP: this machine is $arch; only the x86_64 wheels are pinned here (the SASS checks will SKIP)"
    exit 0
fi
if tools_ok; then
    say "cuobjdump + nvdisasm $VERSION already in $DEST/bin"
    exit 0
fi
PYTHON="$(command -v python3 || true)"
[ -n "$PYTHON" ] || die "python3 not found (it downloads and unpacks the wheels)"
mkdir -p "$DEST/bin" || die "cannot create $DEST/bin"
STAGE="$(mktemp -d "$DEST/bin/.stage.XXXXXX")" || die "cannot create a staging folder in $DEST/bin"
trap 'rm -rf "$STAGE"' EXIT

for w in "${WHEELS[@]}"; do
    read -r tool url sha <<<"$w"
    say "fetching $tool $VERSION from $url"
    "$PYTHON" - "$tool" "$url" "$sha" "$STAGE" <<'PY' || die "$tool: not installed (see the message above)"
import hashlib, io, os, sys, time, urllib.error, urllib.request, zipfile

tool, url, want, bindir = sys.argv[1:5]
member = "nvidia/cu13/bin/" + tool
data, err = None, None
for attempt in range(3):
    try:
        with urllib.request.urlopen(url, timeout=120) as r:
            data = r.read()
        break
    except Exception as e:  # network errors and 5xx: retry, then report the last one; 4xx will not change
        err = e
        if isinstance(e, urllib.error.HTTPError) and 400 <= e.code < 500:
            break
        time.sleep(2 * (attempt + 1))
if data is None:
    sys.exit(f"get-sass-tools: ERROR: download failed: {url}: {err}")
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"get-sass-tools: ERROR: sha256 mismatch for {url}: got {got}, pinned {want} ({len(data)} bytes)")
try:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        payload = z.read(member)
except (zipfile.BadZipFile, KeyError) as e:
    sys.exit(f"get-sass-tools: ERROR: {url}: no {member} in the wheel: {e}")
path = os.path.join(bindir, tool)
with open(path, "wb") as f:
    f.write(payload)
os.chmod(path, 0o755)
print(f"get-sass-tools: {tool}: {len(payload)} bytes, wheel sha256 verified")
PY
done
# nvdisasm first: a cuobjdump in DEST/bin is what the lookup (scripts/lib-sass.sh) takes as "installed".
for tool in nvdisasm cuobjdump; do
    mv -f "$STAGE/$tool" "$DEST/bin/$tool" || die "cannot move $tool into $DEST/bin"
done

"$DEST/bin/nvdisasm" --version >/dev/null 2>&1 || die "$DEST/bin/nvdisasm --version does not run"
ver="$("$DEST/bin/cuobjdump" --version 2>&1)" || die "$DEST/bin/cuobjdump --version does not run: $ver"
tools_ok || die "$DEST/bin/cuobjdump is not version $VERSION: $(echo "$ver" | tail -n 1)"
say "installed cuobjdump + nvdisasm in $DEST/bin ($(echo "$ver" | grep -o "V$VERSION"))"
