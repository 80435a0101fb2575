"""tests/test_cli_resume.py — siglip2-embed never loses or duplicates work: --resume after kill -9 at random
moments, and --shard K/N covering the input exactly once.

Resume: at least 25 rounds (22 or more of them killed mid-run) of `--resume` killed with SIGKILL after a
random delay (a few rounds also get a torn, half-written last line appended, as a crash inside write() would
leave). After every kill the file must hold only whole, distinct rows plus at most one torn last line; after a
final uninterrupted --resume it must hold
every input exactly once with the same embedding as an uninterrupted run (fresh random-noise images each run;
tolerance 1e-6 absolute on unit-norm rows, as batches are composed differently after a resume).
Shards: --shard K/3 for K = 0, 1, 2 are disjoint, their union is the whole input, rows equal the unsharded run.
Session 27: another tool's last line starting like our rows is refused, not cut; an input named twice keeps both
rows after a resume; --no-normalize is refused on a file of normalised rows.
Session 28: runs on one JSONL at once (three --resume runs started together): one writes, the others are refused,
and every input is there once; a file whose end a crash left as zero bytes is resumed; null rows of an earlier run
make a resumed run exit 1; a resume whose inputs match none of the file's rows (another spelling) says so.
Session 30: runs started together on one new JSONL without --resume: one writes it, the others are refused.
A file written with other weights of the same dim, or zero-shot scores of another --template, is
refused untouched (its torn line too); an input changed since its row was written is named and the run goes on;
with the probe rows' inputs gone the run goes on unchecked (-v says so).
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgtest import BIN, IMAGES, check, done, fixture, fresh_dir  # noqa: E402

import numpy as np  # noqa: E402

FIX = fixture("tiny196")
W = ["--backend", "cpu", "--weights", FIX, "-q", "-b", "4", "-j", "2"]
work = fresh_dir("cli_resume")
inp = os.path.join(work, "in")
os.makedirs(inp)
rng = random.Random()
nrng = np.random.default_rng()

# 60 inputs: copies of the test images and fresh random PPMs, so every run sees new pixels
names = sorted(n for n in os.listdir(IMAGES) if n.lower().endswith((".png", ".jpg", ".bmp", ".gif", ".ppm")))
for i in range(30):
    n = rng.choice(names)
    shutil.copy(os.path.join(IMAGES, n), os.path.join(inp, f"img{i:03d}{os.path.splitext(n)[1]}"))
for i in range(30):
    h, w = nrng.integers(8, 300, size=2)
    px = nrng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    with open(os.path.join(inp, f"noise{i:03d}.ppm"), "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w, h) + px.tobytes())
ALL = sorted(os.path.join(inp, n) for n in os.listdir(inp))


def read_rows(path):
    """Whole rows of a JSONL output and whether a torn last line is present."""
    data = open(path, "rb").read() if os.path.exists(path) else b""
    lines = data.split(b"\n")
    torn = lines.pop() != b""  # text after the last newline
    return [json.loads(line) for line in lines], torn


t0 = time.monotonic()
ref_out = os.path.join(work, "ref.jsonl")
r = subprocess.run([BIN] + W + [inp, "-o", ref_out], capture_output=True, timeout=600)
full_time = time.monotonic() - t0
ref_rows, _ = read_rows(ref_out)
check(r.returncode == 0 and [x["path"] for x in ref_rows] == ALL,
      f"reference run: {len(ALL)} rows in {full_time:.2f}s")
ref = {x["path"]: np.array(x["embedding"], dtype=np.float32) for x in ref_rows}

out = os.path.join(work, "r.jsonl")
rounds, kills, completions, torn_seen, bad = 0, 0, 0, 0, []
while (kills < 22 or rounds < 25) and rounds < 150:  # at least 22 kills mid-run, however fast the machine
    rnd = rounds
    rounds += 1
    if rnd % 6 == 5 and os.path.exists(out) and open(out, "rb").read()[-1:] in (b"", b"\n"):
        # simulate a crash inside write(): half a row, no newline. Only after a whole line: a file the tool writes
        # holds at most one torn line, the end of its byte stream, and --resume cuts it before it appends, so two
        # torn writes never follow each other (since session 27 such a concatenation is refused: not a prefix of
        # one of our rows)
        with open(out, "ab") as f:
            f.write(b'{"path":"' + ALL[0].encode() + b'","embedding":[0.1,0.2')
    p = subprocess.Popen([BIN] + W + ["--resume", inp, "-o", out], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    time.sleep(rng.uniform(0.0, full_time * 0.7))  # usually before the end, whatever the machine's speed
    if p.poll() is None:
        p.send_signal(signal.SIGKILL)
        kills += 1
    rc = p.wait()
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if rc not in (0, -signal.SIGKILL):
        bad.append(f"round {rnd}: exit {rc}: {err[-300:]}")
    try:
        rows, torn = read_rows(out)
    except ValueError as ex:
        bad.append(f"round {rnd}: a whole line does not parse: {ex}")
        break
    torn_seen += torn
    paths = [x["path"] for x in rows]
    if len(paths) != len(set(paths)):
        bad.append(f"round {rnd}: duplicate rows after kill")
    if rc == 0:
        completions += 1
        if sorted(paths) != ALL:
            bad.append(f"round {rnd}: completed run does not hold every input")
        os.unlink(out)  # start over so later rounds are killed mid-run again
check(not bad, f"{rounds} kill -9 rounds ({kills} killed mid-run, {completions} finished, {torn_seen} torn "
      f"last lines seen): no duplicates, whole lines always parse" + (": " + "; ".join(bad[:3]) if bad else ""))
check(kills >= 20, f"at least 20 rounds were killed mid-run ({kills})")

r = subprocess.run([BIN] + W + ["--resume", inp, "-o", out], capture_output=True, timeout=600)
rows, torn = read_rows(out)
paths = [x["path"] for x in rows]
check(r.returncode == 0 and not torn and sorted(paths) == ALL and len(paths) == len(set(paths)),
      f"final --resume: every input exactly once ({len(paths)} rows, {len(set(paths))} distinct, {len(ALL)} inputs)")
maxdiff = max(float(np.abs(np.array(x["embedding"], dtype=np.float32) - ref[x["path"]]).max()) for x in rows)
check(maxdiff <= 1e-6, f"resumed rows equal an uninterrupted run (max abs diff {maxdiff:.1e})")
r = subprocess.run([BIN] + W + ["--resume", inp, "-o", out], capture_output=True, timeout=600)
check(r.returncode == 0 and read_rows(out)[0] == rows, "--resume of a finished file adds nothing")

# --- shards
seen = {}
for k in range(3):
    so = os.path.join(work, f"shard{k}.jsonl")
    r = subprocess.run([BIN] + W + ["--shard", f"{k}/3", inp, "-o", so], capture_output=True, timeout=600)
    check(r.returncode == 0, f"--shard {k}/3: exit 0")
    for x in read_rows(so)[0]:
        seen.setdefault(x["path"], []).append((k, x["embedding"]))
counts = [len(v) for v in seen.values()]
check(sorted(seen) == ALL and set(counts) == {1}, f"--shard K/3: union is the whole input, no overlaps "
      f"({len(seen)} paths, max {max(counts)} shards each)")
sizes = [sum(1 for v in seen.values() if v[0][0] == k) for k in range(3)]
check(min(sizes) > 0, f"--shard K/3: every shard got work ({sizes})")
check(all(np.array_equal(np.array(v[0][1], dtype=np.float32), ref[p]) for p, v in seen.items()),
      "--shard: rows equal the unsharded run")
lst = os.path.join(work, "list.txt")
with open(lst, "w") as f:
    f.write("\n".join(ALL) + "\n")
a = subprocess.run([BIN] + W + ["--shard", "1/3", "--files-from", lst], capture_output=True, timeout=600)
check([json.loads(line)["path"] for line in a.stdout.splitlines()] ==
      [p for p in ALL if seen[p][0][0] == 1], "--shard with --files-from picks the same paths as with a directory")
# --- session 27: a foreign last line is never cut, an input named twice keeps both rows, and --no-normalize rows
# are not appended to a file of normalised ones
# Bug A: a last line without newline that starts like our rows but is another tool's was silently cut off.
cap = os.path.join(work, "cap.jsonl")
cap_bytes = b'{"path":"a.jpg","caption":"a dog, written by another tool"}'
with open(cap, "wb") as f:
    f.write(cap_bytes)
r = subprocess.run([BIN] + W + ["--resume", ALL[0], "-o", cap], capture_output=True, timeout=600)
check(r.returncode == 2 and open(cap, "rb").read() == cap_bytes and b"not ours" in r.stderr,
      f"--resume on another tool's last line starting with {{\"path\":\" without newline: exit 2, file untouched "
      f"(exit {r.returncode}, {os.path.getsize(cap)} bytes)")
# Bug B: one row in the file skipped every occurrence of its path, so `a a b` resumed to 2 rows instead of 3.
dup_args = [ALL[0], ALL[0], ALL[1]]
dup_ref = os.path.join(work, "dup_ref.jsonl")
r = subprocess.run([BIN] + W + dup_args + ["-o", dup_ref], capture_output=True, timeout=600)
dref, _ = read_rows(dup_ref)
check(r.returncode == 0 and [x["path"] for x in dref] == dup_args, "uninterrupted run of a a b: 3 rows")
dup = os.path.join(work, "dup.jsonl")
with open(dup_ref, "rb") as f, open(dup, "wb") as g:
    g.write(f.readline())  # an interruption that kept only the first row
r = subprocess.run([BIN] + W + ["--resume"] + dup_args + ["-o", dup], capture_output=True, timeout=600)
drows, dtorn = read_rows(dup)
same = [x["path"] for x in drows] == dup_args and all(
    np.abs(np.array(x["embedding"], dtype=np.float32) - np.array(y["embedding"], dtype=np.float32)).max() <= 1e-6
    for x, y in zip(drows, dref))
check(r.returncode == 0 and not dtorn and same,
      f"--resume of a a b after 1 row: {len(drows)} rows, the same as the uninterrupted run (3)")
before = open(dup, "rb").read()
r = subprocess.run([BIN] + W + ["--resume", "--no-normalize", ALL[2], "-o", dup], capture_output=True, timeout=600)
check(r.returncode == 2 and open(dup, "rb").read() == before and b"norm" in r.stderr,
      f"--resume --no-normalize on a file of normalised rows: exit 2, untouched (exit {r.returncode}: "
      f"{r.stderr.decode().strip()[-100:]})")
# --- session 28: one writer at a time
conc = os.path.join(work, "conc.jsonl")
procs = [subprocess.Popen([BIN] + W + ["--resume", inp, "-o", conc], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
         for _ in range(3)]
outs = [(p.wait(), p.stderr.read()) for p in procs]
rows, torn = read_rows(conc)
paths = sorted(r["path"] for r in rows)
ok_codes = all(rc == 0 or (rc == 2 and b"being written by another" in e) for rc, e in outs)
check(paths == ALL and not torn and ok_codes,
      f"three --resume runs started together on a new file: every input once ({len(paths)} rows for {len(ALL)}); "
      f"each run finished or was refused for the lock ({[rc for rc, _ in outs]})")
# Session 30: the same without --resume on a new file, each run embedding other inputs: before, the runs could
# all create it and write their rows over each other's (8 of 10 trials mixed two runs' rows, each run exiting 0);
# now the first to create it locks it at once, a run that finds it made meanwhile is refused, and in every trial
# the file holds one run's rows, whole (a first fix, the lock alone, still mixed them in 1 of 5 trials: a run that
# had seen no file took one that appeared meanwhile for an old output, and emptied it under its writer).
mixed = []
for trial in range(10):
    new_out = os.path.join(work, f"new{trial}.jsonl")
    sets = [ALL[k::3][:12] for k in range(3)]
    procs = [subprocess.Popen([BIN] + W[:-4] + ["-b", "2", "-j", "1"] + s_ + ["-o", new_out], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for s_ in sets]
    outs = [(p.wait(), p.stderr.read()) for p in procs]
    try:
        got = [x["path"] for x in read_rows(new_out)[0]]
    except ValueError:
        got = None
    one_set = got in sets and [rc for rc, _ in outs].count(0) >= 1 and all(
        rc == 0 or (rc == 2 and (b"being written by another" in e or b"appeared while" in e)) for rc, e in outs)
    if not one_set:
        mixed.append(f"trial {trial}: exits {[rc for rc, _ in outs]}, {len(got) if got else 'unparsable'} rows")
check(not mixed, "three runs started together on one new JSONL, other inputs each: the file holds one run's rows, "
      "the others refused for the lock (10 trials)" + (": " + "; ".join(mixed) if mixed else ""))
# the lock itself, without a race: held here, a --resume is refused and the file left as it was
import fcntl  # noqa: E402

before = open(conc, "rb").read()
with open(conc, "rb") as held:
    fcntl.flock(held, fcntl.LOCK_EX)
    r = subprocess.run([BIN] + W + ["--resume", inp, ALL[0], "-o", conc], capture_output=True, timeout=600)
check(r.returncode == 2 and b"being written by another" in r.stderr and open(conc, "rb").read() == before,
      f"a JSONL whose lock another run holds: --resume refused, the file untouched (exit {r.returncode})")

# --- a crash's zero-filled end, and null rows from an earlier run
nz = os.path.join(work, "nz.jsonl")
missing = os.path.join(work, "no-such.png")
subprocess.run([BIN] + W + ["--on-error", "null", ALL[0], missing, "-o", nz], capture_output=True, timeout=600)
with open(nz, "ab") as f:
    f.write(b"\0" * 700)
r = subprocess.run([BIN] + W[:-5] + ["-b", "4", "--resume", "--on-error", "null", ALL[0], missing, ALL[1], "-o", nz],
                   capture_output=True, timeout=600)
rows, torn = read_rows(nz)
check(r.returncode == 1 and not torn and [x["path"] for x in rows] == [ALL[0], missing, ALL[1]] and
      b"null row" in r.stderr and b"\0" not in open(nz, "rb").read(),
      f"a zero-filled end is cut and the run resumed; the earlier run's null row makes it exit 1, saying so "
      f"(exit {r.returncode}, {len(rows)} rows: {r.stderr.decode(errors='replace').strip()[-160:]})")

# --- another spelling of the inputs matches no row: said
sp = os.path.join(work, "sp.jsonl")
subprocess.run([BIN] + W + [ALL[0], ALL[1], "-o", sp], capture_output=True, timeout=600)
other = os.path.join(os.path.dirname(ALL[0]), ".", os.path.basename(ALL[0]))
r = subprocess.run([BIN] + W[:-5] + ["-b", "4", "--resume", other, "-o", sp], capture_output=True, timeout=600)
check(r.returncode == 0 and b"none of the 2 rows" in r.stderr,
      f"--resume with inputs spelled otherwise: a warning that no row matched ({r.stderr.decode().strip()[-120:]})")

# --- session 30: rows of other weights or another --template are refused; an input changed since is named
# Another checkpoint of the same shape: a copy with every other value of each weight matrix negated (same dim,
# same grammar; cosine -0.22 to 0.26 to the real one's rows over the 101 test images and noise images tried).
import struct  # noqa: E402

other_w = os.path.join(work, "other_weights")
shutil.copytree(FIX, other_w)
st_path = os.path.join(other_w, "model.safetensors")
blob = bytearray(open(st_path, "rb").read())
hlen = struct.unpack("<Q", blob[:8])[0]
head = json.loads(blob[8:8 + hlen])
for key, t in head.items():
    if key != "__metadata__" and key.endswith("weight") and len(t["shape"]) >= 2:
        assert t["dtype"] == "F32"
        s0, s1 = t["data_offsets"]
        for i in range(8 + hlen + s0 + 3, 8 + hlen + s1, 8):
            blob[i] ^= 0x80
open(st_path, "wb").write(blob)
W_OTHER = ["--backend", "cpu", "--weights", other_w, "-q", "-b", "4", "-j", "2"]

mix = os.path.join(work, "mix.jsonl")
subprocess.run([BIN] + W + ALL[:12] + ["-o", mix], capture_output=True, timeout=600)
with open(mix, "ab") as f:
    f.write(b'{"path":"' + ALL[12].encode() + b'","embedding":[0.1,0.2')  # a torn last line too
before = open(mix, "rb").read()
r = subprocess.run([BIN] + W_OTHER + ["--resume"] + ALL[:20] + ["-o", mix], capture_output=True, timeout=600)
err = r.stderr.decode(errors="replace")
check(r.returncode == 2 and open(mix, "rb").read() == before and "not made by these weights" in err and
      "cosine" in err,
      f"--resume with other weights of the same dim: exit 2, the file untouched, its torn line too (exit "
      f"{r.returncode}: {err.strip()[-220:]})")
r = subprocess.run([BIN] + W[:-5] + ["-b", "4", "-v", "--resume"] + ALL[:20] + ["-o", mix], capture_output=True,
                   timeout=600)
rows, torn = read_rows(mix)
err = r.stderr.decode(errors="replace")
check(r.returncode == 0 and not torn and [x["path"] for x in rows] == ALL[:20] and
      "3 of 3 of the file's inputs embedded again agree" in err,
      f"--resume with the weights the file was written with: checked (3 of 3 agree) and finished, torn line cut "
      f"({len(rows)} rows; {[ln for ln in err.splitlines() if 'resume' in ln][:1]})")

# an input changed since its row was written: named, and the run goes on; its row stays
chg_dir = os.path.join(work, "chg")
os.makedirs(chg_dir)
chg = [os.path.join(chg_dir, f"{i}.ppm") for i in range(6)]
for i, pth in enumerate(chg):
    px = nrng.integers(0, 256, size=(40, 50, 3), dtype=np.uint8)
    open(pth, "wb").write(b"P6\n50 40\n255\n" + px.tobytes())
# the first input, then other pixels under its name: two images this tiny random model tells apart (cosine -0.36;
# its embeddings of unlike images are often above 0.97, so random ones would not do)
shutil.copy(os.path.join(IMAGES, "png_gray16.png"), chg[0])
chg_out = os.path.join(work, "chg.jsonl")
subprocess.run([BIN] + W + chg[:4] + ["-o", chg_out], capture_output=True, timeout=600)
first_row = open(chg_out, "rb").readline()
shutil.copy(os.path.join(IMAGES, "png_short_palette.png"), chg[0])
r = subprocess.run([BIN] + W[:-5] + ["-b", "4", "--resume"] + chg + ["-o", chg_out], capture_output=True, timeout=600)
rows, torn = read_rows(chg_out)
err = r.stderr.decode(errors="replace")
check(r.returncode == 0 and [x["path"] for x in rows] == chg and open(chg_out, "rb").readline() == first_row and
      "embeds differently now" in err and chg[0] in err,
      f"--resume after one input changed: a warning names it, its row stays, the run finishes ({len(rows)} rows; "
      f"{err.strip()[-200:]})")
# every input behind the probe rows gone: nothing to compare, said with -v, and the run goes on
gone_out = os.path.join(work, "gone.jsonl")
subprocess.run([BIN] + W + chg[1:3] + ["-o", gone_out], capture_output=True, timeout=600)
for pth in chg[1:3]:
    os.unlink(pth)
r = subprocess.run([BIN] + W_OTHER[:-5] + ["-b", "4", "-v", "--resume"] + chg[3:] + ["-o", gone_out],
                   capture_output=True, timeout=600)
rows, torn = read_rows(gone_out)
check(r.returncode == 0 and len(rows) == 5 and b"weights were not checked" in r.stderr,
      f"--resume whose probe rows' inputs are gone: not checked, said with -v, the run goes on (exit {r.returncode}, "
      f"{len(rows)} rows)")

fresh = os.path.join(work, "fresh.jsonl")
r = subprocess.run([BIN] + W[:-5] + ["-b", "4", "-v", "--resume", ALL[0], "-o", fresh], capture_output=True, timeout=600)
check(r.returncode == 0 and b"not checked" not in r.stderr and b"embedded again" not in r.stderr,
      "--resume -v on a new file: nothing to check, and nothing said about it")
# --labels: the scores in the file against this run's labels and --template
TXT = fixture("tinytext")
WL = ["--backend", "cpu", "--weights", TXT, "-q", "-b", "4", "-j", "2", "--labels", "cat,dog,car,tree", "--top-k", "2"]
lab_out = os.path.join(work, "lab.jsonl")
subprocess.run([BIN] + WL + ALL[:6] + ["-o", lab_out], capture_output=True, timeout=600)
before = open(lab_out, "rb").read()
refused = []
for tmpl in ["a photo of a {}.", "{}", "This is a photo of {}"]:
    r = subprocess.run([BIN] + WL + ["--template", tmpl, "--resume"] + ALL[:8] + ["-o", lab_out], capture_output=True,
                       timeout=600)
    refused.append(r.returncode == 2 and b"--template" in r.stderr and open(lab_out, "rb").read() == before)
check(all(refused), f"--resume --labels with another --template (3 of them, one only without its final period): "
      f"refused, the file untouched ({refused})")
r = subprocess.run([BIN] + WL + ["--template", "This is a photo of {}.", "--resume"] + ALL[:8] + ["-o", lab_out],
                   capture_output=True, timeout=600)
rows, torn = read_rows(lab_out)
check(r.returncode == 0 and [x["path"] for x in rows] == ALL[:8],
      f"--resume --labels with the --template the file was written with (the default, spelled out): finished "
      f"({len(rows)} rows, exit {r.returncode})")
done()
