#!/usr/bin/env bash
# Session 28: is the trap of racecheck's sm90:fp8 batch-2 run (gpu-check, 08:3x UTC) the spin limit under the
# sanitizer's slowdown, or a lost signal? Repeats that run with the tree's build (SG_SPIN_LIMIT 2^32 cycles) and
# with a build whose limit is 2^40, timing each; summary in $R/rc.txt.
cd "$(dirname "$0")/.."
R=/tmp/s28r; rm -rf $R; mkdir -p $R
WORK=/tmp/sg-gpu-work; mkdir -p $WORK; PY=${SG_PYTHON:-python3}; stamp() { :; }
. scripts/lib-gpu.sh
NV="-std=c++17 -O3 -g -lineinfo -I. -Xcompiler -Wall,-Wextra,-Werror -Werror all-warnings --expt-relaxed-constexpr"
make -j14 DEPS_PREFIX=.carry/deps siglip2-embed > $R/build.log 2>&1; echo "build rc $?" >> $R/rc.txt
( make -j8 DEPS_PREFIX=.carry/deps BUILD=build-spin NVCCFLAGS="$NV -DSG_SPIN_LIMIT=0x10000000000ull" \
    build-spin/siglip2-embed > $R/build-spin.log 2>&1; echo "build-spin rc $?" >> $R/rc.txt ) &
sg_gpu_checkpoint; echo "checkpoint $(ls $CKPT)" >> $R/rc.txt
mapfile -t FILES < <(ls .carry/photos/*.jpg | sort | head -2)
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer)
one() { # $1 binary, $2 tag, $3 index
  local t0=$(date +%s%N)
  "$CS" --tool racecheck --error-exitcode 99 "$1" --weights "$CKPT" --backend sm90 --precision fp8 --batch 2 -q \
     --no-normalize -f npy -o $R/san-$2.npy "${FILES[@]}" > $R/$2-$3.log 2>&1
  local rc=$? t1=$(date +%s%N)
  echo "$2 run $3 rc $rc $(( (t1 - t0) / 1000000 )) ms $(grep -m1 SUMMARY $R/$2-$3.log) $(grep -m1 -o 'launch failure' $R/$2-$3.log)" >> $R/rc.txt
  rm -f $R/san-$2.npy $R/san-$2.npy.paths
}
for i in $(seq 1 ${N1:-10}); do one ./siglip2-embed base $i; done
wait
for i in $(seq 1 ${N2:-10}); do [ -x build-spin/siglip2-embed ] && one build-spin/siglip2-embed spin $i; done
touch $R/done
