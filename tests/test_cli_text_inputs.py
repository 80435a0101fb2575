"""tests/test_cli_text_inputs.py — what a text run (and --labels) makes of awkward lists and outputs (session 28 audit).

 1  --texts-from, --labels or --labels-from given twice: exit 2 (the second silently replaced the first)
 2  a UTF-8 BOM before a --texts-from / --labels-from file's first line is not part of the first query / label
 3  a query holding a NUL: it fails, with no row even under --on-error null (its row named a shorter query);
    a --labels-from line holding a NUL: exit 2 (the label was cut short without a word)
 4  a query holding a CR, into a binary format: FILE.texts cannot hold it (read back as text, a CR ends a line), so
    it fails with no row, and the other rows and names stay aligned
 5  an image run's npy replaced by a text run's (or the other way round) takes the old kind's list with it
 6  --on-error fail: the summary does not depend on -b
 7  a --texts-from / --files-from / --labels-from list that is the -o file itself: exit 2, the file untouched
 8  a text run into a JSONL that another run holds locked: exit 2, the file untouched (as for image runs)
CPU backend, tests/fixtures/tinytext. Binary: $SG_BIN (run it against an older build to see the failures).
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgtest import BIN, check, done, fixture, fresh_dir  # noqa: E402

import numpy as np  # noqa: E402

FIX = fixture("tinytext")
W = ["--backend", "cpu", "--weights", FIX, "-q"]
work = fresh_dir("cli_text_inputs")
ZS0 = os.path.join(FIX, "zs0.png")


def run(args, quiet=True, **kw):
    return subprocess.run([BIN] + (W if quiet else W[:-1]) + args, capture_output=True, timeout=600, **kw)


def out(name):
    return os.path.join(work, name)


def put(name, data):
    with open(out(name), "wb") as f:
        f.write(data)
    return out(name)


def rows(stdout):
    return [json.loads(ln) for ln in stdout.decode().splitlines() if ln]


# --- 1. one list each
a = put("a.txt", b"one\ntwo\n")
b = put("b.txt", b"three\n")
for args, what in [(["--texts-from", a, "--texts-from", b, "-f", "jsonl"], "--texts-from"),
                   (["--labels", "dog", "--labels", "cat", ZS0], "--labels"),
                   (["--labels-from", a, "--labels-from", b, ZS0], "--labels-from")]:
    r = run(args)
    check(r.returncode == 2 and b"given twice" in r.stderr and not r.stdout,
          f"1: {what} given twice: exit 2, saying so, nothing written (exit {r.returncode})")

# --- 2. a BOM
bom = put("bom.txt", b"\xef\xbb\xbfhello\nhello\n")
r = run(["--texts-from", bom, "-f", "jsonl"])
q = rows(r.stdout)
check(r.returncode == 0 and len(q) == 2 and q[0] == q[1] and q[0]["text"] == "hello",
      f"2: a BOM before the first query is not part of it ({[x['text'] for x in q]})")
lab = put("lab.txt", b"\xef\xbb\xbfdog\ncat\n")
r1 = run(["--labels-from", lab, "-f", "jsonl", ZS0])
r2 = run(["--labels", "dog,cat", "-f", "jsonl", ZS0])
check(r1.returncode == 0 and r1.stdout == r2.stdout and r1.stdout,
      "2: a BOM before the first label of --labels-from: the same row as --labels dog,cat")

# --- 3. NUL
nul = put("nul.txt", b"a\0b\nc\n")
r = run(["--texts-from", nul, "-f", "jsonl", "--on-error", "null"])
q = rows(r.stdout)
check(r.returncode == 1 and [x["text"] for x in q] == ["c"] and b"NUL" in r.stderr,
      f"3: a query holding a NUL fails with no row under --on-error null ({[x['text'] for x in q]}, exit {r.returncode})")
labnul = put("labnul.txt", b"x\0y\ncat\n")
r = run(["--labels-from", labnul, "-f", "jsonl", ZS0])
check(r.returncode == 2 and b"NUL" in r.stderr and not r.stdout,
      f"3: a --labels-from line holding a NUL: exit 2 (exit {r.returncode})")

# --- 4. CR into a binary format
npy = out("cr.npy")
r = run(["--text", "a\rb", "--text", "c\r", "--text", "d", "-o", npy, "--on-error", "null"])
names = open(npy + ".texts", "rb").read().split(b"\n")[:-1] if os.path.exists(npy + ".texts") else None
n = np.load(npy).shape[0] if os.path.exists(npy) else None
check(r.returncode == 1 and names == [b"d"] and n == 1 and r.stderr.count(b"line break") == 2,
      f"4: queries holding a CR fail with no row in npy; rows and names aligned ({n} rows, {names})")
r = run(["--text", "a\rb", "-f", "jsonl"])
check(r.returncode == 0 and [x["text"] for x in rows(r.stdout)] == ["a\rb"], "4: ... and are embedded in JSONL")

# --- 5. the other kind's list
img = out("img.npy")
r1 = run([ZS0, "-o", img])
r2 = run(["--text", "a dog", "-o", img])
check(r1.returncode == 0 and r2.returncode == 0 and os.path.exists(img + ".texts") and not os.path.exists(img + ".paths"),
      f"5: a text run over an image run's npy takes its .paths along ({sorted(os.listdir(work))})")
r3 = run([ZS0, "-o", img])
check(r3.returncode == 0 and os.path.exists(img + ".paths") and not os.path.exists(img + ".texts"),
      "5: ... and an image run over a text run's takes its .texts")

# --- 6. --on-error fail's summary
f6 = put("f6.txt", b"a\nb\ncaf\xe9\nd\ne\nf\n")
msgs = []
for bsz in ("1", "256"):
    r = run(["--texts-from", f6, "--on-error", "fail", "-f", "jsonl", "-b", bsz], quiet=False)
    msgs.append([ln for ln in r.stderr.decode(errors="replace").splitlines() if "stopped" in ln or "failed" in ln])
check(msgs[0] == msgs[1] and msgs[0], f"6: --on-error fail says the same at -b 1 and -b 256 ({msgs})")

# --- 7. a list that is the output
lst = put("s.txt", b"".join(b"q %d\n" % i for i in range(40)))
jl = out("re.jsonl")
run(["--texts-from", lst, "-o", jl])
before = open(jl, "rb").read()
r = run(["--texts-from", jl, "-o", jl, "-b", "7"])
check(r.returncode == 2 and open(jl, "rb").read() == before and b"-o file itself" in r.stderr,
      f"7: --texts-from naming the -o file: exit 2, the file untouched (exit {r.returncode})")
plist = put("p.jsonl.list", ZS0.encode() + b"\n")
pj = out("p.jsonl")
run(["--files-from", plist, "-o", pj])
os.replace(plist, pj + ".tmp-list")  # the list and the output: one file, by a hard link
os.link(pj, plist)
before = open(pj, "rb").read()
r = run(["--files-from", plist, "-o", pj])
check(r.returncode == 2 and open(pj, "rb").read() == before, f"7: --files-from naming the -o file (a hard link): exit 2")
# --- 8. a JSONL another run holds
import fcntl  # noqa: E402

tj = out("t.jsonl")
run(["--text", "a", "-o", tj])
before = open(tj, "rb").read()
with open(tj, "rb") as held:
    fcntl.flock(held, fcntl.LOCK_EX)
    r = run(["--text", "b", "-o", tj])
check(r.returncode == 2 and b"being written by another" in r.stderr and open(tj, "rb").read() == before,
      f"8: a text run into a JSONL another run holds: exit 2, the file untouched (exit {r.returncode})")
done()
