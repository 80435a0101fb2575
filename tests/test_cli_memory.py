"""tests/test_cli_memory.py — the decode workers' memory budget (--decode-memory), end to end.

A folder of large images on many workers held one decoded image per worker at once (a few hundred MB each at
100 megapixels, tens of GB on a big machine); the workers now share a budget (preprocess/budget.c) and an image
waits for room. Checked here, on the CPU backend with the tiny196 fixture and PNGs written by this test (RGBA,
13.5 megapixels: ~162 MB reserved each; every buffer of the decode is larger than glibc's largest mmap threshold,
32 MB, so a freed one leaves the process and its peak memory shows what was held at once. Smaller images' buffers
may stay with the allocator's per-thread arenas after they are freed, and the peaks would not differ):
  - the rows are the same bytes with a budget that lets one image in at a time as with no pressure at all;
  - under that budget images waited, the -v line says so, and the process's peak memory is lower;
  - the default budget is half of what the process may still use, and -v prints it; --info says it;
  - --decode-memory 0 and --decode-memory abc are refused with exit 2, naming the option.
Binary: $SG_BIN.
"""
import os
import re
import struct
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgtest import BIN, check, done, fixture, fresh_dir  # noqa: E402

import numpy as np  # noqa: E402

W = ["--backend", "cpu", "--weights", fixture("tiny196")]
work = fresh_dir("cli_memory")


def write_png(path, rgba):
    """An 8-bit RGBA PNG, no filter, zlib level 1 (no Pillow in CI)."""
    h, w, _ = rgba.shape
    raw = b"".join(b"\0" + rgba[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))


def run(args):
    return subprocess.run([BIN] + W + args, capture_output=True, timeout=600)


rng = np.random.default_rng(7)
files = []
for i in range(8):
    small = rng.integers(0, 256, (20, 30, 4), dtype=np.uint8)
    img = np.repeat(np.repeat(small, 150, axis=0), 150, axis=1)  # 3000 x 4500, compresses well
    img[..., 3] = 255 - i
    p = os.path.join(work, f"big{i}.png")
    write_png(p, img)
    files.append(p)


def embed(budget, name):
    out = os.path.join(work, name)
    r = run(["-j", "4", "-v", "--decode-memory", budget, "-o", out] + files)
    err = r.stderr.decode(errors="replace")
    line = re.search(r"decode memory: budget ([\d.]+) MiB .*?most reserved at once ([\d.]+) MiB; (\d+) images? "
                     r"waited", err)
    peak = re.search(r"peak memory (\d+) KiB", err)
    return r, (open(out, "rb").read() if r.returncode == 0 else b""), line, int(peak.group(1)) if peak else 0, err


r_free, rows_free, line_free, peak_free, err_free = embed("64G", "free.npy")
r_one, rows_one, line_one, peak_one, err_one = embed("200M", "one.npy")
both_ok = r_free.returncode == 0 and r_one.returncode == 0 and len(rows_free) > 8 * 64 * 4
check(both_ok, f"8 PNGs of 13.5 megapixels embed with a 64 GB and a 200 MB budget (exit {r_free.returncode} / "
      f"{r_one.returncode}{'' if both_ok else ': ' + repr(err_one[-300:])})")
check(rows_free == rows_one, "the rows are the same bytes under both budgets")
check(line_free is not None and line_free.group(3) == "0" and float(line_free.group(1)) == 64 * 1024,
      f"-v: the 64 GB budget is printed and nothing waited ({line_free.group(0) if line_free else err_free[-300:]!r})")
check(line_one is not None and float(line_one.group(1)) == 200 and int(line_one.group(3)) > 0,
      f"-v: under 200 MB images waited for room ({line_one.group(0) if line_one else err_one[-300:]!r})")
check(0 < peak_one < peak_free,
      f"the process's peak memory is lower under the 200 MB budget ({peak_one} against {peak_free} KiB)")

r = run(["-v", files[0], "-o", os.path.join(work, "default.npy")])
m = re.search(r"decode memory: budget ([\d.]+) MiB", r.stderr.decode(errors="replace"))
avail = 0
try:
    with open("/proc/meminfo") as f:
        avail = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))
except (OSError, StopIteration):
    pass
budget = float(m.group(1)) * 1048576 if m else 0
check(r.returncode == 0 and m is not None and budget >= 512 * 1048576 and (not avail or budget <= max(avail * 0.55, 512 * 1048576)),
      f"the default budget is at least 512 MiB and at most about half of MemAvailable ({budget / 1048576:.0f} MiB "
      f"of {avail / 1048576:.0f} MiB available)")

r = run(["--info", "--decode-memory", "2G"])
m = re.search(r"decode memory: the decode workers may hold (\d+) MiB at once \(--decode-memory", r.stdout.decode())
check(r.returncode == 0 and m is not None and m.group(1) == "2048",
      f"--info says what the decode workers may hold ({m.group(0) if m else r.stdout.decode()[-200:]!r})")

for bad in ["0", "abc", "-5"]:
    r = run(["--decode-memory", bad, files[0]])
    check(r.returncode == 2 and b"--decode-memory" in r.stderr,
          f"--decode-memory {bad} is refused with exit 2, naming the option (exit {r.returncode})")

done()
