#!/usr/bin/env bash
# scripts/get-sass-tools.sh — fetch cuobjdump + nvdisasm so the SASS checks can run where the CUDA toolkit lacks them.
#
#   scripts/get-sass-tools.sh [DEST]          (default DEST = <repo>/.deps/cuda-tools; the tools go to DEST/bin)
#
# Why: the SASS checks (scripts/sm90-sass-check.sh, scripts/sm100-sass-check.sh, run by `make test`) need cuobjdump,
# and cuobjdump -sass needs nvdisasm. The CI image and the build machines have nvcc 13.0 but neither tool, so those
# checks used to SKIP there. NVIDIA publishes both as Python wheels (nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm);
# 13.2.51, the oldest CUDA 13 release published that way (there is no 13.0), disassembles the sm_90a and sm_100a
# objects that nvcc 13.0 builds. They are build-time tools only: nothing at run time uses them.
#
# How: pip, by package name and pinned version, with pip's hash-checking mode (`python3 -m pip download --no-deps
# --only-binary=:all: --require-hashes`, so pip itself refuses a wheel whose sha256 is not the pinned one): it
# downloads from whatever index pip is configured to use (a mirror, a proxy, a local --find-links folder) and
# installs nothing, so Debian's "externally managed" rule (PEP 668) does not apply. Then python3's standard library
# checks each wheel's sha256 again against the pins below (the manylinux2014 x86_64 wheels of release 13.2.51), takes
# only nvidia/cu13/bin/<tool> out of the zip into DEST/bin, chmod +x, and checks that `cuobjdump --version` and
# `nvdisasm --version` run. Both are unpacked into a staging folder and moved into DEST/bin only when both wheels
# verified, so a failed or interrupted run never leaves a cuobjdump without its nvdisasm (the checks would then FAIL
# instead of SKIP) or a half-written tool. pip comes from Debian's python3-pip (`make deps` installs it).
# Idempotent: does nothing when DEST/bin holds both tools, they run, and cuobjdump reports the pinned version.
# On a machine that is not x86_64 it prints SKIP and exits 0 (only the x86_64 wheels are pinned).
# Exit status: 0 installed (or already there, or skipped), 1 failure (the message says what failed).
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${1:-$ROOT/.deps/cuda-tools}"
VERSION=13.2.51
# tool  package  sha256 of its manylinux2014_x86_64 wheel, release 13.2.51 (the index's published digest)
WHEELS=(
    "cuobjdump nvidia-cuda-cuobjdump 95c69d3ddf0c2c1f535ec44c3433a66aeee19f588d9d22f73356e20b25f12b50"
    "nvdisasm nvidia-cuda-nvdisasm 5a7acf77c55d6d2911ed6155d4d5bc156ffadf9df7a68a89b0c1155f4b13688c"
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
# Debian's own python3 first: that is the one `make deps` equips with python3-pip.
PYTHON="${PYTHON:-$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3 || true)}"
[ -n "$PYTHON" ] || die "python3 not found (pip downloads the wheels, python3 unpacks them)"
"$PYTHON" -m pip --version >/dev/null 2>&1 ||
    die "'$PYTHON -m pip' does not run: install pip (Debian: apt-get install python3-pip; \`make deps\` does it)"
mkdir -p "$DEST/bin" || die "cannot create $DEST/bin"
STAGE="$(mktemp -d "$DEST/bin/.stage.XXXXXX")" || die "cannot create a staging folder in $DEST/bin"
trap 'rm -rf "$STAGE"' EXIT

# One requirements file for both wheels: pip's hash-checking mode needs every requirement pinned by version and hash.
for w in "${WHEELS[@]}"; do
    read -r tool pkg sha <<<"$w"
    echo "$pkg==$VERSION --hash=sha256:$sha"
done >"$STAGE/requirements.txt"
say "downloading nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm $VERSION with $PYTHON -m pip"
# --platform/--python-version pin the wheel's tags whatever the local python; --no-deps: the tools need nothing else.
if ! "$PYTHON" -m pip download -q --no-deps --only-binary=:all: --require-hashes \
        --platform manylinux2014_x86_64 --python-version 3 --implementation py \
        -r "$STAGE/requirements.txt" -d "$STAGE/wheels" >"$STAGE/pip.log" 2>&1; then
    sed 's/^/    /' "$STAGE/pip.log" | tail -15 >&2
    die "pip could not download or verify the wheels (see pip's message above: no network or index, or a hash that is not the pinned one)"
fi

for w in "${WHEELS[@]}"; do
    read -r tool pkg sha <<<"$w"
    "$PYTHON" - "$tool" "$pkg" "$VERSION" "$sha" "$STAGE" <<'PY' || die "$tool: not installed (see the message above)"
import glob, hashlib, os, sys, zipfile

tool, pkg, version, want, stage = sys.argv[1:6]
member = "nvidia/cu13/bin/" + tool
found = glob.glob(os.path.join(stage, "wheels", pkg.replace("-", "_") + "-" + version + "-*.whl"))
if len(found) != 1:
    sys.exit(f"get-sass-tools: ERROR: expected one {pkg} {version} wheel from pip, found {found}")
data = open(found[0], "rb").read()
got = hashlib.sha256(data).hexdigest()
if got != want:
    sys.exit(f"get-sass-tools: ERROR: sha256 mismatch for {os.path.basename(found[0])}: got {got}, pinned {want}")
try:
    with zipfile.ZipFile(found[0]) as z:
        payload = z.read(member)
except (zipfile.BadZipFile, KeyError) as e:
    sys.exit(f"get-sass-tools: ERROR: {os.path.basename(found[0])}: no {member} in the wheel: {e}")
path = os.path.join(stage, tool)
with open(path, "wb") as f:
    f.write(payload)
os.chmod(path, 0o755)
print(f"get-sass-tools: {tool}: {len(payload)} bytes from {os.path.basename(found[0])}, sha256 verified")
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
