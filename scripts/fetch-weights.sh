#!/usr/bin/env bash
# scripts/fetch-weights.sh [DEST_DIR] — downloads google/siglip2-base-patch16-224 (config.json, tokenizer.json +
# model.safetensors, about 1.5 GB) for users who have network access.
#
# Without DEST_DIR the files go into the Hugging Face cache layout that siglip2-embed searches by itself
# (<hub>/models--google--siglip2-base-patch16-224/snapshots/<commit>/, <hub> = $HF_HUB_CACHE, else
# $HF_HOME/hub, else ~/.cache/huggingface/hub), so no --weights flag is needed afterwards. With DEST_DIR they
# go there; then run siglip2-embed --weights DEST_DIR (or set SIGLIP2_WEIGHTS=DEST_DIR).
#
# Uses `hf` or `huggingface-cli` when installed (they resume, verify and fill the cache properly), else
# curl. Set HF_TOKEN for gated or rate-limited access. Not exercised by the test suite: the build machines
# have no access to the hub.
set -euo pipefail

REPO=google/siglip2-base-patch16-224
REV=${SIGLIP2_REVISION:-main}
FILES=(config.json model.safetensors tokenizer.json)  # tokenizer.json: for text queries
ENDPOINT=${HF_ENDPOINT:-https://huggingface.co}
DEST=${1:-}

if [ -n "$DEST" ]; then
    mkdir -p "$DEST"
    if command -v hf >/dev/null 2>&1; then
        exec hf download "$REPO" "${FILES[@]}" --revision "$REV" --local-dir "$DEST"
    elif command -v huggingface-cli >/dev/null 2>&1; then
        exec huggingface-cli download "$REPO" "${FILES[@]}" --revision "$REV" --local-dir "$DEST"
    fi
    auth=()
    [ -n "${HF_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $HF_TOKEN")
    for f in "${FILES[@]}"; do
        echo "fetch-weights: $ENDPOINT/$REPO/resolve/$REV/$f -> $DEST/$f" >&2
        # -C - resumes a partial download; the .part name keeps a cut-off file from looking complete.
        curl -fL --retry 3 -C - "${auth[@]}" -o "$DEST/$f.part" "$ENDPOINT/$REPO/resolve/$REV/$f"
        mv "$DEST/$f.part" "$DEST/$f"
    done
    echo "fetch-weights: done; use: siglip2-embed --weights $DEST ..." >&2
    exit 0
fi

if command -v hf >/dev/null 2>&1; then
    exec hf download "$REPO" "${FILES[@]}" --revision "$REV"
elif command -v huggingface-cli >/dev/null 2>&1; then
    exec huggingface-cli download "$REPO" "${FILES[@]}" --revision "$REV"
fi

# curl into the cache layout by hand: blobs are stored once, snapshots/<commit>/ links to them, refs/<rev>
# records the commit. The commit comes from the hub's API; the blob names here are the file names prefixed
# by the commit, not the content hashes huggingface_hub uses (the layout stays readable by siglip2-embed,
# and huggingface_hub will simply download again if it is used later).
HUB=${HF_HUB_CACHE:-${HF_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/huggingface}/hub}
ROOT=$HUB/models--${REPO//\//--}
auth=()
[ -n "${HF_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $HF_TOKEN")
COMMIT=$(curl -fsSL "${auth[@]}" "$ENDPOINT/api/models/$REPO/revision/$REV" |
         grep -o '"sha": *"[0-9a-f]\{40\}"' | head -1 | grep -o '[0-9a-f]\{40\}')
[ -n "$COMMIT" ] || { echo "fetch-weights: could not resolve $REPO@$REV (network? HF_TOKEN?)" >&2; exit 1; }
mkdir -p "$ROOT/blobs" "$ROOT/snapshots/$COMMIT" "$ROOT/refs"
for f in "${FILES[@]}"; do
    blob=$ROOT/blobs/$COMMIT-$f
    echo "fetch-weights: $ENDPOINT/$REPO/resolve/$COMMIT/$f -> $blob" >&2
    curl -fL --retry 3 -C - "${auth[@]}" -o "$blob.part" "$ENDPOINT/$REPO/resolve/$COMMIT/$f"
    mv "$blob.part" "$blob"
    ln -sfn "../../blobs/$COMMIT-$f" "$ROOT/snapshots/$COMMIT/$f"
done
printf '%s' "$COMMIT" > "$ROOT/refs/$REV"
echo "fetch-weights: done: $ROOT/snapshots/$COMMIT (siglip2-embed finds it without --weights)" >&2
