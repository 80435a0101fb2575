#!/usr/bin/env bash
# Session 35, third call: BMP decoding as at 1850fa3 (every uncompressed and bitfields BMP rebuilt as Pillow reads
# it) against the H100 machine's Pillow 12.3: scripts/bmp_differential.py seeds 21-23, test_bmp_rules, and
# png_differential seed 26 again. CPU only (a build without CUDA); results printed.
cd "$(dirname "$0")/../.." || exit 1
python3 -c "import PIL; print('Pillow', PIL.__version__)"
make -j16 BUILD=build-cpu WITH_CUDA=0 DEPS_PREFIX=.carry/deps build-cpu/libsiglip2.a build-cpu/tests/test_bmp_rules \
  > /tmp/b.log 2>&1 || { tail -20 /tmp/b.log; exit 1; }
SG_ROOT=$PWD build-cpu/tests/test_bmp_rules | tail -3
cc -O2 -I. tests/fuzz/gif_dump.c build-cpu/libsiglip2.a -L.carry/deps/lib -Wl,-rpath,$PWD/.carry/deps/lib \
  -l:libturbojpeg.a -l:libjpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/dump || exit 1
for s in 21 22 23; do (cd scripts && python3 bmp_differential.py /tmp/dump /tmp/bmpd$s 2000 $s) 2>&1 | tail -4; done
(cd scripts && python3 png_differential.py /tmp/dump /tmp/pngd26 3000 26) 2>&1 | tail -3
