"""tests/test_search_story.py — the README's search story end to end: a folder to .npy, a text query, FAISS.

CPU backend, tests/fixtures/tinytext (a tiny SiglipModel with its tokenizer.json). Steps, as a user runs them:
  1. siglip2-embed FOLDER -o photos.npy          (images, unit-norm rows, photos.npy.paths)
  2. siglip2-embed --text "a red car" -o q.npy   (one text row, q.npy.texts)
  3. faiss.IndexFlatIP over the photos, search with the query, print the best paths.
Checks that the pieces fit: the text and image rows have the same width, every row is unit-norm (inner product
= cosine), the search returns valid paths with scores equal to the cosines numpy computes; and that a text row
indexed with the images is found first by its own text, for every query of a --texts-from list (the query is
embedded again in a separate run: the same computation gives the same vector, so its own row scores 1).
Needs numpy and faiss (python3-numpy, python3-faiss from make deps); SKIPs without faiss.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgtest import BIN, ROOT, check, done, fixture, fresh_dir, skip  # noqa: E402

import numpy as np  # noqa: E402

try:
    import faiss
except ImportError:
    skip("search story: python3-faiss is not installed (make deps installs it)")
    done()

FIX = fixture("tinytext")
W = ["--backend", "cpu", "--weights", FIX, "-q"]
work = fresh_dir("search_story")
photos = os.path.join(work, "photos")
os.makedirs(os.path.join(photos, "sub"))
for name in ["zs0.png", "zs1.png", "zs2.png"]:
    shutil.copy(os.path.join(FIX, name), os.path.join(photos, name))
for name in ["png_rgb.png", "jpeg_444.jpg", "bmp_24.bmp"]:
    src = os.path.join(ROOT, "tests/images", name)
    if os.path.exists(src):
        shutil.copy(src, os.path.join(photos, "sub", name))


def run(args, **kw):
    return subprocess.run([BIN] + W + args, capture_output=True, timeout=600, **kw)


# 1. the folder
r = run([photos, "-o", os.path.join(work, "photos.npy")])
x = np.load(os.path.join(work, "photos.npy"))
paths = open(os.path.join(work, "photos.npy.paths"), encoding="utf-8").read().splitlines()
check(r.returncode == 0 and x.shape[0] == len(paths) >= 3, f"folder -> photos.npy {x.shape} + {len(paths)} paths")
# 2. a text query
r = run(["--text", "a red car", "-o", os.path.join(work, "q.npy")])
q = np.load(os.path.join(work, "q.npy"))
texts = open(os.path.join(work, "q.npy.texts"), encoding="utf-8").read().splitlines()
check(r.returncode == 0 and q.shape == (1, x.shape[1]) and texts == ["a red car"],
      f"--text -> q.npy {q.shape}: the same width as the images ({x.shape[1]})")
check(np.allclose(np.linalg.norm(x, axis=1), 1, atol=1e-6) and np.allclose(np.linalg.norm(q, axis=1), 1, atol=1e-6),
      "every row unit-norm: inner product is cosine")
# 3. FAISS
index = faiss.IndexFlatIP(x.shape[1])
index.add(x)
scores, ids = index.search(q, 3)
best = [paths[i] for i in ids[0]]
print("best for 'a red car':", ", ".join(f"{os.path.relpath(p, work)} ({s:.3f})" for p, s in zip(best, scores[0])))
cosines = x @ q[0]
check(all(0 <= i < len(paths) for i in ids[0]) and np.allclose(scores[0], np.sort(cosines)[::-1][:3], atol=1e-5),
      "FAISS returns valid rows with numpy's best cosines, best first")

# a text row indexed with the images is found first by its own text
queries = ["a red car", "a photo of a dog", "café crème brûlée", "一只狗在海滩上", "🐶 on a beach"]
with open(os.path.join(work, "queries.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(queries) + "\n")
r = run(["--texts-from", os.path.join(work, "queries.txt"), "-o", os.path.join(work, "texts.npy")])
t = np.load(os.path.join(work, "texts.npy"))
index.add(t)
names = paths + [f"text:{s}" for s in queries]
hits = []
for s in queries:
    r = run(["--text", s, "-f", "f32"])
    v = np.frombuffer(r.stdout, "<f4").reshape(1, -1)
    _, ids = index.search(v, 1)
    hits.append(names[ids[0][0]])
check(hits == [f"text:{s}" for s in queries], f"each text row is found first by its own text ({hits})")

# the README's story snippet exactly as printed, in a folder of fewer than 5 photos whose names are not UTF-8 or hold
# a form feed (session 28: it read the names as text with splitlines() and printed FAISS's -1 padding as a hit)
import re  # noqa: E402

readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
m = re.search(r"## Search a photo folder by text.*?python3 - <<'PY'\n(.*?)\nPY\n", readme, re.S)
story = os.path.join(os.fsencode(work), b"story")
os.makedirs(os.path.join(story, b"photos"))
odd = [b"a\xff.png", b"b\x0cfeed.png"]
for n, src in zip(odd, ["zs0.png", "zs1.png"]):
    shutil.copy(os.path.join(FIX, src), os.path.join(story, b"photos", n))
r1 = run(["photos/", "-o", "photos.npy"], cwd=story)
r2 = run(["--text", "a dog on a beach", "-o", "query.npy"], cwd=story)
if not m:
    check(False, "README: the search story has a python3 - <<'PY' block")
else:
    r = subprocess.run([sys.executable, "-"], input=m.group(1).encode(), cwd=story, capture_output=True, timeout=120)
    lines = [ln for ln in r.stdout.decode(errors="surrogateescape").split("\n") if ln]  # a form feed is in a name
    want = sorted(os.fsdecode(b"photos/" + n) for n in odd)
    got = sorted(ln.split("  ", 1)[1] for ln in lines if "  " in ln)
    scores_ok = all(-1.001 <= float(ln.split("  ", 1)[0]) <= 1.001 for ln in lines if "  " in ln)
    check(r1.returncode == 0 and r2.returncode == 0 and r.returncode == 0 and got == want and scores_ok,
          f"the README's search snippet as printed: one line per photo, exact names, cosines in [-1, 1] "
          f"(exit {r.returncode}, {lines!r}, {r.stderr.decode(errors='replace')[-200:]!r})")
done()
