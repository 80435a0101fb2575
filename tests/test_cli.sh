#!/usr/bin/env bash
# tests/test_cli.sh — siglip2-embed as a Unix tool: --help, bad flags, missing weights, inputs (files,
# directories, --files-from with newlines and NULs, an image on stdin), ordering under many threads, bad
# inputs among good ones (message, rows, exit status for each --on-error), --info, --progress.
# CPU backend on the tiny196 fixture; outputs hold an earlier run's stale row before each run and are checked with
# python's json.
source "$(dirname "$0")/lib.sh"
B=$SG_BIN
W=(--backend cpu --weights "$SG_ROOT/tests/fixtures/tiny196")
T=$SG_TMP/cli_sh
rm -rf "$T" && mkdir -p "$T/imgs/sub" "$T/bad"
PY=$SG_PYTHON

# --- help, version, flags
out=$("$B" --help); rc=$?
check "--help exits 0" test $rc -eq 0
for opt in --files-from --null --all-files --shard --output --format --normalize --no-normalize --resume \
           --on-error --dump-preprocessed --weights --backend --device --precision --batch --threads \
           --no-exif-rotate --resample --fast-decode --pillow-version --max-pixels --max-file-size --progress --quiet \
           --verbose --info --version "Exit status"; do
    grep -q -- "$opt" <<<"$out" || fail "--help mentions $opt"
done
pass "--help documents every option and the exit status"
check "--version prints a version" bash -c "'$B' --version | grep -Eq '^siglip2-embed [0-9]+\.[0-9]+'"
for bad in "--bogus x" "--batch 0 x" "--format xml x" "--on-error maybe x" "--shard 2/2 x" "-j -3 x" "" \
           "--backend quantum x" "--resume x" "--pillow-version 11 x"; do
    # shellcheck disable=SC2086
    err=$("$B" $bad 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 2 ] && grep -q "^siglip2-embed: " <<<"$err" && grep -q -- "--help" <<<"$err"; then
        pass "bad flags '$bad': exit 2 with a message"
    else
        fail "bad flags '$bad': exit $rc, stderr: $err"
    fi
done

# --- missing weights: exit 2 and say where it looked
err=$(HOME=$T/nohome HF_HOME=$T/nohf SIGLIP2_WEIGHTS= "$B" --backend cpu "$SG_ROOT/tests/images/png_rgb.png" 2>&1 >/dev/null); rc=$?
if [ $rc -eq 2 ] && grep -q "$T/nohf" <<<"$err"; then pass "no weights: exit 2, message lists where it looked"
else fail "no weights: exit $rc, stderr: $err"; fi
err=$("$B" --weights "$T/nowhere" --backend cpu "$SG_ROOT/tests/images/png_rgb.png" 2>&1 >/dev/null); rc=$?
check "--weights to a missing path: exit 2 naming it" bash -c "[ $rc -eq 2 ] && grep -q '$T/nowhere' <<<\"\$0\"" "$err"

# --- inputs: a tree with sorted entries, extension filter, --all-files
cp "$SG_ROOT"/tests/images/png_rgb.png "$T/imgs/b.png"
cp "$SG_ROOT"/tests/images/jpeg_444.jpg "$T/imgs/a.jpg"
cp "$SG_ROOT"/tests/images/gif_p.gif "$T/imgs/sub/c.GIF"
cp "$SG_ROOT"/tests/images/bmp_24.bmp "$T/imgs/z.bmp"
cp "$SG_ROOT"/tests/images/ppm_p6.ppm "$T/imgs/noext"
echo "not an image" >"$T/imgs/readme.txt"
paths() { "$PY" -c 'import json,sys; [print(json.loads(l)["path"]) for l in sys.stdin]'; }
echo '{"path":"stale output of an earlier run","embedding":null}' >"$T/o.jsonl"
"$B" "${W[@]}" -q "$T/imgs" -o "$T/o.jsonl"; rc=$?
got=$(paths <"$T/o.jsonl" | sed "s|$T/imgs/||" | tr '\n' ' ')
check "directory: exit 0" test $rc -eq 0
check "directory: image extensions only, sorted depth-first (got: $got)" test "$got" = "a.jpg b.png sub/c.GIF z.bmp "
"$B" "${W[@]}" -q --all-files "$T/imgs" -o "$T/all.jsonl" 2>"$T/all.err"; rc=$?
n=$(wc -l <"$T/all.jsonl")
check "--all-files: takes every file, readme.txt fails with exit 1 (rows $n)" \
    bash -c "[ $rc -eq 1 ] && [ $n -eq 5 ] && grep -q 'readme.txt: ' '$T/all.err'"

