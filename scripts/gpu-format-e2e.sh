#!/usr/bin/env bash
# scripts/gpu-format-e2e.sh — photos in one format (WebP, PNG, or the JPEG corpus itself) end to end on a GPU
# machine: pixels, speed and embeddings against Pillow and HF on the same machine, in one run.
#
#   scripts/gpu-format-e2e.sh [webp|png|jpeg]   (default webp; results under $OUT, else /tmp/sg-FORMAT-e2e; work files
#                                          in $SG_WORK; SG_E2E_BACKEND: the backend, default sm90;
#                                          SG_E2E_OLD_BIN: a second siglip2-embed, timed beside)
#
# 1. builds siglip2-embed as gpu-bench.sh builds it, makes or reuses the
#    full-size random checkpoint and gpu-bench's corpus of 4,000 JPEG photos (.carry/bench/make_corpus.py);
# 2. re-encodes the corpus with this machine's Pillow, the way a photo folder gets such files: WebP lossy at
#    quality 75 / 85 / 90 / 95 by image, every twentieth image of at most 1,600 pixels a side lossless; PNG with
#    Pillow's defaults (compression level 6, its own filter choice per row), every tenth image as RGBA; jpeg
#    takes the corpus as it is (to compare two binaries' JPEG decoders: SG_E2E_OLD_BIN);
# 3. pixels: every file's 224 x 224 input as the command makes it (--dump-preprocessed, --pillow-version of this
#    Pillow) against this Pillow's exif_transpose, convert("RGB"), resize((224, 224), BILINEAR), byte for byte
#    on 16 processes: prints how many of the 4,000 differ (0 expected). (Full-size decodes are compared by
#    scripts/webp_differential.py --photos and scripts/png_differential.py, whose pure-Python hash is too slow
#    for 4,000 photos);
# 4. speed: Pillow's decode-only and decode + resize rates on 16 processes (the e2e_hf.py measures) for the
#    format's and the JPEG corpus, and siglip2-embed --backend sm90 -b 256 -v, files to npy, whole process timed,
#    on each (and SG_E2E_OLD_BIN's on the format's corpus);
# 5. embeddings: every re-encoded image's row, as the command wrote it, against HF fp32 (scripts/hf_embed.py,
#    which decodes with Pillow; scripts/gpu_compare.py --unit, gate cosine >= 0.9999). Exits 1 on a pixel or
#    accuracy failure.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
# shellcheck source=scripts/lib-gpu.sh
. scripts/lib-gpu.sh
FMT=${1:-webp}
case $FMT in webp | png) EXT=$FMT ;; jpeg) EXT=jpg ;; *) echo "usage: $0 [webp|png|jpeg]" >&2; exit 2 ;; esac
RES=${OUT:-/tmp/sg-$FMT-e2e}
WORK=${SG_WORK:-/tmp/sg-gpu-work}
mkdir -p "$RES" "$WORK"
PY=${PYTHON:-python3}
BIN=$ROOT/siglip2-embed
BACKEND=${SG_E2E_BACKEND:-sm90}
BENCH=$ROOT/.carry/bench
[ -d "$BENCH" ] || BENCH=$ROOT/../shared/bench
T0=$SECONDS
stamp() { echo "== [$((SECONDS - T0))s] $*"; }
die() { echo "gpu-format-e2e: $*" >&2; exit 1; }
failed=0

stamp "build"
DEPS=()
[ -d .carry/deps ] && DEPS=(DEPS_PREFIX=.carry/deps)
make -j"$(nproc)" "${DEPS[@]}" siglip2-embed >"$WORK/$FMT-build.log" 2>&1 || { tail -30 "$WORK/$FMT-build.log"; die "build failed"; }
sg_gpu_checkpoint
$PY -c "import PIL, PIL.features as f; print('Pillow', PIL.__version__, 'libwebp', f.version('webp'), 'zlib', f.version('zlib'))" | tee "$RES/pillow.txt"
PMAJOR=$($PY -c "import PIL; print(PIL.__version__.split('.')[0])")

JPG=$WORK/corpus4000
if [ ! -d "$JPG" ]; then
    PHOTOS=$ROOT/.carry/photos
    [ -d "$PHOTOS" ] || { PHOTOS=$WORK/photos; [ -d "$PHOTOS" ] || sh "$BENCH/get-photos.sh" "$PHOTOS" >/dev/null 2>&1; }
    stamp "corpus of 4000 JPEGs"
    $PY "$BENCH/make_corpus.py" "$PHOTOS" "$JPG" 4000 || die "make_corpus failed"
fi
ENC=$WORK/corpus4000-$FMT
if [ "$FMT" = jpeg ]; then # the corpus as it is: never rebuilt (nor removed) here
    ENC=$JPG
    [ "$(find "$ENC" -name "*.jpg" | wc -l)" = 4000 ] || die "$JPG does not hold the 4,000 corpus JPEGs"
fi
stamp "the corpus as $FMT"
[ "$(find "$ENC" -name "*.$EXT" 2>/dev/null | wc -l)" = 4000 ] || { rm -rf "$ENC"; $PY - "$JPG" "$ENC" "$FMT" <<'PY' || die "$FMT corpus"; }
import glob, os, sys
from multiprocessing import Pool
from PIL import Image
src, dst, fmt = sys.argv[1], sys.argv[2], sys.argv[3]
files = sorted(glob.glob(os.path.join(src, "*", "*.jpg")))
def one(i):
    f = files[i]
    out = os.path.join(dst, os.path.basename(os.path.dirname(f)), os.path.basename(f)[:-4] + "." + fmt)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    im = Image.open(f)
    if fmt == "png":
        (im.convert("RGBA") if i % 10 == 0 else im).save(out)
    elif i % 20 == 0 and max(im.size) <= 1600:
        im.save(out, lossless=True)
    else:
        im.save(out, quality=[75, 85, 90, 95][i % 4])
