#!/usr/bin/env python3
"""Reads the megakernel's task trace and says where a launch's time went along its critical path.

The trace: SG_SM90_TRACE=FILE on a Hopper run (mega_gpu.cu appends one CSV line per task a CTA ran, for every
launch outside graph capture; its columns in kernel/mega/mega_gpu.h, SG_MEGA_PROF_TRACE_CAP). For one launch (the
last in the file, or --launch N, or the last of --batch B) this prints

  1. per task kind: tasks, and medians of the task's run (consumers' start -> end), the producer's wait on its
     inputs (came -> ready) and the wait for the consumers (handed over -> start);
  2. the critical path: from the task done last, back through the task it waited for (the latest done task of
     the kind it depends on, done before its inputs were seen complete), and per kind along that path the
     hand-offs (predecessor done -> inputs seen complete; "late" is the part where the producer had not yet come
     to the task), the queue (inputs complete -> consumers start), the runs and the stores, summed;
  3. the path's GEMM runs split at their K loop's start and end, the attention's at its Q, K, V in shared memory and
     its outputs written (per task).

Stamps are %globaltimer (ns, one clock for all SMs); the consumers' stamps are warpgroup 0's. A GEMM's "end" is its
tile handed to the storer thread, "released" its counter signalled by warpgroup 0's storer (its stores complete);
a task is "done" when released (GEMMs) or ended (the rest, which publish their outputs themselves). Two phase stamps
split the path's GEMM and attention runs (3.). Usage:
  python3 scripts/mega_trace.py TRACE.csv [--launch N | --batch B] [--layer L]
"""
import argparse
import collections
import csv
import statistics
import sys

# The kind a task waits for (the last of its inputs to complete, in a launch's dependency order; mega_plan.h).
PRED = {"patch": "prep", "ln1": "fc2", "qkv": "ln1", "att": "qkv", "out": "att", "ln2": "out", "fc1": "ln2",
        "fc2": "fc1", "postln": "fc2", "hkv": "postln", "pool": "hkv", "hout": "pool", "hln": "hout",
        "hfc1": "hln", "hfc2": "hfc1"}
ORDER = ["prep", "patch", "ln1", "qkv", "att", "out", "ln2", "fc1", "fc2", "postln", "hkv", "pool", "hout", "hln",
         "hfc1", "hfc2"]


def load(path, launch=None, batch=None):
    rows = collections.defaultdict(list)
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["kind"] == "end":
                continue
            rows[int(r["launch"])].append(r)
    if not rows:
        sys.exit(f"mega_trace: no tasks in {path}")
    if launch is None:
        ids = [i for i in rows if batch is None or int(rows[i][0]["batch"]) == batch]
        if not ids:
            sys.exit(f"mega_trace: no launch of batch {batch} in {path}")
        launch = max(ids)
    if launch not in rows:
        sys.exit(f"mega_trace: no launch {launch} in {path}")
    tasks = []
    for r in rows[launch]:
        t = {k: int(r[k]) for k in ("cta", "layer", "a", "b", "came", "ready", "start", "end", "handed", "released",
                                    "mark1", "mark2")}
        t["done"] = t["released"] if t["released"] >= 0 else t["end"]  # its output complete and published
        t["kind"] = r["kind"]
        tasks.append(t)
    meta = rows[launch][0]
    return launch, int(meta["batch"]), int(meta["shape"]), float(meta["ms"]), tasks


def us(ns):
    return ns / 1000.0


def per_kind(tasks):
    by = collections.defaultdict(list)
    for t in tasks:
        if t["start"] >= 0 and t["end"] >= 0:
            by[t["kind"]].append(t)
    out = []
    for k in ORDER:
        if k in by:
            v = by[k]
            out.append((k, len(v), us(statistics.median(t["end"] - t["start"] for t in v)),
                        us(statistics.median(t["done"] - t["end"] for t in v)),
                        us(statistics.median(t["ready"] - t["came"] for t in v)),
                        us(statistics.median(t["start"] - t["handed"] for t in v))))
    return out


def pred(t):
    """The kind (and layer, None: any) of the task t waited for last."""
    k, l = t["kind"], t["layer"]
    if k == "ln1":
        return ("patch", None) if l == 0 else ("fc2", l - 1)
    if k in ("qkv", "att", "out", "ln2", "fc1", "fc2"):
        return PRED[k], l
    return PRED.get(k), None


def critical_path(tasks):
    """The chain of tasks that ends last, each step back to the task it most likely waited for."""
    done = [t for t in tasks if t["start"] >= 0 and t["end"] >= 0]
    by = collections.defaultdict(list)
    for t in done:
        by[t["kind"]].append(t)
    path = [max(done, key=lambda t: t["done"])]
    while True:
        t = path[-1]
        pk, pl = pred(t)
        cands = [u for u in by.get(pk, []) if u["done"] <= t["ready"] and (pl is None or u["layer"] == pl)]
        if not cands:
            break
        path.append(max(cands, key=lambda u: u["done"]))
    path.reverse()
    steps = []
    for prev, t in zip([None] + path[:-1], path):
        hand = t["ready"] - prev["done"] if prev else 0
        late = max(0, t["came"] - prev["done"]) if prev else 0
        steps.append((t, hand, min(late, hand), t["start"] - t["ready"], t["end"] - t["start"], t["done"] - t["end"]))
    return steps


