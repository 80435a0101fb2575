#!/usr/bin/env bash
# Session 36: the GPU gates and the benchmark in one call on the session's tree (no kernel changed; JPEG is now read
# as Pillow reads it: preprocess/jpeg_open.c and Pillow's 64 KiB feed), then the 4,000 corpus JPEGs end to end
# against Pillow and against the binary with the previous JPEG decoder (e49bcfb's decode_jpeg.c), random and damaged
# JPEGs against this machine's Pillow 12.3 (scripts/jpeg_differential.py seeds 12-13), then selfcheck-gpu. Run with
# setsid and collected by .carry/collect.sh, which waits for $R/done and tars $R into $OUT.
#   .carry/old-jpeg/decode_jpeg.c: preprocess/decode_jpeg.c as at e49bcfb.
cd "$(dirname "$0")/../.." || exit 1
R=/tmp/s36f; rm -rf $R; mkdir -p $R
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,power.limit,memory.total,clocks.max.sm --format=csv,noheader
  nproc; grep MemAvailable /proc/meminfo
  OUT=$R/check bash scripts/gpu-check.sh > $R/check.log 2>&1; echo "check rc $?"; date -u
  OUT=$R/bench bash scripts/gpu-bench.sh > $R/bench.log 2>&1; echo "bench rc $?"; date -u
  # the previous JPEG decoder: this tree's objects, with decode_jpeg.c as it was (jpeg_open.c then unused)
  rm -rf /tmp/old && mkdir /tmp/old && cp -a . /tmp/old/ && cp .carry/old-jpeg/decode_jpeg.c /tmp/old/preprocess/ &&
    (cd /tmp/old && make -j16 DEPS_PREFIX=.carry/deps siglip2-embed > $R/old-build.log 2>&1); echo "old build rc $?"
  PYTHON=$(command -v python3) SG_E2E_OLD_BIN=/tmp/old/siglip2-embed OUT=$R/jpeg bash scripts/gpu-format-e2e.sh jpeg \
    > $R/jpeg.log 2>&1; echo "jpeg e2e rc $?"; date -u
  # random and damaged JPEGs against this machine's Pillow (12): scripts/jpeg_differential.py, seeds 12 and 13
  cc -O2 -I. tests/fuzz/gif_dump.c build/libsiglip2.a -L.carry/deps/lib -Wl,-rpath,$PWD/.carry/deps/lib \
    -l:libturbojpeg.a -l:libjpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/jpeg_dump > $R/jpeg-diff.txt 2>&1
  for s in 12 13; do (cd scripts && python3 jpeg_differential.py /tmp/jpeg_dump /tmp/jpgd$s 3000 $s) 2>&1 | tail -5; done \
    >> $R/jpeg-diff.txt; echo "jpeg differential done"
  OUT=$R/self bash scripts/selfcheck-gpu.sh > $R/self.log 2>&1; echo "selfcheck rc $?"; date -u
} > $R/driver.log 2>&1
touch $R/done
