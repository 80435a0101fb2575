#!/usr/bin/env bash
# Session 29 (second call, ...-spin-waits-2.txt): the longest spin waits under compute-sanitizer by the waiting warp's
# role, up to batch 32, with ...-s29-diag-spin-stats.patch. The first call (...-spin-waits-1.txt) ran the same way with
# the patch's first version (the longest mbarrier and counter waits only, not by role) at batches 2, 9 and 12.
# and a copy with .carry/diag-spin-stats.patch (every wait's length recorded, a table printed per launch).
cd "$(dirname "$0")/.."
R=/tmp/s29b; rm -rf $R; mkdir -p $R
TOP=$PWD; WORK=/tmp/sg-gpu-work; mkdir -p $WORK; PY=${SG_PYTHON:-python3}; stamp() { :; }
. scripts/lib-gpu.sh
{
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
rm -rf /tmp/diagtree; mkdir -p /tmp/diagtree
tar --exclude=./.carry --exclude=./build --exclude=./.git -cf - . | tar -C /tmp/diagtree -xf -
( cd /tmp/diagtree && patch -p1 < $TOP/.carry/diag-spin-stats.patch && make -j12 DEPS_PREFIX=$TOP/.carry/deps siglip2-embed > $R/build-diag.log 2>&1; echo "diag build rc $?" )
sg_gpu_checkpoint; echo "checkpoint $(ls $CKPT)"
mkdir -p $R/ph; for i in 0 1 2; do for f in .carry/photos/*.jpg; do cp "$f" $R/ph/$i-$(basename "$f"); done; done
mapfile -t FILES < <(ls $R/ph/*.jpg | sort)
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
D=/tmp/diagtree/siglip2-embed
one() { # $1 tool (none|racecheck|memcheck|synccheck) $2 precision flags $3 batch $4 tag
  local t0=$(date +%s%N) pre=()
  [ "$1" != none ] && pre=("$CS" --tool "$1" --error-exitcode 99)
  "${pre[@]}" $D --weights "$CKPT" --backend sm90 $2 --batch "$3" -q --no-normalize -f npy -o $R/o.npy "${FILES[@]:0:$3}" > $R/$4.log 2>&1
  local rc=$? t1=$(date +%s%N)
  echo "$4: $1 '$2' batch $3 rc $rc $(( (t1 - t0) / 1000000 )) ms | $(grep -m1 SUMMARY $R/$4.log) $(grep -m1 -o 'launch failure' $R/$4.log)"
  echo "   $(grep SPIN $R/$4.log | tail -1)"
  rm -f $R/o.npy $R/o.npy.paths
}
one none "--precision fp8" 2 plain-fp8-2
one none "--precision fp8" 32 plain-fp8-32
for i in 1 2 3 4; do one racecheck "--precision fp8" 2 race-fp8-2-$i; done
one racecheck "--precision fp8" 12 race-fp8-12-1
one racecheck "--precision fp8" 12 race-fp8-12-2
one racecheck "" 12 race-bf16-12
one racecheck "--precision fp8" 32 race-fp8-32
one memcheck "--precision fp8" 32 mem-fp8-32
date -u
} > $R/driver.log 2>&1
touch $R/done
