#!/usr/bin/env bash
# Session 29: end to end on the 4,000-JPEG corpus, main before the AVX2 resize kernels (.carry/base.tar) against
# this tree, alternated 3 rounds, --backend sm90 -b 256 -v; Pillow decode-only and decode+resize on 16 processes
# beside them; the two builds' outputs compared byte for byte.
cd "$(dirname "$0")/.."
R=/tmp/s29c; rm -rf $R; mkdir -p $R
TOP=$PWD; WORK=/tmp/sg-gpu-work; mkdir -p $WORK; PY=${SG_PYTHON:-python3}; stamp() { :; }
. scripts/lib-gpu.sh
{
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Core|Socket|Flags" | sed 's/\(Flags:\).*\(avx2\).*/\1 ...\2... (avx512f: '"$(grep -c avx512f /proc/cpuinfo)"' cpus)/'
rm -rf /tmp/base; mkdir -p /tmp/base; tar -C /tmp/base -xf .carry/base.tar
( cd /tmp/base && make -j8 DEPS_PREFIX=$TOP/.carry/deps siglip2-embed > $R/build-base.log 2>&1; echo "base build rc $?" ) &
make -j8 DEPS_PREFIX=.carry/deps siglip2-embed > $R/build-new.log 2>&1; echo "new build rc $?"
wait
sg_gpu_checkpoint
CORPUS=$WORK/corpus4000
[ -d $CORPUS ] || $PY .carry/bench/make_corpus.py .carry/photos $CORPUS 4000 > $R/corpus.log 2>&1
echo "corpus: $(find $CORPUS -name '*.jpg' | wc -l) JPEGs, $(du -sm $CORPUS | cut -f1) MB"
cat $(find $CORPUS -name '*.jpg') > /dev/null
$PY - "$CORPUS" <<'PY'
import glob, os, sys, time
from multiprocessing import Pool
from PIL import Image
files = sorted(glob.glob(os.path.join(sys.argv[1], "*", "*.jpg")))
def dec(f):
    im = Image.open(f); im.load(); return 0
def decres(f):
    return Image.open(f).convert("RGB").resize((224, 224), Image.BILINEAR).size[0]
for name, fn in (("Pillow decode-only", dec), ("Pillow decode+resize", decres)):
    with Pool(16) as p:
        t = time.time(); p.map(fn, files, chunksize=8); dt = time.time() - t
    print(f"{name}, 16 processes: {len(files) / dt:.0f} images/s", flush=True)
PY
for round in 1 2 3; do
  for b in base new; do
    BIN=./siglip2-embed; [ $b = base ] && BIN=/tmp/base/siglip2-embed
    rm -f $R/e2e-$b.npy $R/e2e-$b.npy.paths
    t0=$(date +%s%N)
    $BIN --weights $CKPT --backend sm90 -b 256 -v -f npy -o $R/e2e-$b.npy $CORPUS 2> $R/e2e-$b-$round.err
    rc=$?; t1=$(date +%s%N)
    n=$($PY -c "import numpy as np; print(np.load('$R/e2e-$b.npy').shape[0])")
    echo "round $round $b: rc $rc, $n images in $(( (t1 - t0) / 1000000 )) ms: $($PY -c "print(f'{$n / (($t1 - $t0) / 1e9):.0f}')") images/s"
    grep -iE "resize|decode|workers" $R/e2e-$b-$round.err | head -6 | sed 's/^/    /'
  done
  cmp $R/e2e-base.npy $R/e2e-new.npy && cmp $R/e2e-base.npy.paths $R/e2e-new.npy.paths && echo "    outputs identical"
done
date -u
} > $R/driver.log 2>&1
touch $R/done
