#!/usr/bin/env bash
# Session 35, fourth call: the PNM header as at 6c67bea against the H100 machine's Pillow 12.3
# (scripts/pnm_differential.py seeds 21-22), and bmp_differential seed 24 on the final BMP code. CPU only.
cd "$(dirname "$0")/../.." || exit 1
python3 -c "import PIL; print('Pillow', PIL.__version__)"
make -j16 BUILD=build-cpu WITH_CUDA=0 DEPS_PREFIX=.carry/deps build-cpu/libsiglip2.a > /tmp/b.log 2>&1 || { tail -20 /tmp/b.log; exit 1; }
cc -O2 -I. tests/fuzz/gif_dump.c build-cpu/libsiglip2.a -L.carry/deps/lib -Wl,-rpath,$PWD/.carry/deps/lib \
  -l:libturbojpeg.a -l:libjpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/dump || exit 1
for s in 21 22; do (cd scripts && python3 pnm_differential.py /tmp/dump /tmp/pnmd$s 2000 $s) 2>&1 | tail -3; done
(cd scripts && python3 bmp_differential.py /tmp/dump /tmp/bmpd24 2000 24) 2>&1 | grep "|" | awk '{print $1}' | while read f; do
  python3 -c "import struct; d=open('$f','rb').read(); print('comp', struct.unpack('<I', d[30:34])[0] if len(d) > 34 else '-')"
done | sort | uniq -c
(cd scripts && python3 bmp_differential.py /tmp/dump /tmp/bmpd24 2000 24) 2>&1 | tail -1
