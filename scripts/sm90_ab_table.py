#!/usr/bin/env python3
"""scripts/sm90_ab_table.py — the table of scripts/sm90-ab.sh: images/s per batch size of each labelled graph-replay
run (base-1, new-1, base-2, new-2, cuda), and new / base from the two rounds together (the mean of each version's
two rates, so a clock drift between rounds weighs on both). Input: the JSON lines of tests/tools/sg_gpu_graph_bench
with the backend field relabelled."""
import json
import sys


def main(path):
    runs, order = {}, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            lab = r["backend"]
            if lab not in order:
                order.append(lab)
            runs.setdefault(lab, {})[r["batch"]] = r
    batches = sorted({b for v in runs.values() for b in v})
    head = f"{'batch':>6} " + " ".join(f"{lab:>11}" for lab in order) + f" {'new/base':>9}"
    print("images/s (graph replays; batch 1: latency in ms)")
    print(head)
    for b in batches:
        cells = []
        for lab in order:
            r = runs[lab].get(b)
            cells.append(f"{'':>11}" if r is None else
                         f"{r['latency_ms']:>9.3f}ms" if b == 1 else f"{r['img_s']:>11,.0f}")
        def mean(prefix):
            v = [runs[lab][b]["img_s"] for lab in order if lab.startswith(prefix) and b in runs[lab]]
            return sum(v) / len(v) if v else None
        nb, nn = mean("base"), mean("new")
        ratio = f"{nn / nb:>8.3f}x" if nb and nn else f"{'':>9}"
        print(f"{b:>6} " + " ".join(cells) + f" {ratio}")


if __name__ == "__main__":
    main(sys.argv[1])
