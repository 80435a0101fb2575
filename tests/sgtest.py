"""tests/sgtest.py — shared pieces of the Python tests run by tests/run.sh: where things are (the binary, the
fixtures, the test images, a fresh scratch folder), a run on a pseudo-terminal, and the PASS/FAIL/SKIP reporting."""
import json
import os
import pty
import shutil
import subprocess
import sys

ROOT = os.environ.get("SG_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SG_BIN", os.path.join(ROOT, "siglip2-embed"))
BUILD = os.environ.get("SG_BUILD", os.path.join(ROOT, "build"))
TMP = os.environ.get("SG_TMP", "/tmp")
IMAGES = os.path.join(ROOT, "tests/images")


def fixture(name):
    """tests/fixtures/NAME (a checkpoint directory)."""
    return os.path.join(ROOT, "tests/fixtures", name)


def fresh_dir(name):
    """TMP/NAME, emptied and created: each test's scratch folder."""
    path = os.path.join(TMP, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def on_pty(argv):
    """Runs argv with stdout and stderr on one pseudo-terminal (as a user's shell does); returns its exit status
    and everything it drew."""
    m, s = pty.openpty()
    p = subprocess.Popen(argv, stdout=s, stderr=s, stdin=subprocess.DEVNULL)
    os.close(s)
    buf = b""
    while True:
        try:
            d = os.read(m, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not d:
            break
        buf += d
    os.close(m)
    return p.wait(), buf


def rows_on_terminal(buf, key):
    """JSON rows whose first key is key ("path", "text") found in what a terminal was sent: the text of each line
    after its last erase-line escape or carriage return. Returns (whole rows, broken rows)."""
    rows, broken = 0, 0
    for line in buf.split(b"\n"):
        seg = line.rstrip(b"\r").split(b"\x1b[K")[-1].split(b"\r")[-1]
        if b'{"' + key.encode() + b'"' in seg:
            try:
                json.loads(seg)
                rows += 1
            except ValueError:
                broken += 1
    return rows, broken


_failures = 0


def ok(what):
    print(f"PASS: {what}", flush=True)


def fail(what):
    global _failures
    _failures += 1
    print(f"FAIL: {what}", flush=True)


def skip(what):
    print(f"SKIP: {what}", flush=True)


def check(cond, what):
    (ok if cond else fail)(what)
    return cond


def done():
    sys.exit(1 if _failures else 0)
