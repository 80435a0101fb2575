#!/usr/bin/env bash
# Session 35: the GPU gates and the benchmark in one call on the session's tree (no kernel changed; PNG pixels are
# now decoded by our own code with Pillow's verdicts), then PNG photos end to end against Pillow and against the
# binary of the previous commit (d55a32e: stb_image decoded PNG pixels), then selfcheck-gpu. Run with setsid and
# collected by .carry/collect.sh, which waits for $R/done and tars $R into $OUT.
#   .carry/old-png: preprocess/{decode_png,decode_stb,inflate}.c and internal.h as at d55a32e.
cd "$(dirname "$0")/../.." || exit 1
R=/tmp/s35f; rm -rf $R; mkdir -p $R
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,power.limit,memory.total,clocks.max.sm --format=csv,noheader
  nproc; grep MemAvailable /proc/meminfo
  OUT=$R/check bash scripts/gpu-check.sh > $R/check.log 2>&1; echo "check rc $?"; date -u
  OUT=$R/bench bash scripts/gpu-bench.sh > $R/bench.log 2>&1; echo "bench rc $?"; date -u
  # the previous commit's binary: this tree's objects, with the PNG decoder as it was
  rm -rf /tmp/old && mkdir /tmp/old && cp -a . /tmp/old/ && cp .carry/old-png/*.[ch] /tmp/old/preprocess/ &&
    rm -f /tmp/old/preprocess/png_unfilter.c /tmp/old/tests/test_png_rows.c &&
    (cd /tmp/old && make -j16 DEPS_PREFIX=.carry/deps siglip2-embed > $R/old-build.log 2>&1); echo "old build rc $?"
  PYTHON=$(command -v python3) SG_E2E_OLD_BIN=/tmp/old/siglip2-embed OUT=$R/png bash scripts/gpu-format-e2e.sh png \
    > $R/png.log 2>&1; echo "png e2e rc $?"; date -u
  # random and damaged PNGs against this machine's Pillow (12): scripts/png_differential.py, seeds 7 and 8
  cc -O2 -I. tests/fuzz/gif_dump.c build/libsiglip2.a -L.carry/deps/lib -Wl,-rpath,$PWD/.carry/deps/lib \
    -l:libturbojpeg.a -l:libjpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/png_dump > $R/png-diff.txt 2>&1
  for s in 7 8; do (cd scripts && python3 png_differential.py /tmp/png_dump /tmp/pngd$s 3000 $s) 2>&1 | tail -5; done \
    >> $R/png-diff.txt; echo "png differential done"
  make -j16 DEPS_PREFIX=.carry/deps build/tests/test_png_rows > $R/png-test.log 2>&1
  SG_TEST_FILTER=png_rows bash tests/run.sh build ./siglip2-embed >> $R/png-test.log 2>&1; echo "png test rc $?"
  OUT=$R/self bash scripts/selfcheck-gpu.sh > $R/self.log 2>&1; echo "selfcheck rc $?"; date -u
} > $R/driver.log 2>&1
touch $R/done
