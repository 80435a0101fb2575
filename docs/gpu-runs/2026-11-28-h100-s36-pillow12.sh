#!/usr/bin/env bash
# Session 36, third call: this session's Pillow 12 rules (JPEG's MPF index, RLE BMPs, OS/2 16-bit BMPs, the small
# RGBA TGA and the GIF frame of width 0 now as Pillow 12.3) against the H100 machine's own Pillow 12.3, where they
# had been checked against Pillow 12.3 in a virtual environment on the build machine. CPU only.
cd "$(dirname "$0")/../.." || exit 1
python3 -c "import PIL, PIL.features as f; print('Pillow', PIL.__version__, 'libjpeg-turbo', f.version('libjpeg_turbo'))"
make -j16 BUILD=build-cpu WITH_CUDA=0 DEPS_PREFIX=.carry/deps build-cpu/libsiglip2.a > /tmp/b.log 2>&1 || { tail -20 /tmp/b.log; exit 1; }
cc -O2 -I. tests/fuzz/gif_dump.c build-cpu/libsiglip2.a -L.carry/deps/lib -Wl,-rpath,$PWD/.carry/deps/lib \
  -l:libturbojpeg.a -l:libjpeg.a -lcjson -lm -lpthread -fopenmp -o /tmp/dump || exit 1
cd scripts
for s in 16 17; do echo "jpeg seed $s: $(python3 jpeg_differential.py /tmp/dump /tmp/j$s 3000 $s 2>&1 | tail -1)"; done
for s in 25 26; do echo "bmp seed $s: $(python3 bmp_differential.py /tmp/dump /tmp/b$s 2000 $s --os2-all-depths 2>&1 | tail -1)"; done
for d in gif tga; do echo "$d seed 32: $(python3 ${d}_differential.py /tmp/dump /tmp/$d 2000 32 2>&1 | tail -1)"; done
echo "psd seed 12: $(python3 psd_differential.py /tmp/dump /tmp/psd 2000 12 2>&1 | tail -1)"
