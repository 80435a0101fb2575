#!/usr/bin/env bash
# Session 35, second call: PNG decoding as at 29d86ca (Pillow's palette and tRNS rules, SSE2 Adler-32) against the
# H100 machine's Pillow 12.3: scripts/png_differential.py seeds 24-25 (PLTE / tRNS variants included), and
# test_png_rows. CPU only (a build without CUDA); results printed.
cd "$(dirname "$0")/../.." || exit 1
python3 -c "import PIL; print('Pillow', PIL.__version__)"
make -j16 BUILD=build-cpu WITH_CUDA=0 DEPS_PREFIX=.carry/deps build-cpu/libsiglip2.a build-cpu/tests/test_png_rows \
  > /tmp/b.log 2>&1 || { tail -20 /tmp/b.log; exit 1; }
SG_ROOT=$PWD build-cpu/tests/test_png_rows | tail -3
cc -O2 -I. tests/fuzz/gif_dump.c build-cpu/libsiglip2.a -L.carry/deps/lib -Wl,-rpath,$PWD/.carry/deps/lib \
  -l:libturbojpeg.a -l:libjpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/png_dump || exit 1
for s in 24 25; do (cd scripts && python3 png_differential.py /tmp/png_dump /tmp/pngd$s 3000 $s) 2>&1 | tail -4; done
