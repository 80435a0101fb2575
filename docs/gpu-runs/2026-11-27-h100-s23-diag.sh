#!/usr/bin/env bash
# Session 23's diagnostic runs, as one script (calls 1-6 ran its parts as .carry/s23{a..e}.sh; call 8 ran this file,
# before the checkpoint check and ROUNDS below, which change no figure).
# On an H100, from the repo root, with the build deps in .carry/deps (scripts/pack-build-deps.sh):
#   git archive -o .carry/base.tar HEAD                                  # HEAD's kernel, for the calibration
#   git apply docs/gpu-runs/2026-11-27-h100-s23-diag-energy-breakdown.patch   # timing-only knobs; rows are wrong
#   OUT=DIR bash docs/gpu-runs/2026-11-27-h100-s23-diag.sh energy   # calls 1-2: mJ per image at 1,024 images
#   OUT=DIR bash docs/gpu-runs/2026-11-27-h100-s23-diag.sh latency  # calls 4-5: graph replays at 1, 2, 4, 32 images
# Variants are NAME:SG_DIAG_SKIP:SG_DIAG_NOLOAD[:BACKEND] (VARS overrides the list); NAME head runs HEAD's build from
# .carry/base.tar instead (call 6: VARS="head:0:0 diag0:0:0 all:31:0"). SG_DIAG_SKIP bits: 1 bf16 tile stores, 2 fp32
# reduce-adds, 4 encoder LayerNorm work, 8 attention compute, 16 GELU; SG_DIAG_NOLOAD: 1 A loads, 2 W loads, 3 both.
# Energy of 60 replays = E(90 replays) - E(30) (scripts/energy_trace.py), as in sessions 16 and 22.
cd "$(dirname "$0")/../.."
MODE=${1:?usage: diag.sh energy|latency}; R=${OUT:-/tmp/sg-s23}; W=/tmp/sg-gpu-work; B=/tmp/sg-base
stamp() { echo "== $*"; }; mkdir -p "$R" $W; . scripts/lib-gpu.sh; PY=python3; WORK=$W
sg_gpu_checkpoint & make -j16 DEPS_PREFIX=$PWD/.carry/deps build/tools/sg_gpu_graph_bench > "$R/build.log" 2>&1 || tail -5 "$R/build.log"
if [ -f .carry/base.tar ]; then
    mkdir -p $B && tar xf .carry/base.tar -C $B && ln -sfn "$PWD/.carry" $B/.carry
    (cd $B && make -j16 DEPS_PREFIX=$PWD/.carry/deps build/tools/sg_gpu_graph_bench > "$R/build-base.log" 2>&1)
fi
wait; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader | tee "$R/gpu.txt"
CK=$W/siglip2-base-random  # made by sg_gpu_checkpoint above, in the background: its exit does not stop this shell
[ -f "$CK/model.safetensors" ] || { echo "no checkpoint: see $W/ckpt.log" >&2; exit 1; }
if [ "$MODE" = energy ]; then  # one round: each variant's two windows take ~20 s
    ROUNDS=1 VARS=${VARS:-"off:0:0 st:3:0 ln:4:0 att:8:0 all:31:0 noA:0:1 noW:0:2 noload:0:3 allnl:31:3 f8off:0:0:sm90:fp8 f8all:31:0:sm90:fp8 off2:0:0"}
else
    ROUNDS=3 VARS=${VARS:-"head:0:0 off:0:0 st:3:0 ln:4:0 att:8:0 all:31:0 noload:0:3 allnl:31:3"}
fi
for round in $(seq "$ROUNDS"); do
    for v in $VARS; do
        IFS=: read -r name sk nl _ <<<"$v"; be=${v#*:*:*:}; [ "$be" = "$v" ] && be=sm90
        bin=build/tools/sg_gpu_graph_bench; [ "$name" = head ] && bin=$B/build/tools/sg_gpu_graph_bench
        if [ "$MODE" = energy ]; then
            for it in 30 90; do
                SG_DIAG_SKIP=$sk SG_DIAG_NOLOAD=$nl SG_GRAPH_ITERS=$it SG_GRAPH_WINDOW=1 timeout 120 \
                    python3 scripts/energy_trace.py /tmp/tr.csv -- $bin $CK 1024 "$be" 2>&1 | sed "s/^/$name $it /"
            done
        else
            SG_DIAG_SKIP=$sk SG_DIAG_NOLOAD=$nl timeout 120 $bin $CK 1,2,4,32 "$be" 2>/dev/null | sed "s/^/$name $round /"
        fi
    done
done > "$R/$MODE.txt"
python3 - "$MODE" "$R/$MODE.txt" $VARS <<'PY'
import collections, json, re, sys
mode, path, names = sys.argv[1], sys.argv[2], [v.split(':')[0] for v in sys.argv[3:]]
E, ips, lat = {}, {}, collections.defaultdict(list)
for line in open(path):
    p = line.split(' ', 2)
    if len(p) < 3: continue
    name, n, rest = p[0], int(p[1]), p[2]
    if mode == 'latency':
        try: j = json.loads(rest)
        except ValueError: continue
        if 'batch' in j: lat[(name, j['batch'])].append(j['latency_ms'])
        continue
    m = re.search(r'"img_s": ([0-9.]+)', rest)
    if m and n == 90: ips[name] = float(m.group(1))
    m = re.match(r'\| sm90\S*-1024-x\d+ \| [0-9.]+ \| ([0-9.]+) \| [0-9.]+ mJ \| (\d+) \| (\d+) \|', rest.strip())
    if m: E[(name, n)] = (float(m.group(1)), m.group(2), m.group(3))
if mode == 'energy':
    print("| 1,024 images | img/s (90 replays) | mJ per image (60 replays) | mean W (90) | median MHz (90) |")
    print("|---|---:|---:|---:|---:|")
    for n in names:
        if (n, 30) in E and (n, 90) in E:
            mj = (E[(n, 90)][0] - E[(n, 30)][0]) / (60 * 1024) * 1000
            print(f"| {n} | {ips.get(n, 0):,.0f} | {mj:.1f} | {E[(n, 90)][1]} | {E[(n, 90)][2]} |")
else:
    print("| switched off | batch 1 ms (rounds) | 2 | 4 | 32 (medians) |")
    print("|---|---|---:|---:|---:|")
    med = lambda n, b: sorted(lat[(n, b)])[len(lat[(n, b)]) // 2] if lat[(n, b)] else float('nan')
    for n in names:
        print(f"| {n} | {' / '.join(f'{x:.4f}' for x in lat[(n, 1)])} | {med(n, 2):.4f} | {med(n, 4):.4f} | {med(n, 32):.4f} |")
PY
