"""tests/test_cli_signals.py — an output survives what happens around the run: signals, other runs, a full disk.

 1  -o x.json over an earlier output of ours: a run killed part-way (SIGTERM, SIGKILL) leaves the earlier file as it
    was (JSON is written as a temporary and renamed, as the binary formats are: it cannot be resumed); a SIGKILL's
    temporary is removed by the next run
 2  a binary run started with SIGHUP ignored (nohup, a script's background job) keeps ignoring it and finishes
 3  a temporary pair whose PID looks dead but which a process holds flock()ed (a live run in another PID namespace
    or on another host) is left alone by the next run's cleanup, and removed once unlocked
 4  --dump-preprocessed on a full disk: the reason is said, and no torn dump blocks the next run (needs root for a
    small tmpfs; skipped otherwise)
CPU backend, tiny196 fixture (D = 64). Binary: $SG_BIN (run it against an older build to see the failures).
"""
import fcntl
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgtest import BIN, IMAGES, check, done, fixture, fresh_dir, skip  # noqa: E402

FIX = fixture("tiny196")
W = ["--backend", "cpu", "--weights", FIX, "-q", "-j1", "-b4"]
work = fresh_dir("cli_signals")
big = os.path.join(work, "big")
os.makedirs(big)
imgs = sorted(n for n in os.listdir(IMAGES) if n.endswith((".png", ".jpg")))
for i in range(12):
    for n in imgs:
        shutil.copy(os.path.join(IMAGES, n), os.path.join(big, f"{i:02d}-{n}"))


def out(name):
    return os.path.join(work, name)


def run(args, **kw):
    return subprocess.run([BIN] + W + args, capture_output=True, timeout=600, **kw)


def start(args, **kw):
    return subprocess.Popen([BIN] + W + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


def wait_for_rows(p, path, timeout=60):
    """Waits until the run p has written a temporary beside path (it is embedding), or has ended."""
    t0 = time.time()
    while time.time() - t0 < timeout and p.poll() is None:
        if glob.glob(path + ".tmp.*") and any(os.path.getsize(f) > 4096 for f in glob.glob(path + ".tmp.*")):
            return True
        time.sleep(0.02)
    return False


# --- 1. -o x.json killed part-way: the earlier file stays whole
js = out("o.json")
r = run([big, "-o", js])
before = open(js, "rb").read()
for sig in (signal.SIGTERM, signal.SIGKILL):
    p = start([big, "-o", js])
    mid = wait_for_rows(p, js)
    if not mid:  # a machine fast enough to finish before the signal: nothing to interrupt
        p.wait()
        skip(f"1: the run ended before {signal.Signals(sig).name} could interrupt it")
        continue
    p.send_signal(sig)
    p.wait()
    left = sorted(os.path.basename(f) for f in glob.glob(js + ".tmp.*"))
    check(r.returncode == 0 and open(js, "rb").read() == before and (sig == signal.SIGKILL or not left),
          f"1: -o x.json killed by {signal.Signals(sig).name} part-way: the earlier file is unchanged "
          f"(temporaries left: {left})")
r = run([IMAGES + "/png_rgb.png", "-o", js])
check(r.returncode == 0 and not glob.glob(js + ".tmp.*"),
      f"1: the next run removes the killed run's temporary ({sorted(glob.glob(js + '.tmp.*'))})")

# --- 2. nohup: SIGHUP ignored at the start stays ignored
npy = out("x.npy")
p = start([big, "-o", npy], preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
mid = wait_for_rows(p, npy)
if mid:
    p.send_signal(signal.SIGHUP)
rc = p.wait()
if not mid:
    skip("2: the run ended before SIGHUP could reach it")
else:
    check(rc == 0 and os.path.exists(npy) and os.path.exists(npy + ".paths"),
          f"2: a binary run started with SIGHUP ignored finishes after a SIGHUP (exit {rc})")

# --- 3. a locked temporary pair is a live run's, whatever its PID looks like from here
npy = out("y.npy")
run([IMAGES + "/png_rgb.png", IMAGES + "/jpeg_444.jpg", "-o", npy])
dead = subprocess.Popen(["true"])
dead.wait()
pid = dead.pid  # no longer running (a PID this soon reused would only make the check below skip the pair too)
lk = out("l.npy")
shutil.copy(npy, f"{lk}.tmp.{pid}")
shutil.copy(npy + ".paths", f"{lk}.paths.tmp.{pid}")
fd = os.open(f"{lk}.tmp.{pid}", os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
r = run([IMAGES + "/png_rgb.png", "-o", lk])
kept = os.path.exists(f"{lk}.tmp.{pid}") and os.path.exists(f"{lk}.paths.tmp.{pid}")
os.close(fd)  # the "live run" ends without renaming: now its pair is a dead run's
r2 = run([IMAGES + "/png_rgb.png", "-o", lk])
gone = not os.path.exists(f"{lk}.tmp.{pid}") and not os.path.exists(f"{lk}.paths.tmp.{pid}")
check(r.returncode == 0 and kept and r2.returncode == 0 and gone,
      f"3: a flock()ed temporary pair with a dead-looking PID is left alone (kept: {kept}), removed once unlocked "
      f"(gone: {gone})")

# --- 4. --dump-preprocessed on a full disk
small = out("small")
os.makedirs(small)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", small], capture_output=True).returncode != 0:
    skip("4: --dump-preprocessed on a full disk needs a small tmpfs (root)")
else:
    try:
        px = os.path.join(small, "px")
        good = out("good")  # the images that decode: tests/images but its refused/ folder
        os.makedirs(good)
        for n in os.listdir(IMAGES):
            if os.path.isfile(os.path.join(IMAGES, n)) and not n.endswith((".txt", ".md")):
                shutil.copy(os.path.join(IMAGES, n), good)
        r = run(["--dump-preprocessed", px, good, "-o", out("d.jsonl")])
        said = b"No space left on device" in r.stderr
        subprocess.run(["mount", "-o", "remount,size=64m", small], check=True)
        r2 = run(["--dump-preprocessed", px, good, "-o", out("d.jsonl")])
        check(r.returncode == 1 and said and r2.returncode == 0,
              f"4: a full disk under --dump-preprocessed says why (said: {said}), and the rerun with space writes "
              f"every dump (exit {r2.returncode}: {r2.stderr[-200:]!r})")
    finally:
        subprocess.run(["umount", small], capture_output=True)
done()
