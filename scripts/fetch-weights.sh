#!/usr/bin/env bash
# scripts/fetch-weights.sh [DEST_DIR] — downloads google/siglip2-base-patch16-224 (config.json, tokenizer.json,
# tokenizer_config.json + model.safetensors, about 1.5 GB) for users who have network access.
#
# Without DEST_DIR the files go into the Hugging Face cache layout that siglip2-embed searches by itself
# (<hub>/models--google--siglip2-base-patch16-224/snapshots/<commit>/, <hub> = $HF_HUB_CACHE, else
# $HF_HOME/hub, else ~/.cache/huggingface/hub), so no --weights flag is needed afterwards. With DEST_DIR they
# go there; then run siglip2-embed --weights DEST_DIR (or set SIGLIP2_WEIGHTS=DEST_DIR).
#
# Uses `hf` or `huggingface-cli` when installed (they resume, verify and fill the cache properly), else
# curl. Set HF_TOKEN for gated or rate-limited access. A download that fails (offline, proxy, token) ends
# with one line saying what could not be fetched from where, and leaves nothing behind: the folders this run
# created are removed, and so are its partial files (a folder that existed before keeps what it held).
# Exit status: 0 done, 1 failed. tests/test_scripts.sh checks the offline failure; the download itself is not
# exercised by the test suite (the build machines have no access to the hub).
set -uo pipefail

REPO=google/siglip2-base-patch16-224
REV=${SIGLIP2_REVISION:-main}
# tokenizer.json: the text queries' ids; tokenizer_config.json: its model_input_names (["input_ids"]) say HF passes
# no attention mask, so the text tower attends to the pads too (without the file the class default, a mask, applies)
FILES=(config.json model.safetensors tokenizer.json tokenizer_config.json)
ENDPOINT=${HF_ENDPOINT:-https://huggingface.co}
DEST=${1:-}

created=() # folders this run created (topmost first), removed again if it fails
parts=()   # partial downloads of this run

# mkdir -p that remembers the topmost folder it had to create.
make_dir() {
    local d=$1 top=""
    while [ -n "$d" ] && [ "$d" != / ] && [ "$d" != . ] && [ ! -e "$d" ]; do top=$d; d=$(dirname "$d"); done
    mkdir -p "$1" || fail "cannot create $1"
    [ -n "$top" ] && created+=("$top")
    return 0
}

cleanup() {
    local p
    for p in "${parts[@]}"; do rm -f "$p"; done
    for p in "${created[@]}"; do rm -rf "$p"; done
}

fail() {
    echo "fetch-weights: $*" >&2
    cleanup
    exit 1
}
trap 'fail "interrupted"' INT TERM

# curl URL OUT: downloads into OUT.part (resumable: -C -), then renames it; fails with a clear line.
fetch() {
    local url=$1 out=$2 rc
    echo "fetch-weights: $url -> $out" >&2
    parts+=("$out.part")
    # -f: an HTTP error is an error; -sS: no progress meter on pipes, but curl's own reason is kept
    curl -fL -sS --retry 3 --connect-timeout 20 -C - "${auth[@]}" -o "$out.part" "$url"
    rc=$?
    [ $rc -eq 0 ] || fail "cannot download $url (curl exit $rc: offline, a proxy, or HF_TOKEN for gated access?); nothing was kept"
    mv "$out.part" "$out" || fail "cannot move $out.part into place"
}

auth=()
[ -n "${HF_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $HF_TOKEN")
have_curl=$(command -v curl || true)

if [ -n "$DEST" ]; then
    make_dir "$DEST"
    for cli in hf huggingface-cli; do
        if command -v "$cli" >/dev/null 2>&1; then
            "$cli" download "$REPO" "${FILES[@]}" --revision "$REV" --local-dir "$DEST" ||
                fail "$cli download $REPO failed (offline, a proxy, or HF_TOKEN?); nothing was kept"
            exit 0
        fi
    done
    [ -n "$have_curl" ] || fail "needs hf, huggingface-cli or curl to download; none is installed"
    for f in "${FILES[@]}"; do fetch "$ENDPOINT/$REPO/resolve/$REV/$f" "$DEST/$f"; done
    echo "fetch-weights: done; use: siglip2-embed --weights $DEST ..." >&2
    exit 0
fi

for cli in hf huggingface-cli; do
    if command -v "$cli" >/dev/null 2>&1; then
        "$cli" download "$REPO" "${FILES[@]}" --revision "$REV" ||
            fail "$cli download $REPO failed (offline, a proxy, or HF_TOKEN?)"
        exit 0
    fi
done
[ -n "$have_curl" ] || fail "needs hf, huggingface-cli or curl to download; none is installed"

# curl into the cache layout by hand: blobs are stored once, snapshots/<commit>/ links to them, refs/<rev>
# records the commit. The commit comes from the hub's API; the blob names here are the file names prefixed
# by the commit, not the content hashes huggingface_hub uses (the layout stays readable by siglip2-embed,
# and huggingface_hub will simply download again if it is used later).
HUB=${HF_HUB_CACHE:-${HF_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/huggingface}/hub}
ROOT=$HUB/models--${REPO//\//--}
api="$ENDPOINT/api/models/$REPO/revision/$REV"
meta=$(curl -fsSL --connect-timeout 20 "${auth[@]}" "$api")
rc=$?
[ $rc -eq 0 ] || fail "cannot reach $api (curl exit $rc: offline, a proxy, or HF_TOKEN?); nothing was written"
COMMIT=$(grep -o '"sha": *"[0-9a-f]\{40\}"' <<<"$meta" | head -1 | grep -o '[0-9a-f]\{40\}')
[ -n "$COMMIT" ] || fail "could not resolve $REPO@$REV: the hub's answer has no commit hash; nothing was written"
make_dir "$ROOT/blobs"
make_dir "$ROOT/snapshots/$COMMIT"
make_dir "$ROOT/refs"
for f in "${FILES[@]}"; do
    blob=$ROOT/blobs/$COMMIT-$f
    fetch "$ENDPOINT/$REPO/resolve/$COMMIT/$f" "$blob"
    ln -sfn "../../blobs/$COMMIT-$f" "$ROOT/snapshots/$COMMIT/$f" || fail "cannot link $f into the snapshot"
done
printf '%s' "$COMMIT" > "$ROOT/refs/$REV" || fail "cannot write $ROOT/refs/$REV"
echo "fetch-weights: done: $ROOT/snapshots/$COMMIT (siglip2-embed finds it without --weights)" >&2