with Pool(os.cpu_count()) as p:
    p.map(one, range(len(files)), chunksize=8)
print(len(files), fmt, "files,", sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(dst) for f in fs) >> 20, "MiB")
PY
find "$ENC" -name "*.$EXT" | sort >"$WORK/$FMT.list"

stamp "pixels: the command's 224 x 224 input of every $FMT file against Pillow $PMAJOR's, byte for byte"
rm -rf "$WORK/$FMT-dump"
"$BIN" --weights "$CKPT" --backend "$BACKEND" --pillow-version "$PMAJOR" -b 256 --dump-preprocessed "$WORK/$FMT-dump" \
    -f npy -o "$WORK/$FMT-dump.npy" "$ENC" 2>"$WORK/$FMT-dump.err" || { tail -3 "$WORK/$FMT-dump.err"; failed=1; }
$PY - "$WORK/$FMT.list" "$WORK/$FMT-dump" <<'PY' | tee "$RES/pixels.txt" || failed=1
import os, sys
from multiprocessing import Pool
from PIL import Image, ImageOps
paths = open(sys.argv[1]).read().split()  # sorted: the command's walk order, so input i is dump NNNNNN = i
def same(i):
    want = ImageOps.exif_transpose(Image.open(paths[i])).convert("RGB").resize((224, 224), Image.BILINEAR).tobytes()
    got = open(os.path.join(sys.argv[2], "%06d.ppm" % i), "rb").read()
    return got.endswith(want) and got.startswith(b"P6") and len(got) - len(want) < 20
with Pool(16) as p:
    ok = p.map(same, range(len(paths)), chunksize=16)
bad = [paths[i] for i, o in enumerate(ok) if not o]
print("\n".join("DIFF " + b for b in bad[:20]))
print("%d of %d photos' 224 x 224 inputs differ from Pillow's (decode, exif_transpose, convert, resize)" % (len(bad), len(paths)))
sys.exit(1 if bad else 0)
PY

stamp "speed: Pillow on 16 processes"
$PY - "$JPG" "$ENC" "$EXT" <<'PY' | tee "$RES/pillow_rates.txt"
import glob, os, sys, time
from multiprocessing import Pool
from PIL import Image
def decode_only(f):
    im = Image.open(f); im.load(); return im.size[0]
def decode_resize(f):
    return Image.open(f).convert("RGB").resize((224, 224), Image.BILINEAR).tobytes()[:1]
for root, ext in dict.fromkeys(((sys.argv[1], "jpg"), (sys.argv[2], sys.argv[3]))):  # once for the JPEG corpus
    files = sorted(glob.glob(os.path.join(root, "*", "*." + ext)))
    for fn in (decode_only, decode_resize):
        t = time.time()
        with Pool(16) as p:
            p.map(fn, files, chunksize=8)
        print("Pillow %s %s, 16 processes: %.1f images/s" % (fn.__name__, ext, len(files) / (time.time() - t)), flush=True)
PY
: >"$RES/ours_rates.txt"
RUNS=("$BIN $JPG")
[ "$ENC" = "$JPG" ] || RUNS+=("$BIN $ENC")
[ -n "${SG_E2E_OLD_BIN:-}" ] && RUNS+=("$SG_E2E_OLD_BIN $ENC")
for R in "${RUNS[@]}"; do
    B=${R% *} C=${R##* }
    K=$(basename "$C")$([ "$B" = "$BIN" ] || echo "-old")
    stamp "speed: $B --backend $BACKEND on $K"
    rm -f "$WORK/e2e-$K.npy" "$WORK/e2e-$K.npy.paths"
    t=$EPOCHREALTIME
    if "$B" --weights "$CKPT" --backend "$BACKEND" -b 256 -v -f npy -o "$WORK/e2e-$K.npy" "$C" 2>"$WORK/e2e-$K.err"; then
        t1=$EPOCHREALTIME
        sed 's/^/    /' "$WORK/e2e-$K.err"
        $PY -c "import numpy as np; n = np.load('$WORK/e2e-$K.npy').shape[0]; s = $t1 - $t; \
print('siglip2-embed --backend $BACKEND on $K: %d images in %.2f s, %.1f images/s' % (n, s, n / s))" | tee -a "$RES/ours_rates.txt"
    else
        tail -3 "$WORK/e2e-$K.err"; failed=1
    fi
done

stamp "embeddings: every $FMT image against HF fp32"
if $PY scripts/hf_embed.py "$CKPT" "$WORK/e2e-hf-$FMT.npy" --list "$WORK/$FMT.list" >"$WORK/e2e-hf-$FMT.log" 2>&1; then
    $PY scripts/gpu_compare.py "$WORK/e2e-hf-$FMT.npy" "$WORK/e2e-$(basename "$ENC").npy" \
        "siglip2-embed --backend $BACKEND on $FMT vs HF fp32" 0.9999 --unit | tee "$RES/accuracy.txt" | grep -q '^PASS' || failed=1
else
    tail -5 "$WORK/e2e-hf-$FMT.log"; failed=1
fi
stamp "done (failed=$failed)"
exit $failed
