#!/usr/bin/env python3
"""scripts/energy_trace.py: energy of a GPU command's timed runs, from the driver's energy counter.

    python3 scripts/energy_trace.py TRACE.csv -- COMMAND [ARGS...]

Runs COMMAND (its output passes through) while a thread samples NVML every 5 ms on GPU 0: the board's total energy
counter (mJ since the driver loaded), the power reading (W) and the SM clock (MHz), written to TRACE.csv. A timed
run announces itself on stdout as

    WINDOW NAME T0 T1 LAUNCHES FLOP_PER_LAUNCH

(CLOCK_REALTIME seconds around its launches; `test_sm90_lab --power` prints them). For each window this prints the
energy the board used in it (the counter interpolated at T0 and T1), joules per launch, the mean power, the median SM
clock and TFLOP per joule, and a table last. Why energy: at 1,024 images the megakernel runs at the card's power limit,
so what a change saves in joules per image is what the clock gives back (docs/perf-notes.md, session 16).
NVML comes from the driver (libnvidia-ml.so.1, through ctypes); nothing to install. Without it: exit 2, COMMAND not
run. `energy_trace.py --selftest` checks the window arithmetic on a synthetic trace (no GPU needed; make test).
"""
import bisect
import ctypes
import statistics
import subprocess
import sys
import threading
import time


def nvml():
    lib = ctypes.CDLL("libnvidia-ml.so.1")
    if lib.nvmlInit_v2() != 0:
        raise RuntimeError("nvmlInit_v2 failed")
    h = ctypes.c_void_p()
    if lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) != 0:
        raise RuntimeError("no GPU 0")
    return lib, h


def sample(lib, h):
    e, p, c = ctypes.c_ulonglong(), ctypes.c_uint(), ctypes.c_uint()
    lib.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(e))
    lib.nvmlDeviceGetPowerUsage(h, ctypes.byref(p))
    lib.nvmlDeviceGetClockInfo(h, 1, ctypes.byref(c))  # NVML_CLOCK_SM
    return time.time(), e.value / 1000.0, p.value / 1000.0, c.value


def energy_at(rows, ts, t):
    """The counter's joules at time t, interpolated between the two samples around it."""
    i = bisect.bisect_left(ts, t)
    if i <= 0 or i >= len(ts):
        raise ValueError("window outside the trace")
    (t0, e0), (t1, e1) = (ts[i - 1], rows[i - 1][1]), (ts[i], rows[i][1])
    return e0 + (e1 - e0) * (t - t0) / (t1 - t0)


def table(rows, windows):
    """Markdown rows, one per window: seconds, joules, joules per launch, mean W, median SM MHz, TFLOP per joule."""
    ts = [r[0] for r in rows]
    out = ["| window | s | J | J per launch | mean W | median SM MHz | TFLOP/J |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, t0, t1, n, flop in windows:
        try:
            joules = energy_at(rows, ts, t1) - energy_at(rows, ts, t0)
        except ValueError:
            out.append(f"| {name} | window outside the trace |")
            continue
        if t1 <= t0 or n < 1 or joules <= 0:  # a marker line, not a timed run: nothing to divide by
            out.append(f"| {name} | empty window ({t1 - t0:.3f} s, {n} launches) |")
            continue
        inside = [r for r in rows if t0 <= r[0] <= t1]
        mhz = statistics.median(r[3] for r in inside) if inside else 0
        out.append(f"| {name} | {t1 - t0:.3f} | {joules:.1f} | {joules / n * 1e3:.2f} mJ | {joules / (t1 - t0):.0f} | "
                   f"{mhz:.0f} | {flop * n / joules / 1e12:.3f} |")
    return out


def selftest():
    """A synthetic trace (500 W from t = 10 s, 1,500 MHz, a sample every 7 ms): a window [10.5, 11.75] with 100
    launches of 1e12 FLOP must read 625 J, 6.25 J a launch, 500 W, 0.160 TFLOP/J; one outside the trace must say so,
    and so must an empty one (a marker's T0 = T1), rather than divide by zero."""
    rows = [(10 + 0.007 * i, 1000 + 500 * 0.007 * i, 500.0, 1500) for i in range(400)]
    got = table(rows, [("w", 10.5, 11.75, 100, 1e12), ("late", 20.0, 21.0, 1, 1.0), ("mark", 11.0, 11.0, 1, 0.0)])
    want = ["| w | 1.250 | 625.0 | 6250.00 mJ | 500 | 1500 | 0.160 |", "| late | window outside the trace |",
            "| mark | empty window (0.000 s, 1 launches) |"]
    ok = got[2:] == want
    print(("PASS" if ok else "FAIL") + ": energy_trace.py's windows on a synthetic 500 W trace" +
          ("" if ok else f": got {got[2:]}, want {want}"))
    return 0 if ok else 1


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "--selftest":
        sys.exit(selftest())
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit(__doc__)
    trace_path, cmd = sys.argv[1], sys.argv[3:]
    try:
        lib, h = nvml()
    except (OSError, RuntimeError) as e:
        print(f"energy_trace: no NVML here ({e}); nothing run", file=sys.stderr)
        sys.exit(2)
    rows, stop = [], threading.Event()

    def sampler():
        while not stop.is_set():
            rows.append(sample(lib, h))
            time.sleep(0.005)

    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    windows = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        sys.stdout.write(line)
        if line.startswith("WINDOW "):
            f = line.split()
            windows.append((f[1], float(f[2]), float(f[3]), int(f[4]), float(f[5])))
    rc = proc.wait()
    time.sleep(0.1)
    stop.set()
    th.join()
    with open(trace_path, "w") as out:
        out.write("time_s,energy_j,power_w,sm_mhz\n")
        for t, e, p, c in rows:
            out.write(f"{t:.6f},{e:.3f},{p:.1f},{c}\n")
    print()
    print("\n".join(table(rows, windows)))
    sys.exit(rc)


if __name__ == "__main__":
    main()
