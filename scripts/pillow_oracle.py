"""scripts/pillow_oracle.py — the two sides of the differential scripts (gif_differential.py, tiff_differential.py).

Both sides read file paths on stdin and print one line a path: "PATH OK W H FNV1A64" (the hash of the RGB bytes) or
"PATH ERR REASON". Ours is a DUMP program (tests/fuzz/gif_dump.c, around sg_decode_rgb); Pillow's is ORACLE, run in
a chosen Python (Image.open(path).convert("RGB"); any exception is a refusal; ORACLE_EXIF applies
ImageOps.exif_transpose first, as the tool's default pipeline does; ORACLE_224 then resizes to 224 x 224 bilinear,
the whole pipeline, against a dump program given "224"). verdicts() runs either (Pillow's
as [python, "-c", ORACLE]) and returns {path: "OK W H HASH" or "ERR ..."}; parse_args() and write_cases() are the
scripts' shared command line and file writing, and compare_main() the whole run of a script that only compares verdicts
and pixels (gif_differential.py, png_differential.py). fnv1a64() is the hash the golden and fixture files record (FNV-1a 64
with its standard offset basis; ORACLE's and the dump programs' hash starts from 1469598103934665603 instead, which
matters only in that both sides of a differential agree).
"""
import os
import random
import subprocess
import sys

ORACLE = r"""
import sys, warnings
from PIL import Image
warnings.simplefilter("ignore")
for p in sys.stdin.read().split():
    try:
        im = Image.open(p).convert("RGB")
        h = 1469598103934665603
        for b in im.tobytes():
            h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        print(p, "OK", im.size[0], im.size[1], "%016x" % h)
    except Exception as e:
        print(p, "ERR", type(e).__name__, str(e)[:80].replace("\n", " "))
"""
ORACLE_EXIF = ORACLE.replace("from PIL import Image", "from PIL import Image, ImageOps").replace(
    "Image.open(p)", "ImageOps.exif_transpose(Image.open(p))")
ORACLE_224 = ORACLE_EXIF.replace('.convert("RGB")', '.convert("RGB").resize((224, 224), Image.BILINEAR)')


def fnv1a64(b):
    """FNV-1a 64 of the bytes b, as 16 hex digits: the hash goldens.txt and the codec fixture lists record."""
    h = 0xCBF29CE484222325
    for x in b:
        h = ((h ^ x) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def verdicts(cmd, paths, check=True):
    """Runs cmd with the paths on stdin and returns its lines as {path: rest}; check: a non-zero exit raises."""
    r = subprocess.run(cmd, input="\n".join(paths) + "\n", capture_output=True, text=True, check=check)
    return dict(line.split(" ", 1) for line in r.stdout.splitlines())


def parse_args(argv):
    """DUMP OUTDIR [N] [SEED] [--python PY] [--flag ...]: (dump, outdir, n, seed, python, set of --flags)."""
    args, flags, py, i = [], set(), sys.executable, 0
    while i < len(argv):
        if argv[i] == "--python":
            py, i = argv[i + 1], i + 2
            continue
        (flags.add if argv[i].startswith("--") else args.append)(argv[i])
        i += 1
    n = int(args[2]) if len(args) > 2 else 1000
    seed = int(args[3]) if len(args) > 3 else 1
    return args[0], args[1], n, seed, py, flags


def write_cases(outdir, n, seed, name, make):
    """n files OUTDIR/(name % i), each make(rng) with one random.Random(seed) for all; returns their paths."""
    os.makedirs(outdir, exist_ok=True)
    rng, paths = random.Random(seed), []
    for i in range(n):
        p = os.path.join(outdir, name % i)
        with open(p, "wb") as f:
            f.write(make(rng))
        paths.append(p)
    return paths


def compare_main(name, make):
    """DUMP OUTDIR [N] [SEED] [--python PY]: writes N files OUTDIR/(name % i) made by make(rng), decodes them with
    DUMP (given this Pillow's major version, for its rules) and with Pillow, prints every file whose verdict, size or
    pixels differ (two refusals agree, whatever their reasons) and a count."""
    dump, outdir, n, seed, py, _ = parse_args(sys.argv[1:])
    paths = write_cases(outdir, n, seed, name, make)
    major = subprocess.run([py, "-c", "import PIL; print(PIL.__version__.split('.')[0])"], capture_output=True,
                           text=True, check=True).stdout.strip()
    ours, theirs = verdicts([dump, major], paths), verdicts([py, "-c", ORACLE], paths)
    diff = 0
    for p in paths:
        a, b = ours.get(p, "missing"), theirs.get(p, "missing")
        if a.split()[0] == b.split()[0] == "ERR" or a == b:
            continue
        diff += 1
        print(p, "| ours:", a, "| pillow:", b)
    print("%d files, %d differ" % (n, diff))

