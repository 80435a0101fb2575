#!/usr/bin/env python3
"""scripts/gpu_report.py — gpu-bench.sh's table: our backends beside HF, from the JSON lines the steps wrote.

  python3 scripts/gpu_report.py WORKDIR OUT.json

Reads WORKDIR/hf_bench.jsonl, ours.jsonl, ours_graph.jsonl, sustained.jsonl, e2e_hf.json, e2e_ours.jsonl,
e2e_accuracy.txt; prints a Markdown table (images/s, latency, ratio to HF sdpa bf16 at the same batch and to
torch.compile at 256, the sustained rates beside the short runs' and the end-to-end rates) and
writes everything to OUT.json. Targets from the issues are printed beside the figures they apply to, and issue 12's
measurable targets (1, 3, 4 and the cosine gates) are judged on this run's own figures, met or not met, in a table of
their own (issue12_targets).
"""
import json
import os
import re
import sys

FLOP_IMG = 35.42e9  # baselines.md

# Issue 12's measurable targets (graph replays, pixels on the GPU, as the issue's own table; the API figures, what a
# caller of the library gets, are shown beside them).
T1 = {1024: 16000, 256: 15000}  # bf16 sm90 images/s
T1_VS_CUDA = 1.4
T3_MS = 0.250                   # bf16 sm90 batch-1 latency
T4_VS_BF16 = 1.15               # sm90:fp8 over sm90 at 1,024


def lines(path):
    if not os.path.exists(path):
        return []
    out = []
    for l in open(path):
        l = l.strip()
        if l.startswith("{"):
            try:
                out.append(json.loads(l))
            except json.JSONDecodeError:
                pass
    return out


def by_impl(rows):
    """{(implementation, batch): row} for HF rows ("impl") and ours ("backend", without "-graph")."""
    return {(r.get("impl") or r.get("backend", "").replace("-graph", ""), r["batch"]): r for r in rows if "batch" in r}


def sustained_table(sustained, hf, ours_graph):
    """Lines of a Markdown table: each sustained rate beside the same implementation's short-run rate of this run,
    and the ratios between implementations both ways."""
    if not sustained:
        return []
    sus, short = by_impl(sustained), by_impl(hf + ours_graph)
    secs = sustained[0].get("sustained_s", "?")
    out = [f"\n## Sustained rate ({secs} s of back-to-back calls, then timed over {secs} s more; same run)\n",
           "| implementation | batch | sustained images/s | short run above | sustained / short |",
           "|---|---:|---:|---:|---:|"]
    for (impl, b), r in sus.items():
        o = short.get((impl, b))
        out.append(f"| {impl} | {b:,} | {r['img_s']:,.0f} | " +
                   (f"{o['img_s']:,.0f} | {r['img_s'] / o['img_s']:.3f} |" if o else "| |"))
    pairs = [("sm90", "cuda"), ("sm90:fp8", "sm90"), ("sm90", "hf-sdpa-bf16"), ("cuda", "hf-sdpa-bf16")]
    ratios = []
    for a, c in pairs:
        for (impl, b), r in sus.items():
            if impl == a and (c, b) in sus:
                sr, o1, o2 = r["img_s"] / sus[(c, b)]["img_s"], short.get((a, b)), short.get((c, b))
                ratios.append(f"{a} / {c} at {b:,}: {sr:.3f}x sustained" +
                              (f", {o1['img_s'] / o2['img_s']:.3f}x short" if o1 and o2 else ""))
    if ratios:
        out.append("\n" + "; ".join(ratios) + ".")
    out.append("\n(The short runs time a card just off idle: its power reading is a moving average, so for about a "
               "second the clock runs above where the power limit holds it under continuous load. A long job gets the "
               "sustained rate; the backend API rows, timed after seconds of load, are close to it.)")
    return out


