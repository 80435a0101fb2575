"""tests/test_cli_safety.py — siglip2-embed never destroys what it did not write, and never loses an input
(issue 14, items 1-3: each check here failed on the code before the fix).

1. -o on anything but a regular file: a FIFO keeps being a FIFO and its reader gets the rows; a device node
   (made with mknod in the scratch folder, never /dev itself; SKIP where mknod is not allowed) is written in
   place, refused for npy, and gets no .paths beside it; a symlink stays a link and its target is replaced, with
   the target's .paths beside the target; a link to /dev/stdout writes through the caller's descriptor (an
   appending stdout keeps what it held); a shell's >(cmd) receives the rows.
2. --resume on a file that is not ours (a note, {"a":1}, a foreign line after our rows, a note without a final
   newline) exits 2 and leaves the file byte for byte as it was.
3. Two names that differ only in bytes that are not UTF-8 (x\\xff, x\\xfe) stay two rows whose path_base64
   gives back each exact name; --resume after losing one row embeds exactly that one again; FILE.paths holds
   the exact bytes; every row parses with Python's strict json.
4. A run that writes no row (a folder that is not there, an empty folder, a single input that fails, a text run
   whose every query fails) leaves an existing -o FILE byte for byte as it was, in every format (JSON and JSONL
   are written in place, but truncated only when the first row comes), says so, and exits 1; a new FILE is still
   created ([] for json); a run with rows replaces the file as before. (Session 27: each of these emptied the
   previous results before.)
5. Session 27's audit: an existing -o FILE that this tool did not write (an image, a note, an input named as the
   output, a hard link to one) is refused with exit 2 and left as it was, and so is a FILE.paths that is not a
   list of names (a photo); an earlier output of ours is still replaced, and so is the list left beside a FILE a
   script deleted; a FIFO named as an input fails alone instead of
   blocking; --dump-preprocessed never writes through a symbolic link nor over a file that is not an earlier dump;
   one good image and then batches of failed inputs end (the run hung before); a file merely named like a dead
   run's temporary is not removed (only a pair, or bytes of ours); in a plain LF --files-from list a name's final
   CR is kept (x.jpg and x.jpg\r stay two inputs; a CR LF list still drops it).
6. Session 28's audit of 5's rule: another tool's files that passed for ours are refused with exit 2, untouched,
   saying what was expected (a `jq -c` line starting with {"path":", a compact JSON array of such objects, a 1-D
   npy, another tool's 2-D '<f4' npy and an int32 .ivecs without the FILE.paths this tool writes beside every
   binary output); and everything this tool writes is still replaced by the next run: every format of image and
   text runs, --labels, path_base64 and --on-error null rows, --no-normalize, json's single object, outputs with
   no row, another model's output (another dim), a JSONL killed by kill -9 (and one cut inside its first row),
   a JSON array cut short, and a dead run's temporary whose list was already renamed. (The refusals fail on the
   binary before the fix; the replacements guard against a rule too strict, as gpu-check's was in session 27.)
7. Session 30's audit: a --dump-preprocessed DIR whose dump names pass PATH_MAX fails each input with the
   system's reason and writes nothing (the names were cut short in a fixed buffer: every input's pixels went to one
   file of a truncated name, exit 0); a directory loop's message shows the folder escaped, on one line (7). Runs
   on one output at once (7b): a JSON or npy run onto a JSONL being written (as FILE or as FILE.paths) is refused
   (its rename unlinked the JSONL under its writer, whose rows vanished with exit 0); two npy runs on one new FILE
   never pair one run's FILE with the other's list (a test hook pauses one between its renames); a dead PID-1
   run's temporaries are removed by the next PID-1 run; a write-protected npy or json output is not replaced.

CPU backend, tiny196 fixture (D = 64). Binary: $SG_BIN (run it against an older build to see the failures).
"""
import base64
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgtest import BIN, IMAGES, check, done, fixture, fresh_dir, skip  # noqa: E402

import numpy as np  # noqa: E402

FIX = fixture("tiny196")
W = ["--backend", "cpu", "--weights", FIX, "-q"]
D = 64
work = fresh_dir("cli_safety")
IMGS = [os.path.join(IMAGES, n) for n in ("png_rgb.png", "jpeg_444.jpg", "bmp_24.bmp")]


def run(args, **kw):
    if "stdout" not in kw:
        kw.setdefault("capture_output", True)
    kw.setdefault("timeout", 120)
    return subprocess.run([BIN] + W + args, **kw)


def out(name):
    return os.path.join(work, name)


ref = np.frombuffer(run(IMGS + ["-f", "f32"]).stdout, dtype="<f4").reshape(-1, D)
check(ref.shape == (3, D), f"reference: 3 rows of f32 on a pipe ({ref.shape})")

# --- 1a. a FIFO: written in place, its reader gets every row, it stays a FIFO
fifo = out("fifo")
os.mkfifo(fifo)
got = {}


def reader():
    with open(fifo, "rb") as f:  # blocks until a writer opens the FIFO
        got["data"] = f.read()


t = threading.Thread(target=reader, daemon=True)  # daemon: with a broken writer it would block forever
t.start()
r = run(IMGS + ["-f", "f32", "-o", fifo])
t.join(10)
data = got.get("data", b"")
check(r.returncode == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode) and data == ref.tobytes(),
      f"-o FIFO -f f32: still a FIFO, its reader got the {len(ref)} rows ({len(data)} bytes, exit {r.returncode})")
check(not [n for n in os.listdir(work) if n.startswith("fifo.")], "-o FIFO: no .paths or temporary beside it")

