#!/usr/bin/env python3
"""scripts/ncu_regions.py — where a megakernel's warps spend their time, by role and phase, from ncu's source
counters.

    python3 scripts/ncu_regions.py SOURCE.csv[.gz] OBJECT KERNEL [--src TREE] [--detail REGION] [--top N]

SOURCE: `ncu -i REP --page source --csv --print-source sass` of one profiled launch (`--section SourceCounters`):
one row per SASS instruction with its warp-state samples and their stall reasons. OBJECT: the .o (or .cubin) of the
*same* build (same source, flags and nvcc: the script checks every opcode), whose source tree is TREE (default: this
repository; give the profiled commit's, e.g. a `git archive` of it, when the tree has moved on); KERNEL: the
function's mangled name, e.g.
_Z19sg_sm90_mega_kernelILb0ELb0EEv14sg_mega_params. `nvdisasm -gi` gives each instruction's inline chain (file and
line of every inlined frame); each frame's line is mapped to the function that contains it (a scan of the source
files for definitions), and the chain to a region:
  producer / storer / side             the skeleton's roles (kernel/mega/mega_kernel.cuh)
  cons:gemm:start / kloop / epilogue   a consumer in Arch::gemm_half (sm90_mega.cu), split at its K loop
  cons:att:S / softmax / PV / out      a consumer in sg_sm90_attn_block (sm90_attn.cuh), split at its phases
  cons:att:skeleton                    the attention task's waits and barrier in the consumer loop
  cons:pool / cons:rowwise             the head's attention, LayerNorm and patch preparation on the consumers
  cons:loop                            the rest of the consumer loop (waiting for the next task, bookkeeping)
Samples are per warp, so a region's share is the share of warp time (the consumers are 8 of the CTA's 12 warps).
The phase anchors below are strings of the source; if one is not found the script says so rather than guess.
"""
import argparse
import collections
import csv
import gzip
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = ROOT  # the profiled build's source tree (--src)
SOURCES = ['kernel/mega/mega_kernel.cuh', 'kernel/mega/mega_ln.cuh', 'kernel/sm90/sm90_mega.cu',
           'kernel/sm90/sm90_attn.cuh', 'kernel/sm90/sm90_fp8row.cuh']
# (file, function, anchor text): the phase starts at the first line at or after the previous anchor containing it
PHASES = {
    ('kernel/sm90/sm90_mega.cu', 'gemm_half'): [('start', None), ('kloop', 'for (int left = n; left > 0; left--)'),
                                                 ('epilogue', 'sg_wgmma_wait<0>();')],
    ('kernel/sm90/sm90_attn.cuh', 'sg_sm90_attn_block'): [('S', None), ('softmax', 'float mx[2]'),
                                                          ('PV', 'float o[SG_ATTN_DH / 2]'),
                                                          ('out', 'const float inv[2]')],
}
DEF = re.compile(r'^\s*(?:static\s+)?(?:__device__|__global__)\s+(?:__forceinline__\s+)?[\w:<>,\s\*&()]*?\b(\w+)\s*\(')


def tool(name):
    out = subprocess.run(['bash', '-c', f'. "{ROOT}/scripts/lib-sass.sh" && sg_find_cuobjdump && echo "$CUOBJDUMP"'],
                         capture_output=True, text=True).stdout.strip()
    if not out:
        sys.exit('no cuobjdump found (scripts/lib-sass.sh)')
    return out if name == 'cuobjdump' else os.path.join(os.path.dirname(out), 'nvdisasm')


def functions():
    """(file, line) -> function name, and each function's phases as (first line, name)."""
    owner, phases = {}, {}
    for rel in SOURCES:
        lines = open(os.path.join(SRC, rel)).read().split('\n')
        starts = [(i + 1, m.group(1)) for i, l in enumerate(lines) if (m := DEF.match(l))]
        for j, (s, name) in enumerate(starts):
            e = starts[j + 1][0] - 1 if j + 1 < len(starts) else len(lines)
            for ln in range(s, e + 1):
                owner[(rel, ln)] = name
            if (rel, name) in PHASES:
                at, out = s, []
                for ph, anchor in PHASES[(rel, name)]:
                    if anchor is not None:
                        at = next((k + 1 for k in range(at - 1, e) if anchor in lines[k]), None)
                        if at is None:
                            sys.exit(f'{rel}: anchor {anchor!r} not found in {name}')
                    out.append((at, ph))
                phases[(rel, name)] = out
    return owner, phases


def rel_to_src(path):
    """A path nvdisasm printed (the build's absolute path) as one of SOURCES when it ends with one."""
    for rel in SOURCES:
        if path.endswith('/' + rel):
            return rel
    return path


def chains(obj, kernel):
    with tempfile.TemporaryDirectory() as d:
        if obj.endswith('.o'):
            subprocess.run([tool('cuobjdump'), '-xelf', 'all', os.path.abspath(obj)], cwd=d, capture_output=True)
            cubins = [os.path.join(d, f) for f in os.listdir(d) if f.endswith('.cubin')]
            if len(cubins) != 1:
                sys.exit(f'{obj}: expected one cubin, found {len(cubins)}')
            obj = cubins[0]
        sass = subprocess.run([tool('nvdisasm'), '-gi', obj], capture_output=True, text=True).stdout.split('\n')
    start = next((i for i, l in enumerate(sass) if l.startswith(f'.text.{kernel}:')), None)
    if start is None:
        sys.exit(f'{kernel} not in {obj}')
    out, text, cur, fresh = {}, {}, [], False
    for l in sass[start + 1:]:
        if l.startswith('//----') or l.startswith('.text.'):
            break
        m = re.match(r'\s*//## File "([^"]+)", line (\d+)', l)
        if m:
            if fresh:
                cur, fresh = [], False
            path = os.path.normpath(m.group(1))
            cur.append((rel_to_src(path), int(m.group(2))))
            continue
        m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*)', l)
        if m:
            out[int(m.group(1), 16)], text[int(m.group(1), 16)] = list(cur), m.group(2)
            fresh = True
    return out, text