def issue12_targets(ours, ours_graph, e2e_accuracy, sustained=()):
    """Lines of a Markdown table: each of issue 12's targets this run can show, its figure and met / not met.
    A target whose figures this run lacks says so rather than passing. Sustained rates, where measured, are shown
    beside the figures the verdict is made on."""
    g = by_impl(ours_graph)
    api = by_impl(ours)
    sus = by_impl(sustained)
    rows = []

    def state(ok):
        return "met" if ok else "**not met**"

    for b, goal in sorted(T1.items(), reverse=True):
        target = f"1. bf16 at {b:,}: >= {goal:,} images/s, >= {T1_VS_CUDA}x cuda"
        s, c = g.get(("sm90", b)), g.get(("cuda", b))
        if not (s and c):
            rows.append((target, "not measured", state(False)))
            continue
        ratio = s["img_s"] / c["img_s"]
        sa, ca = api.get(("sm90", b)), api.get(("cuda", b))
        extra = (f"; API {sa['img_s']:,.0f} ({sa['img_s'] / ca['img_s']:.2f}x cuda's {ca['img_s']:,.0f})"
                 if sa and ca else "")
        ss, cs = sus.get(("sm90", b)), sus.get(("cuda", b))
        if ss and cs:
            extra += f"; sustained {ss['img_s']:,.0f} ({ss['img_s'] / cs['img_s']:.2f}x cuda's {cs['img_s']:,.0f})"
        rows.append((target, f"{s['img_s']:,.0f} ({ratio:.2f}x cuda's {c['img_s']:,.0f}){extra}",
                     state(s["img_s"] >= goal and ratio >= T1_VS_CUDA)))
    s = g.get(("sm90", 1))
    rows.append((f"3. bf16 batch 1 <= {T3_MS * 1000:.0f} us", f"{s['latency_ms']:.3f} ms" if s else "not measured",
                 state(s is not None and s["latency_ms"] <= T3_MS)))
    f, s = g.get(("sm90:fp8", 1024)), g.get(("sm90", 1024))
    fs, ss = sus.get(("sm90:fp8", 1024)), sus.get(("sm90", 1024))
    sus4 = (f"; sustained {fs['img_s'] / ss['img_s']:.3f}x ({fs['img_s']:,.0f} / {ss['img_s']:,.0f})"
            if fs and ss else "")
    rows.append((f"4. FP8 >= {T4_VS_BF16}x bf16 at 1,024",
                 f"{f['img_s'] / s['img_s']:.3f}x ({f['img_s']:,.0f} / {s['img_s']:,.0f}){sus4}" if f and s
                 else "not measured",
                 state(f is not None and s is not None and f["img_s"] / s["img_s"] >= T4_VS_BF16)))
    gates = [l for l in e2e_accuracy if l.startswith(("PASS", "FAIL"))]
    worst = "; ".join(re.sub(r"^(PASS|FAIL): siglip2-embed --backend (\S+) vs HF fp32: (\d+) images, min cosine "
                             r"([0-9.na]+).*", r"\2 \4 (\3 images)", l) for l in gates)
    rows.append(("4, 5. every corpus image's cosine to HF fp32 (bf16 >= 0.9999, FP8 >= 0.999)",
                 worst or "not measured", state(bool(gates) and all(l.startswith("PASS") for l in gates))))
    out = ["| target | this run | state |", "|---|---|---|"] + [f"| {t} | {v} | {m} |" for t, v, m in rows]
    out.append("\n(Judged on the short graph replays, as the issue's table; sustained rates beside them where this run "
               "measured them. Targets 2, 5's sanitizers and stress, and 6: "
               "scripts/gpu-check.sh, scripts/sm90-sass-check.sh, scripts/sm100-sass-check.sh.)")
    return out


