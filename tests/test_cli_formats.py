"""tests/test_cli_formats.py — every output format of siglip2-embed read back by its real consumer.

CPU backend, tiny196 fixture model (S = 224, D = 64). Consumers: Python's json for json/jsonl, numpy.load for
npy, numpy views + faiss.IndexFlatIP for fbin and fvecs (a stored vector queried must come back first), numpy
for f32. Rows must agree bit for bit across formats, be unit-norm when normalised, and --no-normalize must give
HF's pooler_output: the fixture's image0_u8.raw (HF's own preprocessed pixels, 224x224 so the resize is the
identity) is written as a PPM and its embedding compared with pooled.f32 from transformers (tolerance 1e-4
absolute, fp32 CPU vs fp32 torch; values up to ~3).
"""
import json
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgtest import BIN, IMAGES, check, done, fixture, fresh_dir, skip  # noqa: E402

import numpy as np  # noqa: E402

FIX = fixture("tiny196")
W = ["--backend", "cpu", "--weights", FIX, "-q"]
D = 64
work = fresh_dir("cli_formats")


def run(args, **kw):
    return subprocess.run([BIN] + W + args, capture_output=True, timeout=600, **kw)


def out(name):
    return os.path.join(work, name)


def poison(path):
    """A stale output of an earlier run where the output goes (5 rows of 3 floats, NaN, with the list of names a
    binary output has beside it): the run must replace it, not leave it or append to it. (A file the tool did not
    write, a binary one without its list included, is refused instead: test_cli_safety.py.)"""
    stale = np.full((5, 3), np.nan, dtype="<f4")
    ext = path.rsplit(".", 1)[-1]
    if ext not in ("json", "jsonl"):
        with open(path + ".paths", "wb") as f:
            f.write(b"stale\n" * 5)
    if ext in ("json", "jsonl"):
        body = b'{"path":"stale","embedding":null}\n' * 5
    elif ext == "npy":
        np.save(path, stale)
        return
    elif ext == "fbin":
        body = np.array([5, 3], "<u4").tobytes() + stale.tobytes()
    else:  # fvecs
        body = np.hstack([np.full((5, 1), 3, "<i4"), stale.view("<i4")]).tobytes()
    with open(path, "wb") as f:
        f.write(body)


# Inputs: a random selection of the test images plus a fresh random-noise PPM (new pixels every run).
rng = random.Random()
# Only the images: the folder also holds README.md and the golden lists, which a directory walk skips.
names = sorted(n for n in os.listdir(IMAGES) if not n.endswith((".txt", ".md")) and os.path.isfile(os.path.join(IMAGES, n)))
picked = sorted(rng.sample(names, 12))
inp = out("in")
os.makedirs(inp)
for n in picked:
    shutil.copy(os.path.join(IMAGES, n), os.path.join(inp, n))
noise = np.random.default_rng().integers(0, 256, size=(37, 53, 3), dtype=np.uint8)
with open(os.path.join(inp, "noise.ppm"), "wb") as f:
    f.write(b"P6\n53 37\n255\n" + noise.tobytes())
expected_paths = sorted(os.path.join(inp, n) for n in os.listdir(inp))
N = len(expected_paths)

# jsonl (reference rows for the other formats)
poison(out("a.jsonl"))
r = run([inp, "-o", out("a.jsonl")])
check(r.returncode == 0, f"jsonl: exit 0 (got {r.returncode}: {r.stderr.decode()[-300:]})")
rows = [json.loads(line) for line in open(out("a.jsonl"), encoding="utf-8")]
check([x["path"] for x in rows] == expected_paths, "jsonl: one row per input, in sorted directory order")
ref = np.array([x["embedding"] for x in rows], dtype=np.float32)
check(ref.shape == (N, D), f"jsonl: rows have D = {D} floats")
norms = np.linalg.norm(ref.astype(np.float64), axis=1)
check(np.all(np.abs(norms - 1) < 1e-6), f"jsonl: normalised rows have norm 1 (max dev {np.abs(norms - 1).max():.2e})")

# JSON array, and one-object form for a single file
poison(out("a.json"))
r = run([inp, "-o", out("a.json")])
arr = json.load(open(out("a.json"), encoding="utf-8"))
check(r.returncode == 0 and isinstance(arr, list) and [x["path"] for x in arr] == expected_paths,
      "json: an array of objects for a directory")
check(np.array_equal(np.array([x["embedding"] for x in arr], dtype=np.float32), ref),
      "json: floats round-trip to the same float32 bits as jsonl")
r = run(["--format", "json", expected_paths[0]])
obj = json.loads(r.stdout)
check(r.returncode == 0 and isinstance(obj, dict) and obj["path"] == expected_paths[0]
      and np.array_equal(np.array(obj["embedding"], dtype=np.float32), ref[0]),
      "json: a single file gives one object with the same row")

# npy
poison(out("a.npy"))
r = run([inp, "-o", out("a.npy")])
a = np.load(out("a.npy"))
check(r.returncode == 0 and a.dtype == np.float32 and a.shape == (N, D), f"npy: numpy.load gives float32 {a.shape}")
check(np.array_equal(a, ref), "npy: rows equal the JSON rows bit for bit")
paths = open(out("a.npy") + ".paths", encoding="utf-8").read().splitlines()
check(paths == expected_paths, "npy: FILE.paths lists the rows' paths in order")
check(not [n for n in os.listdir(work) if ".tmp." in n], "npy: no temporary files left behind")