def region(chain, owner, phases):
    names = [(f, ln, owner.get((f, ln))) for f, ln in chain]

    def phase_of(f, ln, name):
        for at, ph in reversed(phases[(f, name)]):
            if ln >= at:
                return ph
        return phases[(f, name)][0][1]

    fn = [n for _, _, n in names]
    for role, key in (('producer', 'sg_mega_produce'), ('storer', 'sg_mega_storer'), ('side', 'sg_mega_side')):
        if key in fn:
            return role
    if 'sg_mega_consume' not in fn:
        return 'other'
    for f, ln, n in names:  # innermost first: the first phased function on the chain decides
        if (f, n) in phases:
            return ('cons:gemm:' if n == 'gemm_half' else 'cons:att:') + phase_of(f, ln, n)
    if 'sg_mega_pool' in fn:
        return 'cons:pool'
    if 'sg_mega_rowwise' in fn:
        return 'cons:rowwise'
    if 'attention' in fn:
        return 'cons:att:other'
    lines = [ln for f, ln, n in names if n == 'sg_mega_consume']
    src = open(os.path.join(SRC, 'kernel/mega/mega_kernel.cuh')).read().split('\n')
    att0 = next(i + 1 for i, l in enumerate(src) if 'case SG_MT_ATT:' in l)
    gemm0 = next(i + 1 for i, l in enumerate(src) if l.strip().startswith('default: {  // the GEMMs'))
    if lines and att0 <= lines[-1] < gemm0:
        return 'cons:att:skeleton'
    if lines and lines[-1] >= gemm0 and any(n in ('gemm', 'gemm_half') for n in fn):
        return 'cons:gemm:other'
    return 'cons:loop'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('source')
    ap.add_argument('object')
    ap.add_argument('kernel')
    ap.add_argument('--src', default=ROOT, help='the profiled build\'s source tree')
    ap.add_argument('--detail', help='a region to break down by source line (innermost three frames)')
    ap.add_argument('--top', type=int, default=25)
    a = ap.parse_args()
    global SRC
    SRC = os.path.abspath(a.src)
    owner, phases = functions()
    chain, text = chains(a.object, a.kernel)
    opener = gzip.open if a.source.endswith('.gz') else open
    rows = [r for r in csv.reader(opener(a.source, 'rt'))]
    hdr = next(r for r in rows if r and r[0] == 'Address')
    idx = {h: i for i, h in enumerate(hdr)}
    stalls = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    data = [r for r in rows if r and r[0].startswith('0x')]
    base = int(data[0][0], 16)
    def opcode(t):  # '@!P0 FADD.FTZ R1, ...;' -> 'FADD'
        w = t.replace(';', ' ').split()
        return (w[1] if w[0].startswith('@') else w[0]).split('.')[0]
    bad = sum(1 for r in data if (o := int(r[0], 16) - base) not in text or opcode(text[o]) != opcode(r[1]))
    print(f'{len(data)} instructions profiled, {len(text)} in the local build, {bad} opcode mismatches')
    if bad:
        sys.exit('the object is not the profiled build')
    tot, why, det, dwhy = collections.Counter(), collections.defaultdict(collections.Counter), collections.Counter(), \
        collections.defaultdict(collections.Counter)
    for r in data:
        ch = chain[int(r[0], 16) - base]
        reg, s = region(ch, owner, phases), int(r[idx['Warp Stall Sampling (All Samples)']] or 0)
        tot[reg] += s
        for h in stalls:
            if r[idx[h]].isdigit():
                why[reg][h[6:]] += int(r[idx[h]])
        if reg == a.detail:
            key = ' < '.join(f'{os.path.basename(f)}:{ln}' for f, ln in ch[:3])
            det[key] += s
            for h in stalls:
                if r[idx[h]].isdigit():
                    dwhy[key][h[6:]] += int(r[idx[h]])
    all_s = sum(tot.values())
    cons = sum(v for k, v in tot.items() if k.startswith('cons'))
    print(f'{"region":22s} {"all warps":>9s} {"consumers":>9s}  top stall reasons')
    for reg, s in tot.most_common():
        c = f'{100 * s / cons:8.1f}%' if reg.startswith('cons') else ' ' * 9
        print(f'{reg:22s} {100 * s / all_s:8.1f}% {c}  ' +
              ' '.join(f'{k}:{100 * v / max(s, 1):.0f}%' for k, v in why[reg].most_common(4)))
    if a.detail:
        d = sum(det.values())
        print(f'\n{a.detail}: {d} samples, by innermost frames')
        for key, s in det.most_common(a.top):
            print(f'{100 * s / max(d, 1):5.1f}%  {key:70s} ' +
                  ' '.join(f'{k}:{100 * v / max(s, 1):.0f}%' for k, v in dwhy[key].most_common(3)))


if __name__ == '__main__':
    main()