def main():
    work, out = sys.argv[1], sys.argv[2]
    hf = lines(os.path.join(work, "hf_bench.jsonl"))
    ours = lines(os.path.join(work, "ours.jsonl"))
    ours_graph = lines(os.path.join(work, "ours_graph.jsonl"))
    e2e_ours = lines(os.path.join(work, "e2e_ours.jsonl"))
    p = os.path.join(work, "e2e_hf.json")
    e2e_hf = json.load(open(p)) if os.path.exists(p) else {}
    gpu = next((r["gpu"] for r in hf if "gpu" in r), "?")
    hf_rows = by_impl(hf)
    sdpa = {b: r for (i, b), r in hf_rows.items() if i == "hf-sdpa-bf16"}
    comp = next((r for (i, b), r in hf_rows.items() if i.startswith("hf-sdpa-bf16-compile")), None)
    print(f"\n## Encoder, {gpu} (images/s; latency = median ms per batch)\n")
    print("| implementation | batch | latency ms | images/s | TFLOP/s | vs HF sdpa bf16 | vs torch.compile@256 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for (impl, b), r in sorted(hf_rows.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        print(f"| {impl} | {b} | {r['latency_ms']:.3f} | {r['img_s']:,.0f} | {r['img_s'] * FLOP_IMG / 1e12:.0f} | | |")
    for r in ours:
        if "unavailable" in r:
            print(f"| ours: {r['backend']} | - | unavailable: {r['unavailable']} | | | | |")
        elif "batch" in r:
            b = r["batch"]
            vs = f"{r['img_s'] / sdpa[b]['img_s']:.2f}x" if b in sdpa else ""
            vc = f"{r['img_s'] / comp['img_s']:.2f}x" if comp and b == 256 else ""
            print(f"| ours: {r['backend']} (backend API, staged) | {b} | {r['latency_ms']:.3f} | {r['img_s']:,.0f} | "
                  f"{r['img_s'] * FLOP_IMG / 1e12:.0f} | {vs} | {vc} |")
    for r in ours_graph:
        b = r["batch"]
        vs = f"{r['img_s'] / sdpa[b]['img_s']:.2f}x" if b in sdpa else ""
        vc = f"{r['img_s'] / comp['img_s']:.2f}x" if comp and b == 256 else ""
        name = r.get("backend", "cuda-graph").replace("-graph", "")
        print(f"| ours: {name}, graph replay, pixels on GPU | {b} | {r['latency_ms']:.3f} | {r['img_s']:,.0f} | "
              f"{r['img_s'] * FLOP_IMG / 1e12:.0f} | {vs} | {vc} |")
    # issue 12's FP8 target: the FP8 megakernel against the BF16 one, graph replays of the same run
    g = by_impl(ours_graph)
    fp8 = sorted(b for (n, b) in g if n == "sm90:fp8" and ("sm90", b) in g)
    if fp8:
        print("\n| batch | sm90 (bf16) images/s | sm90:fp8 images/s | fp8 / bf16 |\n|---:|---:|---:|---:|")
        for b in fp8:
            f, s16 = g[("sm90:fp8", b)]["img_s"], g[("sm90", b)]["img_s"]
            print(f"| {b} | {s16:,.0f} | {f:,.0f} | {f / s16:.3f}x |")
    print("\n(ours: backend API rows include host staging: pinned memcpy, upload and download, with two batches in "
          "flight, timed from the first batch's collect so the pipeline's fill is left out; the graph-replay "
          "rows are timed like HF, CUDA events around the forward with pixels already on the GPU.)")
    fill = [r for r in ours if "img_s_with_fill" in r]
    if fill:
        print("(the API rows timed from the first submit, fill included: " + "; ".join(
            f"{r['backend']} {r['batch']} {r['img_s_with_fill']:,.0f}" for r in fill) + ")")
    sustained = lines(os.path.join(work, "sustained.jsonl"))
    print("\n".join(sustained_table(sustained, hf, ours_graph)))
    for r in ours:
        if "cold_start_s" in r:
            print(f"\ncold start, {r['backend']}: load {r['load_s']:.3f} s + create (upload, setup) {r['create_s']:.3f} s"
                  f" + first batch of 1 (graph capture) {r['first_embed_s']:.3f} s = {r['cold_start_s']:.3f} s "
                  f"(checkpoint in page cache; target < 1 s)")
    print("\nTargets (issue 5): batch 256 >= torch.compile (baselines.md: 10,783 images/s, max-autotune); batch 1 <= 0.6 "
          "ms.")
    hf_e2e = e2e_hf.get("hf_dataloader16_img_s")
    print(f"\n## End to end, {e2e_hf.get('n_files', '?')} JPEG files → embeddings\n")
    print("| pipeline | images/s | vs HF DataLoader |")
    print("|---|---:|---:|")
    for k in ["pil_decode_only_16proc_img_s", "pil_decode_resize_16proc_img_s", "hf_dataloader16_img_s",
              "hf_naive_1proc_img_s"]:
        if k in e2e_hf:
            print(f"| {k} | {e2e_hf[k]:,.0f} | {e2e_hf[k] / hf_e2e:.2f}x |" if hf_e2e else f"| {k} | {e2e_hf[k]:,.0f} | |")
    for r in e2e_ours:
        print(f"| siglip2-embed --backend {r['backend']} -b 256 | {r['img_s']:,.0f} | "
              f"{r['img_s'] / hf_e2e:.2f}x |" if hf_e2e else f"| siglip2-embed {r['backend']} | {r['img_s']:,.0f} | |")
    print("\nTarget (issue 5): end to end >= 2x HF's DataLoader pipeline.")
    # Issue 14: the exact pipeline at the decode limit, against Pillow decode-only on the same corpus, same run.
    pil = e2e_hf.get("pil_decode_only_16proc_img_s")
    print("\n## Exact end to end vs Pillow decode-only (same run, same corpus)\n")
    print("| siglip2-embed (exact preprocessing, whole process) | images/s | Pillow decode-only, 16 processes | ratio |")
    print("|---|---:|---:|---:|")
    for r in e2e_ours:
        ratio = f"{r['img_s'] / pil:.2f}x" if pil else "?"
        print(f"| --backend {r['backend']} -b 256 | {r['img_s']:,.0f} | {pil:,.0f} | {ratio} |" if pil else
              f"| --backend {r['backend']} -b 256 | {r['img_s']:,.0f} | ? | ? |")
    print("\nTarget (issue 14): >= 0.8x Pillow decode-only and >= 650 images/s.")
    p = os.path.join(work, "e2e_accuracy.txt")
    e2e_accuracy = [l.rstrip("\n") for l in open(p)] if os.path.exists(p) else []
    if e2e_accuracy:
        print("\n## End to end: every corpus image's embedding, as written, against HF fp32\n")
        print("\n".join(e2e_accuracy))
        print("\nGates (issue 12): cosine >= 0.9999 for every image; sm90:fp8 >= 0.999.")
    if any(r.get("backend", "").startswith("sm90") for r in ours_graph):
        print(f"\n## Issue 12's targets, judged on this run ({gpu})\n")
        print("\n".join(issue12_targets(ours, ours_graph, e2e_accuracy, sustained)))
    for r in e2e_ours:
        if r.get("verbose"):
            print(f"\n-v of --backend {r['backend']}:\n" + "\n".join("    " + l for l in r["verbose"].splitlines()))
    json.dump({"gpu": gpu, "hf": hf, "ours": ours, "ours_graph": ours_graph, "sustained": sustained, "e2e_hf": e2e_hf,
               "e2e_ours": e2e_ours, "e2e_accuracy": e2e_accuracy}, open(out, "w"), indent=1)
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    main()
