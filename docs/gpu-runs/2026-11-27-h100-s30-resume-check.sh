#!/usr/bin/env bash
# Session 30: what --resume's new check compares, measured across backends on a full-size random checkpoint:
# image rows of one model (cpu / cuda / sm90 / sm90 fp8) and the label scores' cosines (cpu vs cuda text tower);
# then the check itself, a file written by cpu resumed by each GPU backend, and another --template.
cd "$(dirname "$0")/.."
R=${OUT:-/tmp/s30a}; mkdir -p $R
exec > >(tee $R/run.log) 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
T0=$SECONDS
make -j16 DEPS_PREFIX=.carry/deps siglip2-embed > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
echo "build $((SECONDS-T0))s"
CK=/tmp/ck
python3 scripts/make_text_fixtures.py --full-size $CK --threads 16 > $R/ck.log 2>&1 || { tail $R/ck.log; exit 1; }
echo "checkpoint $((SECONDS-T0))s"; grep -o '"logit_[a-z]*": [-0-9.e]*' $CK/meta.json 2>/dev/null | head -2
P=$(ls -d $PWD/.carry/photos/*.jpg)
B=./siglip2-embed
for be in cpu cuda sm90 fp8; do
  a=(--backend $be); [ $be = fp8 ] && a=(--backend sm90 --precision fp8)
  $B "${a[@]}" --weights $CK -q -f npy -o $R/img_$be.npy $P || echo "img $be failed"
done
python3 - "$R" > $R/labels.txt <<'PY'
import sys
labels = ["cat", "dog", "car", "tree", "flower", "elephant", "ladybird", "storm", "rain drops", "meadow", "dune",
          "blinds", "water", "a red sports car", "mountain", "beach", "city at night", "bird", "insect", "grass",
          "sky", "cloud", "snow", "forest", "river", "building", "person", "food", "book", "computer",
          "garden", "desert", "ocean", "boat", "train", "airplane", "horse", "leaf", "rock", "sunset"]
print("\n".join(labels))
PY
sed 's/.*/This is a photo of &./' $R/labels.txt > $R/hyp.txt
for be in cpu cuda; do
  $B --backend $be --weights $CK -q --texts-from $R/hyp.txt -f npy -o $R/txt_$be.npy || echo "text $be failed"
done
echo "embeddings $((SECONDS-T0))s"
python3 - "$R" <<'PY'
import sys, numpy as np
R = sys.argv[1]
def n(x): return x / np.linalg.norm(x, axis=1, keepdims=True)
I = {b: n(np.load(f"{R}/img_{b}.npy").astype(np.float64)) for b in ["cpu", "cuda", "sm90", "fp8"]}
print("image rows, pairwise min cosine over 13 photos (the check refuses only below 0.99):")
bs = list(I)
for i, a in enumerate(bs):
    for b in bs[i + 1:]:
        print(f"  {a:5s} vs {b:5s}: {np.min(np.sum(I[a] * I[b], 1)):.7f}")
Tc, Tg = n(np.load(f"{R}/txt_cpu.npy").astype(np.float64)), n(np.load(f"{R}/txt_cuda.npy").astype(np.float64))
print(f"label embeddings cpu vs cuda text tower: min cosine {np.min(np.sum(Tc * Tg, 1)):.7f}")
for b in bs:
    d = np.abs(I[b] @ Tg.T - I[b] @ Tc.T)
    print(f"  scores' cosines, image rows of {b:5s}: text cpu vs cuda moves them by max {d.max():.2e}, median {np.median(d):.2e} (check refuses above 5e-3)")
PY
# the check itself: a file written by cpu (with labels), resumed by each GPU backend; then another template
L=$(paste -sd, $R/labels.txt)
set -- $P
$B --backend cpu --weights $CK -q --labels "$L" --top-k 3 -o $R/f.jsonl $1 $2 $3 $4 $5 $6
for be in cuda sm90 fp8; do
  a=(--backend $be); [ $be = fp8 ] && a=(--backend sm90 --precision fp8)
  cp $R/f.jsonl $R/f_$be.jsonl
  $B "${a[@]}" --weights $CK -v --labels "$L" --top-k 3 --resume -o $R/f_$be.jsonl $P 2>&1 | grep -i "resum\|refus\|warning\|error"
  echo "resume by $be: rc ${PIPESTATUS[0]}, $(wc -l < $R/f_$be.jsonl) rows"
done
cp $R/f.jsonl $R/f_t.jsonl
$B --backend sm90 --weights $CK --labels "$L" --top-k 3 --template "a photo of a {}." --resume -o $R/f_t.jsonl $P 2>&1 | tail -2
echo "another --template: rc ${PIPESTATUS[0]}"
echo "total $((SECONDS-T0))s"