def print_phases(steps):
    """The phase stamps' split of the path's GEMM and attention runs (mark1, mark2: mega_gpu.h)."""
    ph = collections.OrderedDict()
    for t, *_ in steps:
        if t["mark1"] >= 0 and t["mark2"] >= 0:
            g = ph.setdefault(t["kind"], [0, 0, 0, 0])
            g[0] += 1
            g[1] += t["mark1"] - t["start"]
            g[2] += t["mark2"] - t["mark1"]
            g[3] += t["end"] - t["mark2"]
    if not ph:
        return
    print("\nthe path's runs by phase (us per task): start -> mark 1 (a GEMM's K loop starts; the attention's Q, K, V in "
          "shared memory), -> mark 2 (the K loop ends; the attention's outputs written), -> end")
    for k in ORDER:
        if k in ph:
            n, a, b, c = ph[k]
            print(f"  {k:7s} {n:4d}  {us(a) / n:6.2f} {us(b) / n:6.2f} {us(c) / n:6.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--launch", type=int)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--layer", type=int, help="also list the critical path's tasks of this layer one by one")
    a = ap.parse_args()
    launch, batch, shape, ms, tasks = load(a.trace, a.launch, a.batch)
    stamps = sorted({t[k] for t in tasks for k in ("came", "ready", "start", "end", "handed") if t[k] >= 0})
    step = min((y - x for x, y in zip(stamps, stamps[1:])), default=0)
    span = max(t["end"] for t in tasks) - min(t["came"] for t in tasks if t["came"] >= 0)
    print(f"launch {launch}: batch {batch}, task shape {shape}, {len(tasks)} tasks, {ms:.3f} ms (events), "
          f"{us(span):.1f} us from the first task's producer to the last task's end; "
          f"finest step between stamps {step} ns")
    print("\nper kind: tasks, medians (us) of the run (start -> end), the store (end -> released; GEMMs), the "
          "inputs' wait (came -> ready), the wait for the consumers (handed over -> start)")
    for k, n, run, store, dep, q in per_kind(tasks):
        print(f"  {k:7s} {n:7d} {run:8.2f} {store:8.2f} {dep:8.2f} {q:8.2f}")
    steps = critical_path(tasks)
    agg = collections.OrderedDict((k, [0, 0, 0, 0, 0, 0]) for k in ORDER)
    for t, *v in steps:
        g = agg[t["kind"]]
        g[0] += 1
        for j, x in enumerate(v):
            g[1 + j] += x
    first = steps[0][0]
    total = steps[-1][0]["done"] - first["start"]
    print(f"\ncritical path: {len(steps)} tasks, {us(total):.1f} us from its first task's start to the last one done "
          f"(us summed per kind: hand-offs (of them the producer late), queue, runs, stores; per task)")
    tot = [0, 0, 0, 0, 0]
    for k, (n, hand, late, queue, run, store) in agg.items():
        if n:
            print(f"  {k:7s} {n:4d}  hand-off {us(hand):7.1f} (late {us(late):5.1f})  queue {us(queue):6.1f}  "
                  f"run {us(run):7.1f}  store {us(store):6.1f}   per task {us(hand) / n:5.2f} {us(queue) / n:5.2f} "
                  f"{us(run) / n:5.2f} {us(store) / n:5.2f}")
            tot = [x + y for x, y in zip(tot, (hand, late, queue, run, store))]
    print(f"  {'all':7s} {len(steps):4d}  hand-off {us(tot[0]):7.1f} (late {us(tot[1]):5.1f})  queue "
          f"{us(tot[2]):6.1f}  run {us(tot[3]):7.1f}  store {us(tot[4]):6.1f}")
    print_phases(steps)
    if a.layer is not None:
        print(f"\nlayer {a.layer}'s tasks on the critical path (us from the launch's first stamp): kind, row tile, "
              "column tile / head, cta, came, ready, start, end, done")
        for t, *_ in steps:
            if t["layer"] == a.layer and t["kind"] in ("ln1", "qkv", "att", "out", "ln2", "fc1", "fc2"):
                print(f"  {t['kind']:5s} {t['a']:4d} {t['b']:4d} {t['cta']:4d} {us(t['came']):9.2f} "
                      f"{us(t['ready']):9.2f} {us(t['start']):9.2f} {us(t['end']):9.2f} {us(t['done']):9.2f}")


if __name__ == "__main__":
    main()