# fbin + faiss
try:
    import faiss
except ImportError:
    faiss = None
poison(out("a.fbin"))
r = run([inp, "-o", out("a.fbin")])
raw = np.fromfile(out("a.fbin"), dtype=np.uint8)
n, d = np.frombuffer(raw[:8].tobytes(), dtype="<u4")
fb = np.frombuffer(raw[8:].tobytes(), dtype="<f4").reshape(n, d)
check(r.returncode == 0 and (n, d) == (N, D) and np.array_equal(fb, ref), "fbin: header (n, d) and rows")
if faiss is None:
    skip("fbin/fvecs: faiss not installed for this python")
else:
    idx = faiss.IndexFlatIP(int(d))
    idx.add(np.ascontiguousarray(fb))
    q = rng.randrange(N)
    _, I = idx.search(fb[q:q + 1], 3)
    check(np.array_equal(fb[I[0][0]], fb[q]), f"fbin: faiss IndexFlatIP returns stored vector {q} first for itself")

# fvecs + faiss
poison(out("a.fvecs"))
r = run([inp, "-o", out("a.fvecs")])
fv = np.fromfile(out("a.fvecs"), dtype="<i4").reshape(-1, D + 1)
check(r.returncode == 0 and np.all(fv[:, 0] == D), "fvecs: int32 D before each vector")
fvv = fv[:, 1:].copy().view("<f4")
check(np.array_equal(fvv, ref), "fvecs: rows equal the JSON rows")
if faiss is not None:
    idx = faiss.IndexFlatIP(D)
    idx.add(np.ascontiguousarray(fvv))
    _, I = idx.search(fvv, 1)
    # Some test images decode to the same pixels (e.g. a gray PNG with and without alpha): a tie may
    # return the twin, so the check is that the vector found is the query itself, bit for bit.
    check(np.array_equal(fvv[I[:, 0]], fvv), "fvecs: faiss finds every stored vector as its own nearest")

# f32 to a pipe (stdout) and to a file
r = run([inp, "--format", "f32"])
check(r.returncode == 0 and np.array_equal(np.frombuffer(r.stdout, dtype="<f4").reshape(-1, D), ref),
      "f32: raw rows on stdout")
r = run([inp, "-o", out("a.f32")])
check(np.array_equal(np.fromfile(out("a.f32"), dtype="<f4").reshape(-1, D), ref), "f32: raw rows to a file")
r = run([inp, "--format", "npy"])
check(r.returncode == 2 and b"-o" in r.stderr, "npy to stdout refused with exit 2 (needs -o FILE)")

# --no-normalize is HF's pooler_output: compare with transformers' pooled.f32 for image0
px = np.fromfile(os.path.join(FIX, "image0_u8.raw"), dtype=np.uint8)
hf = np.fromfile(os.path.join(FIX, "pooled.f32"), dtype="<f4").reshape(-1, D)[0]
with open(out("image0.ppm"), "wb") as f:
    f.write(b"P6\n224 224\n255\n" + px.tobytes())
r = run(["--no-normalize", "--format", "json", out("image0.ppm")])
e = np.array(json.loads(r.stdout)["embedding"], dtype=np.float32)
err = float(np.abs(e - hf).max())
check(err < 1e-4, f"--no-normalize equals HF transformers pooler_output (max abs err {err:.2e} < 1e-4)")
r = run(["--format", "json", out("image0.ppm")])
en = np.array(json.loads(r.stdout)["embedding"], dtype=np.float64)
want = hf.astype(np.float64) / np.linalg.norm(hf.astype(np.float64))
check(np.abs(en - want).max() < 1e-5, "--normalize equals HF pooler_output / its L2 norm")

# --dump-preprocessed: the PPM holds the pixels the model saw; for image0 they are HF's own
dd = out("dump")
r = run(["--dump-preprocessed", dd, out("image0.ppm"), inp, "-o", out("d.jsonl")])
dumped = sorted(os.listdir(dd))
check(r.returncode == 0 and dumped == [f"{i:06d}.ppm" for i in range(N + 1)],
      f"--dump-preprocessed writes NNNNNN.ppm by input index ({len(dumped)} files)")
body = open(os.path.join(dd, "000000.ppm"), "rb").read()
check(body.startswith(b"P6\n224 224\n255\n") and body[15:] == px.tobytes(),
      "--dump-preprocessed: image0's dump equals HF's preprocessed pixels")

# a path that is not valid UTF-8 and one with quotes/newline still give valid JSON
odd = os.path.join(os.fsencode(work), b"odd\xff \"q\"\nname.ppm")
shutil.copy(os.path.join(inp, "noise.ppm"), odd)
r = run([odd.decode("utf-8", "surrogateescape")])
try:
    row = json.loads(r.stdout)
    ok_json = row["path"].endswith("odd\ufffd \"q\"\nname.ppm")
except Exception as ex:  # noqa: BLE001
    ok_json = False
    print(ex)
check(r.returncode == 0 and ok_json, "json: odd bytes in a path are escaped (invalid UTF-8 -> U+FFFD)")
r = run([odd.decode("utf-8", "surrogateescape"), "-o", out("odd.npy")])
check(r.returncode == 1 and b"newline" in r.stderr, "npy: a path with a newline is refused (cannot go in .paths)")
done()