# --- 1b. device nodes (our own, in the scratch folder): written in place, npy refused, no .paths beside them
nulldev, fulldev = out("nulldev"), out("fulldev")
try:
    os.mknod(nulldev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(fulldev, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    have_dev = True
except OSError as e:
    have_dev = False
    skip(f"device nodes: mknod not allowed here ({e})")
if have_dev:
    r = run(IMGS + ["-f", "f32", "-o", nulldev])
    check(r.returncode == 0 and stat.S_ISCHR(os.lstat(nulldev).st_mode),
          f"-o DEVICE -f f32: written in place, still a device (exit {r.returncode}: {r.stderr.decode()[-200:]})")
    r = run(IMGS + ["-f", "npy", "-o", nulldev])
    check(r.returncode == 2 and b"regular file" in r.stderr and stat.S_ISCHR(os.lstat(nulldev).st_mode),
          f"-o DEVICE -f npy: refused with exit 2, device intact ({r.stderr.decode().strip()[-200:]})")
    r = run(IMGS + ["-f", "fvecs", "-o", fulldev])
    check(r.returncode == 2 and b"write failed" in r.stderr and stat.S_ISCHR(os.lstat(fulldev).st_mode),
          f"-o full device -f fvecs: the write error is reported (exit 2), device intact ({r.stderr.decode().strip()[-120:]})")
    check(not [n for n in os.listdir(work) if n.startswith(("nulldev.", "fulldev."))],
          "-o DEVICE: no .paths and no temporary created beside a device")

# --- 1c. a symlink: followed; the target is replaced in its own folder, the link stays a link
os.makedirs(out("real"))
target = out("real/data.npy")
np.save(target, np.zeros((2, D), "<f4"))  # an earlier output of ours, with its list (a file we did not write is
with open(target + ".paths", "wb") as f:  # refused: 5a, 6)
    f.write(b"a.png\nb.png\n")
os.symlink("real/data.npy", out("link.npy"))
r = run(IMGS + ["-o", out("link.npy")])
is_link = os.path.islink(out("link.npy")) and os.readlink(out("link.npy")) == "real/data.npy"
a = np.load(out("link.npy")) if os.path.exists(out("link.npy")) else None
paths = open(target + ".paths", "rb").read().split(b"\n")[:-1] if os.path.exists(target + ".paths") else None
check(r.returncode == 0 and is_link and a is not None and np.array_equal(a, ref),
      f"-o LINK.npy: the link stays a link and its target holds the rows (exit {r.returncode})")
check(paths == [os.fsencode(p) for p in IMGS] and not os.path.exists(out("link.npy.paths")),
      "-o LINK.npy: FILE.paths is written beside the target, not beside the link")
check(not [n for n in os.listdir(out("real")) + os.listdir(work) if ".tmp." in n], "-o LINK.npy: no temporaries left")

# --- 1d. a link to /dev/stdout: the caller's descriptor is used, so an appending stdout keeps its contents
os.symlink("/dev/stdout", out("to_stdout"))
log = out("log.jsonl")
with open(log, "wb") as f:
    f.write(b'{"kept":"line"}\n')
with open(log, "ab") as f:
    r = run(IMGS[:1] + ["-f", "jsonl", "-o", out("to_stdout")], stdout=f, stderr=subprocess.PIPE)
lines = open(log, "rb").read().splitlines()
check(r.returncode == 0 and len(lines) == 2 and lines[0] == b'{"kept":"line"}' and
      json.loads(lines[1])["path"] == IMGS[0],
      f"-o LINK-TO-/dev/stdout on an appending stdout: appended, nothing truncated ({lines[:1]}, exit {r.returncode})")

# --- 1e. a shell's process substitution (/dev/fd/N, a pipe)
count = out("count")
cmd = (f'"{BIN}" {" ".join(W)} {" ".join(IMGS)} -f f32 -o >(wc -c > "{count}"); rc=$?; wait; '
       f'sleep 0.2; exit $rc')
r = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=120)
n = open(count).read().strip() if os.path.exists(count) else ""
check(r.returncode == 0 and n == str(ref.nbytes),
      f"-f f32 -o >(wc -c): the pipe receives the rows ({n or 'nothing'} bytes of {ref.nbytes}; exit {r.returncode}: "
      f"{r.stderr.decode().strip()[-200:]})")

# --- 1f. decoding starts before the backend; the output is opened only once the backend runs, so a backend that
# cannot start (sm100 on anything but a B200) leaves an existing output as it was
keep = out("keep.jsonl")
with open(keep, "wb") as f:
    f.write(b"an earlier run's rows\n")
r = subprocess.run([BIN, "--backend", "sm100", "--weights", FIX, "-q", "-j", "4"] + IMGS * 20 + ["-o", keep],
                   capture_output=True, timeout=120)
if r.returncode == 0:
    skip("a backend that cannot start: sm100 started here (a Blackwell GPU)")
else:
    check(r.returncode == 2 and open(keep, "rb").read() == b"an earlier run's rows\n",
          f"a backend that cannot start: exit 2, the existing -o file untouched ({r.stderr.decode().strip()[-100:]})")

# ... and with the list on stdin (a pipe kept open, as an interactive terminal would be), decoding waits for the
# backend, so a backend that cannot start ends the run at once instead of waiting for the list to end
p = subprocess.Popen([BIN, "--backend", "sm100", "--weights", FIX, "-q", "--files-from", "-", "-o", out("x.jsonl")],
                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
try:
    p.stdin.write((IMGS[0] + "\n").encode())
    p.stdin.flush()
except BrokenPipeError:  # it may end before the list is written at all: what this checks (it flaked here)
    pass
try:
    rc = p.wait(timeout=20)
except subprocess.TimeoutExpired:
    p.kill()
    rc = "hung"
try:
    p.stdin.close()
except BrokenPipeError:
    pass
if rc == 0:
    skip("a backend that cannot start, list on stdin: sm100 started here")
else:
    check(rc == 2, f"a backend that cannot start, list on an open stdin: exit 2 without waiting for the list (got {rc})")

# --- 2. --resume on a file that is not ours: refused with exit 2, left untouched
row = run(IMGS[:1] + ["-f", "jsonl"]).stdout
for what, body in [("a note", b"important notes\n"), ("{\"a\":1}", b'{"a":1}\n'),
                   ("a complete foreign line after our rows", row + b"a note after a valid row\n"),
                   ("a note without a final newline", b"important notes"),
                   ("a CSV file", b"id,vector\n1,2\n")]:
    p = out("notes.jsonl")
    with open(p, "wb") as f:
        f.write(body)
    r = run(IMGS[1:] + ["--resume", "-o", p])
    after = open(p, "rb").read()
    check(r.returncode == 2 and after == body,
          f"--resume on {what}: exit 2 and the file is untouched (exit {r.returncode}, {len(after)} of {len(body)} "
          f"bytes left: {r.stderr.decode().strip()[-160:]})")

# --- 3. names that differ only in bytes that are not UTF-8 stay distinct, exactly, and resume matches bytes
odd = os.path.join(os.fsencode(work), b"odd")
os.makedirs(odd)
names = [b"x\xff.png", b"x\xfe.png", b"x\xef\xbf\xbd.png", b"\xe2\x80\xa8sep\x0c.png"]  # + a real U+FFFD, U+2028
for n, src in zip(names, [IMGS[0], IMGS[1], IMGS[2], IMGS[0]]):
    shutil.copy(src, os.path.join(odd, n))
exact = sorted(os.path.join(odd, n) for n in names)
jl = out("odd.jsonl")


def exact_paths(path):
    rows = [json.loads(line) for line in open(path, "rb").read().splitlines()]  # strict: str json
    return [base64.b64decode(x["path_base64"]) if "path_base64" in x else x["path"].encode("utf-8") for x in rows]


r = run([os.fsdecode(odd), "-o", jl])
try:
    got = exact_paths(jl)
except (ValueError, KeyError) as e:
    got = [str(e)]
check(r.returncode == 0 and got == exact,
      f"jsonl: 4 names that collapse without path_base64 map back to their exact bytes ({len(set(got))} distinct)")
lines = open(jl, "rb").read().splitlines(keepends=True)
with open(jl, "wb") as f:  # as if x\xfe.png's row had been lost (rows are in byte order: it is the third)
    f.writelines(ln for i, ln in enumerate(lines) if i != 2)
r = run([os.fsdecode(odd), "--resume", "-o", jl])
got = exact_paths(jl)
check(r.returncode == 0 and sorted(got) == exact and len(got) == len(set(got)),
      f"--resume re-embeds exactly the one lost row, matched on exact bytes ({len(got)} rows, {len(set(got))} distinct)")
npy = out("odd.npy")
r = run([os.fsdecode(odd), "-o", npy])
sidecar = open(npy + ".paths", "rb").read().split(b"\n")[:-1]
check(r.returncode == 0 and sidecar == exact, "npy: FILE.paths holds each path's exact bytes, one per line")
r = run([os.path.join(os.fsdecode(odd), os.fsdecode(names[0])), "-f", "json"])
row1 = json.loads(r.stdout)
check(base64.b64decode(row1.get("path_base64", "")) == os.path.join(odd, names[0]) and "\ufffd" in row1["path"],
      "json: a single row carries path_base64 too; \"path\" shows U+FFFD for display")

# --- 4. a run that writes no row leaves an existing FILE as it was
empty_dir = out("empty_dir")
os.makedirs(empty_dir)
cases = [("a folder that is not there", [out("no_such_folder") + "/"]), ("an empty folder", [empty_dir]),
         ("a single input that fails", [out("no_such.png")])]
for fmt in ("jsonl", "json", "npy", "fbin", "fvecs", "f32"):
    target = out(f"kept.{fmt}")
    r = run(IMGS + ["-f", fmt, "-o", target])
    sidecar = target + ".paths" if fmt in ("npy", "fbin", "fvecs", "f32") else None
    before = open(target, "rb").read()
    before_side = open(sidecar, "rb").read() if sidecar else None
    check(r.returncode == 0 and len(before) > 0, f"-f {fmt}: the first run wrote {len(before)} bytes")
    for what, inputs in cases:
        r = subprocess.run([BIN, "--backend", "cpu", "--weights", FIX] + inputs + ["-f", fmt, "-o", target],
                           capture_output=True, timeout=120)
        after = open(target, "rb").read()
        side_ok = sidecar is None or open(sidecar, "rb").read() == before_side
        leftovers = [n for n in os.listdir(work) if ".tmp." in n]
        check(r.returncode == 1 and after == before and side_ok and not leftovers
              and b"left as it was" in r.stderr,
              f"-f {fmt} over an existing file, {what}: exit 1, the file{' and its .paths' if sidecar else ''} "
              f"untouched, no temporaries, and it says so (exit {r.returncode}, {len(after)} of {len(before)} bytes; "
              f"{r.stderr.decode(errors='replace').strip()[-120:]})")
    r = run(IMGS[:1] + ["-f", fmt, "-o", target])
    after = open(target, "rb").read()
    check(r.returncode == 0 and after != before, f"-f {fmt}: a run with a row still replaces the file")
new_json = out("new_empty.json")
r = run([out("no_such.png"), "-o", new_json])
check(r.returncode == 1 and open(new_json, "rb").read() == b"[]\n",
      f"a new FILE with no row is still created: json holds [] (exit {r.returncode})")
# a text run whose only query fails (invalid UTF-8) over an existing file
TXT = fixture("tinytext")
qfile, tj = out("bad_queries.txt"), out("texts.jsonl")
with open(qfile, "wb") as f:
    f.write(b"bad \xff query\n")
prev_rows = b'{"text":"an earlier run\'s query","embedding":null}\n'
with open(tj, "wb") as f:
    f.write(prev_rows)
r = subprocess.run([BIN, "--backend", "cpu", "--weights", TXT, "--texts-from", qfile, "-o", tj],
                   capture_output=True, timeout=120)
check(r.returncode == 1 and open(tj, "rb").read() == prev_rows and b"left as it was" in r.stderr,
      f"a text run whose every query fails leaves an existing -o FILE as it was (exit {r.returncode})")
# --- 5a. an existing -o FILE that this tool did not write is refused and left as it was
img = out("photo.jpg")
shutil.copy(IMGS[1], img)
jpeg = open(img, "rb").read()
note = out("notes.json")
with open(note, "wb") as f:
    f.write(b"important notes\n")
link = out("hardlink.json")
os.link(img, link)
for what, inputs, target, fmt in [("an input named as the output", [img], img, []),
                                  ("an image given as -o (a glob's first match)", IMGS[:1], img, []),
                                  ("a note", IMGS[:1], note, []), ("a hard link to an input", [img], link, []),
                                  ("a note, as npy", IMGS[:1], note, ["-f", "npy"])]:
    before = open(target, "rb").read()
    r = run(inputs + fmt + ["-o", target])
    check(r.returncode == 2 and open(target, "rb").read() == before and b"not written by siglip2-embed" in r.stderr
          and not [n for n in os.listdir(work) if ".tmp." in n],
          f"-o over {what}: exit 2, the file untouched ({r.returncode}: {r.stderr.decode().strip()[-110:]})")
check(open(img, "rb").read() == jpeg, "the image named as -o is byte for byte the same after all of that")
lone = out("lone.npy")
shutil.copy(IMGS[1], lone + ".paths")  # a photo named x.npy.paths
r = run(IMGS[:1] + ["-o", lone])
check(r.returncode == 2 and open(lone + ".paths", "rb").read() == open(IMGS[1], "rb").read()
      and not os.path.exists(lone),
      f"-o x.npy over an x.npy.paths that is a photo: exit 2, the photo untouched ({r.returncode})")
os.unlink(lone + ".paths")
r = run(IMGS + ["-o", lone])
os.unlink(lone)  # a script deletes the output and runs again: the list left beside it is ours to replace
r = run(IMGS[:1] + ["-o", lone])
check(r.returncode == 0 and open(lone + ".paths", "rb").read() == os.fsencode(IMGS[0]) + b"\n",
      f"-o x.npy after x.npy was deleted: the list left beside it is replaced (exit {r.returncode})")
for fmt in ("jsonl", "json", "npy", "fbin", "fvecs", "f32"):  # an earlier output of ours, in any format, is replaced
    prev = out(f"prev.{fmt}")
    r1 = run(IMGS + ["-f", fmt, "-o", prev])
    r2 = run(IMGS[:1] + ["-f", "jsonl" if fmt != "jsonl" else "npy", "-o", prev])
    check(r1.returncode == 0 and r2.returncode == 0, f"an earlier {fmt} output of ours is replaced (a format change "
          f"too): exit {r1.returncode}, {r2.returncode} ({r2.stderr.decode().strip()[-100:]})")

# --- 5b. a FIFO named as an input fails alone (opening it waited for a writer forever)
fifo_in = out("pipe.jpg")
os.mkfifo(fifo_in)
try:
    r = run([fifo_in] + IMGS[:1] + ["-f", "jsonl"], timeout=20)
    ok = r.returncode == 1 and len(r.stdout.splitlines()) == 1 and b"not a regular file" in r.stderr
    got = f"exit {r.returncode}"
except subprocess.TimeoutExpired:
    ok, got = False, "still blocked after 20 s"
check(ok, f"a FIFO named as an input: fails alone, the other input embedded ({got})")

# --- 5c. --dump-preprocessed: no write through a symbolic link, none over a file that is not an earlier dump
dump = out("dump")
os.makedirs(dump)
precious = out("precious.txt")
with open(precious, "wb") as f:
    f.write(b"important\n")
os.symlink(precious, os.path.join(dump, "000000.ppm"))
with open(os.path.join(dump, "000001.ppm"), "wb") as f:
    f.write(b"user file\n")
r = run(IMGS + ["--dump-preprocessed", dump, "-f", "jsonl"])
third = open(os.path.join(dump, "000002.ppm"), "rb").read() if os.path.exists(os.path.join(dump, "000002.ppm")) else b""
check(r.returncode == 1 and open(precious, "rb").read() == b"important\n"
      and open(os.path.join(dump, "000001.ppm"), "rb").read() == b"user file\n" and third.startswith(b"P6\n"),
      f"--dump-preprocessed: a link in DIR is not followed and a foreign file not replaced (exit {r.returncode}); the "
      f"third input is dumped")
r = run(IMGS + ["--dump-preprocessed", dump, "-f", "jsonl"])
check(r.returncode == 1 and open(os.path.join(dump, "000002.ppm"), "rb").read() == third,
      "--dump-preprocessed: an earlier dump of ours is replaced (the same pixels)")

# session 30: a DIR so long that DIR/NNNNNN.ppm passes PATH_MAX. The names were built in a 4,096-byte buffer and
# cut short unchecked, so every input's pixels went to one file of a truncated name, exit 0; now each input fails
# with the system's reason and nothing is written
deep = out("deepdump")
longdir = os.path.join(deep, *[f"d{i:0254d}" for i in range(15)])
longdir = os.path.join(longdir, "e" * (4090 - len(longdir) - 1))
os.makedirs(longdir)
r = run(IMGS + ["--dump-preprocessed", longdir, "-f", "jsonl"])
written = [os.path.join(dp, f) for dp, _, fs in os.walk(deep) for f in fs]
err = r.stderr.decode(errors="replace")
check(r.returncode == 1 and not written and err.count("File name too long") == len(IMGS) and not r.stdout,
      f"--dump-preprocessed into a {len(longdir)}-byte DIR: each input fails with the system's reason, no file written "
      f"(exit {r.returncode}, {len(written)} files: {[os.path.basename(w)[:12] for w in written]})")
# session 30: a directory loop's message escapes the folder it names, as every path in a message (one line)
loopdir = out("loop")
weird = os.path.join(loopdir, os.fsdecode(b"we\nird\xff"))
os.makedirs(os.path.join(weird, "x"))
os.symlink("..", os.path.join(weird, "x", "up"))
r = run([loopdir, "-f", "jsonl"])
lines = [ln for ln in r.stderr.split(b"\n") if b"directory loop" in ln]
check(r.returncode == 1 and len(lines) == 1 and lines[0].endswith(b"already inside " + out("loop").encode() +
                                                                   b"/we\\nird\\xff"),
      f"a directory loop's message shows the folder escaped, on one line ({lines})")

# --- 7b. session 30's audit: runs on one output at once, and a dead PID-1 run's temporaries
cc = out("conc30")
os.makedirs(cc)
MORE = [os.path.join(IMAGES, n) for n in ("png_gray16.png", "jpeg_420.jpg", "bmp_32.bmp")]


def slow(args, first, rest, gap):
    """The command with args, reading --files-from a pipe: first now, rest after gap seconds."""
    lines = [[first], rest]

    def feed(p):
        try:
            for i, part in enumerate(lines):
                if i:
                    time.sleep(gap)
                p.stdin.write("".join(x + "\n" for x in part).encode())
                p.stdin.flush()
            p.stdin.close()
        except BrokenPipeError:  # the run ended before reading it all (refused): its exit status says so
            pass
    p = subprocess.Popen([BIN] + W + ["-b", "1", "--files-from", "-"] + args, stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    threading.Thread(target=feed, args=(p,), daemon=True).start()
    return p


# A JSONL being written (and a JSONL written under another output's FILE.paths name) is not replaced by a
# temporary-and-rename run: its lock is honoured at the start (the rename used to unlink the JSONL under its
# writer, whose rows then vanished with exit 0)
live, live_list = os.path.join(cc, "live.jsonl"), os.path.join(cc, "v.npy.paths")
pa, pb = slow(["-o", live], IMGS[0], IMGS[1:], 2.0), slow(["-o", live_list], IMGS[0], IMGS[1:], 2.0)
time.sleep(1.0)
r_json, r_npy = run(MORE + ["-f", "json", "-o", live]), run(MORE + ["-o", os.path.join(cc, "v.npy")])
rc_a, rc_b = pa.wait(timeout=60), pb.wait(timeout=60)
rows_live = [json.loads(x)["path"] for x in open(live)]
rows_list = [json.loads(x)["path"] for x in open(live_list)]
check(r_json.returncode == 2 and b"being written by another" in r_json.stderr and r_npy.returncode == 2 and
      b"being written by another" in r_npy.stderr and rc_a == 0 and rc_b == 0 and rows_live == IMGS and
      rows_list == IMGS and not os.path.exists(os.path.join(cc, "v.npy")),
      f"a JSON and an npy run onto a JSONL being written (FILE, and FILE.paths): refused, the JSONL whole "
      f"(exits {r_json.returncode}, {r_npy.returncode}; writers {rc_a}, {rc_b}; {len(rows_live)}, {len(rows_list)} rows)")
# Two temporary-and-rename runs on one new FILE: the pair of renames is not split by the other run's pair. Run B
# starts first (both see no FILE), run A pauses between its two renames (a test hook), and B, whose last input
# comes late, reaches its renames during the pause. Without the check before the renames and the folder's lock
# around them, B's pair landed inside A's: FILE with A's 3 rows beside B's 2 names (this test fails so); now B
# waits for A's pair and renames after it (or, with the check alone, is refused: A's list is locked)
pair = os.path.join(cc, "pair.npy")
pb = slow(["-o", pair], MORE[0], MORE[1:2], 1.5)  # B first: it must see no FILE at its start, as A does
t0 = time.monotonic()
while not any(n.startswith(f"pair.npy.tmp.{pb.pid}") for n in os.listdir(cc)) and time.monotonic() - t0 < 10:
    time.sleep(0.02)
env_pause = dict(os.environ, SIGLIP2_TEST_RENAME_PAUSE_MS="2000")
pa = subprocess.Popen([BIN] + W + IMGS + ["-o", pair], env=env_pause, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
rc_a, rc_b = pa.wait(timeout=60), pb.wait(timeout=60)
names = open(pair + ".paths").read().splitlines()
rows = np.load(pair)
want = {tuple(IMGS): ref, tuple(MORE[:2]): np.frombuffer(run(MORE[:2] + ["-f", "f32"]).stdout, "<f4").reshape(-1, D)}
match = tuple(names) in want and rows.shape == want[tuple(names)].shape and np.array_equal(rows, want[tuple(names)])
check(rc_a == 0 and rc_b in (0, 2) and match and time.monotonic() - t0 < 10,
      f"two npy runs on one new FILE, one paused between its renames: FILE and FILE.paths from the same run "
      f"(exits {rc_a}, {rc_b}; {rows.shape[0]} rows, {len(names)} names)")
# A run killed as PID 1 of a container leaves FILE.tmp.1 and FILE.paths.tmp.1; the next such run is PID 1 too, and
# its cleanup skipped its own PID, so every later run failed (exit 2, "File exists") until someone removed them.
# Played here with exec, which keeps the PID: the left-overs are named with the PID the command will have
pidout = os.path.join(cc, "pid.npy")
run(IMGS[:1] + ["-o", pidout])
script = (f'cp {pidout!r} {pidout!r}.tmp.$$ && cp {pidout!r}.paths {pidout!r}.paths.tmp.$$ && '
          f'exec "$@"')
r = subprocess.run(["bash", "-c", script, "sh", BIN] + W + IMGS + ["-o", pidout], capture_output=True, timeout=120)
left = [n for n in os.listdir(cc) if n.startswith("pid.npy") and ".tmp." in n]
check(r.returncode == 0 and np.load(pidout).shape == (3, D) and not left,
      f"a dead run's temporaries under this run's own PID (a container's PID 1): removed, the run replaces FILE "
      f"(exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-120:]}; left {left})")
# A write-protected output (chmod a-w, to keep it) is not replaced by a temporary-and-rename format, as JSONL's
# in-place open already refused; root writes anyway, so this runs as nobody
# (as root the check runs as nobody, in a folder of its own under /tmp: the test's folder may be private)
import tempfile  # noqa: E402

ro = tempfile.mkdtemp(prefix="sg-ro-")
os.chmod(ro, 0o777)
as_nobody = {}
if os.geteuid() == 0:
    as_nobody = {"preexec_fn": lambda: (os.setgid(65534), os.setuid(65534))}
made = [run(IMGS[:2] + ["-o", os.path.join(ro, n)], **as_nobody) for n in ("res.npy", "res.json")]
names = ("res.npy", "res.npy.paths", "res.json")
if not all(os.path.exists(os.path.join(ro, n)) for n in names):
    skip(f"a write-protected output: the first outputs could not be made as this user ({made[0].stderr[-120:]!r})")
else:
    for n in names:
        os.chmod(os.path.join(ro, n), 0o444)
    kept = {n: open(os.path.join(ro, n), "rb").read() for n in names}
    r1 = run(IMGS[2:] + ["-o", os.path.join(ro, "res.npy")], **as_nobody)
    r2 = run(IMGS[2:] + ["-o", os.path.join(ro, "res.json")], **as_nobody)
    same = all(open(os.path.join(ro, n), "rb").read() == b for n, b in kept.items())
    check(r1.returncode == 2 and r2.returncode == 2 and b"write-protected" in r1.stderr and
          b"write-protected" in r2.stderr and same,
          f"a write-protected npy and json output: not replaced, exit 2 (exits {r1.returncode}, {r2.returncode}: "
          f"{r1.stderr.decode(errors='replace').strip()[-90:]})")
shutil.rmtree(ro, ignore_errors=True)

# --- 5d. one good image, then batches of failed inputs: the run ends (it hung with every result slot waiting)
for n, args in [(6, ["-j", "1", "-b", "1"] + IMGS[:1] + [out(f"missing{i}.jpg") for i in range(6)]),
                (140, IMGS[:1] + [out(f"gone{i}.png") for i in range(140)])]:
    try:
        r = run(args + ["-f", "jsonl"], timeout=60)
        ok = r.returncode == 1 and len(r.stdout.splitlines()) == 1
        got = f"exit {r.returncode}, {len(r.stdout.splitlines())} row"
    except subprocess.TimeoutExpired:
        ok, got = False, "hung: killed after 60 s"
    check(ok, f"one good image, then {n} failed inputs: the run ends with its row, exit 1 ({got})")
# --- 5e. a dead run's temporaries are removed only as a pair, or when their bytes look like our output
dead = subprocess.Popen(["true"])
dead.wait()
dead2 = subprocess.Popen(["true"])
dead2.wait()
tgt = out("tidy.npy")
lone_backup, lone_list = f"{tgt}.tmp.{dead.pid}", f"{tgt}.paths.tmp.{dead2.pid}"
with open(lone_backup, "wb") as f:
    f.write(b"my backup\n")
with open(lone_list, "wb") as f:
    f.write(b"my notes\n")
r = run(IMGS[:1] + ["-o", tgt])
check(r.returncode == 0 and open(lone_backup, "rb").read() == b"my backup\n" and os.path.exists(lone_list),
      f"a file merely named like a dead run's temporary (no pair, not our bytes) is kept ({r.returncode})")
os.unlink(lone_backup)
os.unlink(lone_list)
# --- 5f. a plain LF list naming x.jpg and "x.jpg\r" (two files): two different rows, neither taken for the other
crdir = os.path.join(os.fsencode(work), b"crnames")
os.makedirs(crdir)
shutil.copy(IMGS[1], os.path.join(crdir, b"x.jpg"))
shutil.copy(IMGS[0], os.path.join(crdir, b"x.jpg\r"))
lst = out("lf.list")
with open(lst, "wb") as f:
    f.write(os.path.join(crdir, b"x.jpg") + b"\n" + os.path.join(crdir, b"x.jpg\r") + b"\n")
r = run(["--files-from", lst, "-f", "jsonl"])
rows = [json.loads(x) for x in r.stdout.splitlines()]
check(r.returncode == 0 and len(rows) == 2 and rows[1]["path"].endswith("x.jpg\r") and
      rows[0]["embedding"] != rows[1]["embedding"],
      f"an LF list keeps a name's final CR: x.jpg and x.jpg\\r are two files, two rows ({[x['path'][-7:] for x in rows]})")
with open(lst, "wb") as f:  # a Windows list: the CR before each LF is the line end, not part of the name
    f.write(os.path.join(crdir, b"x.jpg") + b"\r\n")
r = run(["--files-from", lst, "-f", "jsonl"])
rows = [json.loads(x) for x in r.stdout.splitlines()]
check(r.returncode == 0 and len(rows) == 1 and rows[0]["path"].endswith("x.jpg"), "a CR LF list still drops the CR")

# --- 6a. another tool's files that looked like ours: refused with exit 2, untouched, saying what was expected
foreign = out("foreign6")
os.makedirs(foreign)


def refused(what, target, args, expect):
    """Runs with -o target over its present bytes: exit 2, the file (and a list beside it) as they were, no list
    or temporary made, and the message says expect."""
    before = open(target, "rb").read()
    lists = {e: open(target + e, "rb").read() for e in (".paths", ".texts") if os.path.exists(target + e)}
    r = run(args + ["-o", target])
    err = r.stderr.decode(errors="replace")
    after_lists = {e: open(target + e, "rb").read() for e in (".paths", ".texts") if os.path.exists(target + e)}
    check(r.returncode == 2 and open(target, "rb").read() == before and after_lists == lists
          and "not written by siglip2-embed" in err and expect in err and not [n for n in os.listdir(foreign)
                                                                           if ".tmp." in n],
          f"-o over {what}: exit 2, untouched, says '{expect}' (exit {r.returncode}: {err.strip()[-220:]})")


jq = os.path.join(foreign, "labels.jsonl")
with open(jq, "wb") as f:  # jq -c output: compact, starts like our rows, other keys
    f.write(b'{"path":"cats/a.jpg","label":"cat"}\n{"path":"dogs/b.jpg","label":"dog"}\n')
refused("a jq -c line starting with {\"path\":\"", jq, IMGS[:1], "first row is not one this tool writes")
refused("... as json", jq, IMGS[:1] + ["-f", "json"], "first row is not one this tool writes")
scores = os.path.join(foreign, "scores.json")
with open(scores, "wb") as f:
    f.write(b'[{"path":"a.jpg","score":1}]')
refused("a compact JSON array of {\"path\": ...} objects", scores, IMGS[:1], "first row is not one this tool writes")
with open(os.path.join(foreign, "one.jsonl"), "wb") as f:  # one line, no newline: not a beginning of our row either
    f.write(b'{"path":"a.jpg","caption":"a dog"}')
refused("another tool's single line without newline", os.path.join(foreign, "one.jsonl"), IMGS[:1],
        "first row is not one this tool writes")
feat = os.path.join(foreign, "feat.npy")
np.save(feat, np.arange(7, dtype="float32"))
refused("a 1-D float32 npy (np.save of arange(7))", feat, IMGS[:1], "not the '<f4', C-order, 2-D (N, D) one")
with open(feat + ".paths", "wb") as f:
    f.write(b"x\n")
refused("... even with a FILE.paths beside it", feat, IMGS[:1], "not the '<f4', C-order, 2-D (N, D) one")
os.unlink(feat + ".paths")
other = os.path.join(foreign, "other.npy")
np.save(other, np.ones((10, 512), "<f4"))
refused("another tool's [10, 512] float32 npy with no list", other, IMGS[:1],
        "an npy without the FILE.paths / FILE.texts this tool writes")
refused("... with a text run", other, ["--weights", fixture("tinytext"), "--text", "a dog"],
        "an npy without the FILE.paths / FILE.texts this tool writes")
gt = np.arange(4 * 101, dtype="<i4").reshape(4, 101)
gt[:, 0] = 100  # an int32 ground-truth .ivecs (k = 100): passes the fvecs size rule
ivecs = os.path.join(foreign, "gt.ivecs")
gt.tofile(ivecs)
for fmt in ("fvecs", "f32", "npy"):
    refused(f"an int32 .ivecs with -f {fmt}", ivecs, IMGS[:1] + ["-f", fmt], "as in fvecs or ivecs, without the FILE.paths")
fbin = os.path.join(foreign, "base.fbin")
with open(fbin, "wb") as f:
    f.write(np.array([3, 4], "<u4").tobytes() + np.ones((3, 4), "<f4").tobytes())
refused("another tool's fbin with no list", fbin, IMGS[:1] + ["-f", "fbin"], "an fbin-like header (N = 3, D = 4)")
raw = os.path.join(foreign, "vectors.f32")
np.ones((3, 4), "<f4").tofile(raw)
refused("raw float32 with no list", raw, IMGS[:1] + ["-f", "f32"], "its raw f32 has a FILE.paths / FILE.texts beside it")

# --- 6b. everything this tool writes is recognised as ours and replaced by the next run
mine = out("mine6")
os.makedirs(mine)
TXTW = ["--weights", fixture("tinytext")]
oddname = os.path.join(os.fsencode(mine), b"x\xff\".png")
shutil.copy(IMGS[0], oddname)
missing = os.path.join(mine, "missing.png")
with open(os.path.join(mine, "queries.txt"), "wb") as f:
    f.write(b"bad \xff query\na dog\n")  # the first fails (not UTF-8): a null row with text_base64
kinds = [("image rows", IMGS[:2]), ("a path_base64 row first", [os.fsdecode(oddname)] + IMGS[:1]),
         ("a null row first (--on-error null)", ["--on-error", "null", missing] + IMGS[:1]),
         ("--no-normalize", ["--no-normalize"] + IMGS[:2]), ("no row (a new file)", [missing]),
         ("text rows", TXTW + ["--text", "a dog", "--text", 'a "cat"']),
         ("text rows, a null text_base64 row first", TXTW + ["--on-error", "null", "--texts-from",
                                                            os.path.join(mine, "queries.txt")])]
for fmt in ("jsonl", "json", "npy", "fbin", "fvecs", "f32"):
    for what, args in kinds:
        target = os.path.join(mine, f"o.{fmt}")
        for e in ("", ".paths", ".texts"):
            if os.path.exists(target + e):
                os.unlink(target + e)
        r1 = run(args + ["-f", fmt, "-o", target])
        first = open(target, "rb").read()
        r2 = run(IMGS[2:] + ["-f", "jsonl" if fmt != "jsonl" else "npy", "-o", target])
        check(r1.returncode in (0, 1) and os.path.exists(target) and r2.returncode == 0 and
              open(target, "rb").read() != first,
              f"-f {fmt}, {what}: replaced by the next run (exit {r1.returncode}, {r2.returncode}: "
              f"{r2.stderr.decode(errors='replace').strip()[-160:]})")
for what, args, fmt in [("--labels rows", TXTW + ["--labels", "dog,cat"] + IMGS[:2], "jsonl"),
                        ("--labels rows", TXTW + ["--labels", "dog,cat"] + IMGS[:2], "json"),
                        ("the single object", IMGS[:1], "json"),
                        ("the single object of a failed input (--on-error null)", ["--on-error", "null", missing],
                         "json"),
                        ("[] of a single failed input", [missing], "json"),
                        ("another model's rows (dim 32, this run 64)", TXTW + ["--text", "a dog"], "jsonl"),
                        ("another model's rows (dim 32, this run 64)", TXTW + ["--text", "a", "--text", "b"], "json")]:
    target = os.path.join(mine, f"o2.{fmt}")
    if os.path.exists(target):
        os.unlink(target)
    r1 = run(args + ["-f", fmt, "-o", target])
    first = open(target, "rb").read()
    r2 = run(IMGS[2:] + ["-f", fmt, "-o", target])
    check(r1.returncode in (0, 1) and r2.returncode == 0 and open(target, "rb").read() != first,
          f"-f {fmt}, {what}: replaced by the next run ({first[:40]}...; exit {r1.returncode}, {r2.returncode}: "
          f"{r2.stderr.decode(errors='replace').strip()[-160:]})")
# outputs cut short: a JSONL killed by kill -9 mid-run, one cut inside its first row, a JSON array cut short
many = os.path.join(mine, "many")
os.makedirs(many)
for i in range(400):
    os.link(IMGS[i % 3], os.path.join(many, f"{i:04d}{os.path.splitext(IMGS[i % 3])[1]}"))
killed = os.path.join(mine, "killed.jsonl")
p = subprocess.Popen([BIN] + W + ["-j", "1", "-b", "1", many, "-o", killed], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
for _ in range(500):  # until some rows are there, then kill -9
    time.sleep(0.01)
    if os.path.exists(killed) and os.path.getsize(killed) > 0:
        break
p.send_signal(signal.SIGKILL)
p.wait()
rows_left = open(killed, "rb").read()
if p.returncode != -signal.SIGKILL or not rows_left:
    skip(f"kill -9 of a JSONL run: the run was not killed while writing (exit {p.returncode}, {len(rows_left)} bytes)")
else:
    r = run(IMGS[:1] + ["-o", killed])
    whole, torn = rows_left.count(b"\n"), len(rows_left) - (rows_left.rfind(b"\n") + 1)
    check(r.returncode == 0 and open(killed, "rb").read() != rows_left,
          f"a JSONL left by kill -9 ({whole} whole rows, {torn} bytes of a torn one) is replaced by the next run "
          f"(exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-120:]})")
row0 = run(IMGS[:1] + ["-f", "jsonl"]).stdout
arr = run(IMGS + ["-f", "json"]).stdout
for what, body in [("a JSONL cut inside its first row (a single line without newline)", row0[:len(row0) // 2]),
                   ("a JSONL cut inside its first row's path", row0[:12]),
                   ("a JSON array cut inside its first row", arr[:len(arr) // 5]),
                   ("a JSON array cut after its first row", arr[:arr.index(b"},") + 2])]:
    target = os.path.join(mine, "cut.json")
    with open(target, "wb") as f:
        f.write(body)
    r = run(IMGS[:1] + ["-f", "jsonl", "-o", target])
    check(r.returncode == 0 and open(target, "rb").read() == row0,
          f"{what}: replaced by the next run (exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-120:]})")
# a dead run's TARGET.tmp.PID whose list had already been renamed to TARGET.paths: removed by the next run
dead3 = subprocess.Popen(["true"])
dead3.wait()
tgt = os.path.join(mine, "win.npy")
run(IMGS + ["-o", tgt])
shutil.copy(tgt, f"{tgt}.tmp.{dead3.pid}")
r = run(IMGS[:1] + ["-o", tgt])
check(r.returncode == 0 and not os.path.exists(f"{tgt}.tmp.{dead3.pid}"),
      f"a dead run's TARGET.tmp.PID whose list was renamed to TARGET.paths is removed by the next run ({r.returncode})")
done()