# --files-from: newline list, NUL list on stdin (find -print0), and a lone - (image bytes on stdin)
printf '%s\n' "$T/imgs/z.bmp" "" "$T/imgs/a.jpg" >"$T/list.txt"
got=$("$B" "${W[@]}" -q --files-from "$T/list.txt" | paths | tr '\n' ' ')
check "--files-from FILE keeps the list's order, skips blank lines" test "$got" = "$T/imgs/z.bmp $T/imgs/a.jpg "
mkdir -p "$T/nl"
cp "$SG_ROOT"/tests/images/png_rgb.png "$T/nl/two
lines.png"
got=$(find "$T/nl" -type f -print0 | "$B" "${W[@]}" -q --files-from - -0 | "$PY" -c '
import json,sys; rows=[json.loads(l) for l in sys.stdin]; print(len(rows), rows[0]["path"].endswith("two\nlines.png"))')
check "--files-from - -0: NUL-separated list from find -print0, newline kept in the path ($got)" test "$got" = "1 True"
"$B" "${W[@]}" -q --format json "$T/imgs/a.jpg" >"$T/a.json"
"$B" "${W[@]}" -q --format json - <"$T/imgs/a.jpg" >"$T/stdin.json"
check "a lone - embeds the image bytes on stdin, same vector as the file" "$PY" -c "
import json; a=json.load(open('$T/a.json')); b=json.load(open('$T/stdin.json'))
assert b['path'] == '-' and a['embedding'] == b['embedding']"

# --- ordering: many workers and small batches give the same bytes as one worker, batch 1
for i in $(seq -w 1 40); do cp "$SG_ROOT/tests/images/$(ls -p "$SG_ROOT/tests/images" | grep -v 'txt\|/$' | sed -n "$(( (10#$i % 50) + 1 ))p")" "$T/many_$i.png" 2>/dev/null; done
ls "$T"/many_* >/dev/null 2>&1 && mkdir -p "$T/many" && mv "$T"/many_* "$T/many/"
"$B" "${W[@]}" -q -j 1 -b 1 "$T/many" -o "$T/seq.jsonl"
"$B" "${W[@]}" -q -j 8 -b 3 "$T/many" -o "$T/par.jsonl"
check "ordering: -j 8 -b 3 output identical to -j 1 -b 1 ($(wc -l <"$T/seq.jsonl") rows)" cmp -s "$T/seq.jsonl" "$T/par.jsonl"

# --- bad inputs among good ones
cp "$T/imgs/a.jpg" "$T/bad/1.jpg"
head -c 300 "$T/imgs/a.jpg" >"$T/bad/2_truncated.jpg"
cp "$T/imgs/b.png" "$T/bad/3.png"
echo "garbage garbage garbage" >"$T/bad/4_garbage.png"
: >"$T/bad/5_empty.jpg"
cp "$T/imgs/z.bmp" "$T/bad/6.bmp"
for mode in skip null; do
    echo '{"path":"stale output of an earlier run","embedding":null}' >"$T/bad_$mode.jsonl"
    "$B" "${W[@]}" -q -j 3 -b 2 --on-error $mode "$T/bad" -o "$T/bad_$mode.jsonl" 2>"$T/bad_$mode.err"; rc=$?
    check "--on-error $mode: exit 1 when some inputs fail" test $rc -eq 1
    for f in 2_truncated.jpg 4_garbage.png 5_empty.jpg; do
        grep -q "^siglip2-embed: $T/bad/$f: ." "$T/bad_$mode.err" || fail "--on-error $mode: message names $f"
    done
    check "--on-error $mode: exactly 3 'siglip2-embed: PATH: reason' lines" \
        test "$(grep -c "^siglip2-embed: $T/bad/" "$T/bad_$mode.err")" -eq 3
done
check "--on-error skip: the 3 good rows, in order" "$PY" -c "
import json; r=[json.loads(l) for l in open('$T/bad_skip.jsonl')]
assert [x['path'].rsplit('/',1)[1] for x in r] == ['1.jpg','3.png','6.bmp'] and all(x['embedding'] for x in r)"
check "--on-error null: 6 rows aligned with inputs, null for the 3 bad ones" "$PY" -c "
import json; r=[json.loads(l) for l in open('$T/bad_null.jsonl')]
assert [x['path'].rsplit('/',1)[1] for x in r] == ['1.jpg','2_truncated.jpg','3.png','4_garbage.png','5_empty.jpg','6.bmp']
assert [x['embedding'] is None for x in r] == [False, True, False, True, True, False]"
"$B" "${W[@]}" -q --on-error null "$T/bad" -o "$T/bad.npy" 2>/dev/null; rc=$?
check "--on-error null with npy: NaN rows keep rows aligned with FILE.paths" "$PY" -c "
import numpy as np; a=np.load('$T/bad.npy'); p=open('$T/bad.npy.paths').read().splitlines()
assert $rc == 1 and a.shape[0] == len(p) == 6 and list(np.isnan(a).all(1)) == [False, True, False, True, True, False]"
"$B" "${W[@]}" -q -b 1 --on-error fail "$T/bad" -o "$T/bad_fail.jsonl" 2>"$T/bad_fail.err"; rc=$?
check "--on-error fail: exit 1, stops at the first failure after writing the rows before it" "$PY" -c "
import json; r=[json.loads(l) for l in open('$T/bad_fail.jsonl')]
assert $rc == 1 and [x['path'].rsplit('/',1)[1] for x in r] == ['1.jpg']"
check "--on-error fail: one error message, naming the first bad file" \
    test "$(grep -c "^siglip2-embed: $T/bad/" "$T/bad_fail.err")" -eq 1 -a -n "$(grep "2_truncated.jpg" "$T/bad_fail.err")"
err=$("$B" "${W[@]}" -q "$T/imgs/a.jpg" "$T/does-not-exist.jpg" 2>&1 >/dev/null); rc=$?
check "a missing operand is reported and the run goes on (exit 1)" \
    bash -c "[ $rc -eq 1 ] && grep -q 'does-not-exist.jpg: ' <<<\"\$0\"" "$err"
err=$("$B" "${W[@]}" -q --max-file-size 100 "$T/imgs/a.jpg" 2>&1 >/dev/null); rc=$?
check "--max-file-size is passed on (a larger file is refused, exit 1)" test $rc -eq 1 -a -n "$err"

# --- preprocessing flags reach preprocess/ (seen in the pixels --dump-preprocessed writes)
dump() {  # dump DIR IMAGE FLAGS... -> md5 of the dumped pixels
    rm -rf "$T/$1"; "$B" "${W[@]}" -q --dump-preprocessed "$T/$1" "${@:3}" "$2" >/dev/null 2>&1
    md5sum <"$T/$1/000000.ppm" 2>/dev/null | cut -c1-32
}
img=$SG_ROOT/tests/images/jpeg_exif_o6.jpg
d_def=$(dump d1 "$img"); d_noexif=$(dump d2 "$img" --no-exif-rotate); d_bicubic=$(dump d3 "$img" --resample bicubic)
d_fast=$(dump d4 "$SG_ROOT/tests/images/jpeg_big_800x600.jpg" --fast-decode)
d_exact=$(dump d5 "$SG_ROOT/tests/images/jpeg_big_800x600.jpg")
check "--no-exif-rotate changes the pixels of an EXIF-rotated JPEG" test -n "$d_def" -a "$d_def" != "$d_noexif"
check "--resample bicubic changes the pixels" test -n "$d_bicubic" -a "$d_def" != "$d_bicubic"
check "--fast-decode changes the pixels of a large JPEG (DCT-domain downscale)" test -n "$d_fast" -a "$d_fast" != "$d_exact"
# A tall, narrow noise image: Pillow 13 resizes it vertical pass first, Pillow 12 horizontal first.
"$PY" -c "import random, sys; r = random.Random(7); w, h = 333, 999
sys.stdout.buffer.write(b'P6 %d %d 255\\n' % (w, h) + bytes(r.randrange(256) for _ in range(w * h * 3)))" >"$T/tall.ppm"
d_p13=$(dump d6 "$T/tall.ppm"); d_p12=$(dump d7 "$T/tall.ppm" --pillow-version 12)
d_p13b=$(dump d8 "$T/tall.ppm" --pillow-version 13)
check "--pillow-version 12 changes the resize of a tall, narrow image; 13 is the default" \
    test -n "$d_p12" -a "$d_p13" != "$d_p12" -a "$d_p13" = "$d_p13b"
err=$("$B" "${W[@]}" -q --max-pixels 1000 "$T/imgs/a.jpg" 2>&1 >/dev/null); rc=$?
check "--max-pixels is passed on (a larger image is refused, exit 1)" test $rc -eq 1 -a -n "$err"

# --- resume refuses a file that is not ours
printf 'id,vector\n1,2\n' >"$T/foreign.jsonl"
err=$("$B" "${W[@]}" -q --resume "$T/imgs" -o "$T/foreign.jsonl" 2>&1); rc=$?
check "--resume on a foreign file: exit 2, file untouched" \
    bash -c "[ $rc -eq 2 ] && [ \"\$(cat '$T/foreign.jsonl')\" = \"\$(printf 'id,vector\n1,2')\" ]"
err=$("$B" "${W[@]}" -q --resume "$T/imgs" -o "$T/x.npy" 2>&1); rc=$?
check "--resume with a binary format: exit 2" test $rc -eq 2

# --- --info, --progress, --verbose
out=$("$B" --info --weights "$SG_ROOT/tests/fixtures/tiny196" --backend cpu); rc=$?
check "--info: exit 0, describes the model, the chosen backend and its numerics" \
    bash -c "[ $rc -eq 0 ] && grep -q 'backend chosen: cpu' <<<\"\$0\" && grep -q 'hidden 64' <<<\"\$0\" &&
             grep -q '^numerics: fp32 throughout' <<<\"\$0\"" "$out"
"$B" "${W[@]}" --progress "$T/many" -o "$T/p.jsonl" 2>"$T/p.err"
check "--progress draws done/total on stderr when asked in a pipe" grep -q "40/40 images" "$T/p.err"
"$B" "${W[@]}" "$T/many" -o "$T/p.jsonl" 2>"$T/np.err"
check "no progress in a pipe without --progress" test ! -s "$T/np.err"
"$B" "${W[@]}" -v "$T/many" -o "$T/p.jsonl" 2>"$T/v.err"
check "--verbose prints per-stage timings and the backend's numerics" \
    bash -c "grep -q 'CPU seconds.*decode [0-9.]*  resize [0-9.]*' '$T/v.err' && grep -q 'compute .*s.*write .*s  wall .*images/s' '$T/v.err' &&
             grep -q '^siglip2-embed: numerics: fp32 throughout (the reference)$' '$T/v.err'"

# --- Ctrl-C during a binary run leaves neither a partial FILE nor temporary files. The run reads its list from a
# FIFO this shell holds open, so it cannot end before the signal: it is sent once the run's temporary exists. (set -m:
# a non-interactive shell starts a background job with SIGINT ignored, and the tool keeps an ignored SIGINT ignored,
# as nohup expects; with job control on, the job gets SIGINT as a terminal's Ctrl-C would give it.)
mkfifo "$T/int.fifo"
exec 7<>"$T/int.fifo"   # read-write: never blocks, and the list stays open until closed below
set -m
"$B" "${W[@]}" -q -j 1 -b 1 --files-from "$T/int.fifo" -o "$T/int.npy" 7>&- & pid=$!
set +m
find "$T/many" -type f | sort | head -5 >&7
for _ in $(seq 200); do ls "$T" | grep -q '^int\.npy\.tmp' && break; sleep 0.05; done
began=$(ls "$T" | grep -c '^int\.npy\.tmp')
kill -INT $pid
for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
kill -0 $pid 2>/dev/null && kill -KILL $pid   # still running 10 s after SIGINT: the check below fails
wait $pid; rc=$?; exec 7>&-
left=$(ls "$T" | grep -c "^int\.npy")
check "SIGINT during an npy run (its temporary seen: $began): dies of the signal ($rc), no partial or temporary files left ($left)" \
    test "$began" -ge 1 -a $rc -eq 130 -a "$left" -eq 0

# --- memory stays bounded: 10x more inputs (a streamed --files-from list) must not cost more memory.
# --verbose reports the process's peak RSS (ru_maxrss); a leak of 50 bytes per input would add 9 MB over
# the 180k extra inputs, against a margin of 4 MB. (ASan builds: no quarantine, which holds freed memory.)
rss() {   # peak RSS (KiB) of embedding the N missing paths listed in a file
    seq -f "/nonexistent/dir/%09g.jpg" 1 "$1" >"$T/list_$1"
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=0" "$B" "${W[@]}" -v --files-from "$T/list_$1" -o "$T/mem.jsonl" 2>&1 | sed -n 's/^.*peak memory \([0-9]*\) KiB (max RSS)$/\1/p'
}
small=$(rss 20000); large=$(rss 200000)
check "memory bounded on a streamed list: peak RSS ${small} KiB for 20k inputs, ${large} KiB for 200k" \
    test -n "$small" -a -n "$large" -a "$large" -lt $((small + 4096))
done_testing
