#!/usr/bin/env bash
# Session 36, second call: is the JPEG decoder fed in Pillow's 64 KiB reads (preprocess/decode_jpeg.c at 7fac10a)
# slower end to end than the previous one (e49bcfb's, jpeg_mem_src)? The first call ran them once each, new first:
# 929 against 1,009 images/s. Here the two binaries alternate, three runs each, on the 4,000 corpus JPEGs
# (--backend sm90 -b 256, whole process), with the decode workers' CPU seconds, and Pillow's decode-only rate
# between them as a drift check. CPU build first; prints a table last.
cd "$(dirname "$0")/../.." || exit 1
. scripts/lib-gpu.sh
WORK=/tmp/sg-gpu-work PY=python3; mkdir -p $WORK
make -j16 DEPS_PREFIX=.carry/deps siglip2-embed > /tmp/new-build.log 2>&1 || { tail /tmp/new-build.log; exit 1; }
rm -rf /tmp/old && mkdir /tmp/old && cp -a . /tmp/old/ && cp .carry/old-jpeg/decode_jpeg.c /tmp/old/preprocess/ &&
  (cd /tmp/old && make -j16 DEPS_PREFIX=.carry/deps siglip2-embed > /tmp/old-build.log 2>&1) || { tail /tmp/old-build.log; exit 1; }
sg_gpu_checkpoint
JPG=$WORK/corpus4000
[ -d $JPG ] || python3 .carry/bench/make_corpus.py .carry/photos $JPG 4000 || exit 1
pillow() { python3 - "$JPG" <<'PY'
import glob, os, sys, time
from multiprocessing import Pool
from PIL import Image
def decode_only(f):
    im = Image.open(f); im.load(); return im.size[0]
files = sorted(glob.glob(os.path.join(sys.argv[1], "*", "*.jpg")))
t = time.time()
with Pool(16) as p:
    p.map(decode_only, files, chunksize=8)
print("pillow decode-only %.1f images/s" % (len(files) / (time.time() - t)))
PY
}
run() { # $1 label, $2 binary
  rm -f /tmp/e.npy /tmp/e.npy.paths; local t=$EPOCHREALTIME
  "$2" --weights "$CKPT" --backend sm90 -b 256 -v -f npy -o /tmp/e.npy "$JPG" 2>/tmp/e.err || { tail -3 /tmp/e.err; return; }
  local t1=$EPOCHREALTIME
  echo "$1 $(python3 -c "print('%.1f' % (4000 / ($t1 - $t)))") images/s; $(grep -o 'decode [0-9.]*  resize [0-9.]*' /tmp/e.err)"
}
pillow; run warm ./siglip2-embed > /dev/null
for i in 1 2 3; do run new ./siglip2-embed; run old /tmp/old/siglip2-embed; pillow; done | tee /tmp/ab.txt
echo "== table (images/s, whole process; decode workers' CPU seconds)"
for k in new old; do grep "^$k " /tmp/ab.txt | awk -v k=$k '{r=r" "$2; d=d" "$5} END {print k": images/s"r"; decode CPU-s"d}'; done
