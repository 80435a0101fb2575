"""tests/test_cli_text.py — text queries and zero-shot labels through the command, against Hugging Face.

CPU backend, tests/fixtures/tinytext and tinytext_nomask (scripts/make_text_fixtures.py: one tiny SiglipModel +
Gemma-configuration tokenizer.json, HF fp32 references; tinytext's tokenizer_config.json has the class default
model_input_names, so HF masks the pads, tinytext_nomask's lists only input_ids, as google/siglip2-base-patch16-224's
does, so HF attends to every position). End to end, so the C tokenizer, the mask rule read from
tokenizer_config.json and the text tower are checked together:
  - both fixtures: every fixture query (ASCII, accents, CJK, emoji, empty, control characters, > 64 tokens) given
    with --text: cosine >= 0.99999 and max |d| <= 1e-4 to HF get_text_features (--no-normalize), rows carry the
    exact text; -v names the truncated query and says whether the pads are masked; the other fixture's
    references are not matched (the rule is what makes the difference);
  - a checkpoint without tokenizer_config.json gets the class default (the mask), a malformed one is exit 2
    naming the file, for --text and --labels;
  - --normalize rows are unit-norm and the same direction;
  - --texts-from: a file with CRLF line ends, stdin, -0 (NUL-separated, a newline inside a query), empty lines
    kept as empty queries; every output format read back (json, jsonl, npy + .texts, fbin, fvecs, f32), the
    rows identical to the JSONL ones;
  - bad input: invalid UTF-8 fails alone (exit 1, the others written; --on-error null keeps a null row,
    --on-error fail stops), a query with a newline cannot go to a binary format's .texts list, a vision-only
    checkpoint and a checkpoint without tokenizer.json fail with exit 2 naming what and where;
  - zero-shot, both fixtures: --labels on the fixture's PNGs gives the HF pipeline's scores within 1e-4, sorted,
    --top-k;
    --labels-from, --template ({0}, {:} and {0:} give exactly the rows of {}, as Python's str.format; another
    field is refused naming it, a template that is not UTF-8 naming the template), and the usage errors (binary
    format, text run, template without {});
  - --resume of a --labels JSONL (session 27: refused as "not ours" before): continues with --labels, each image
    once and every row with its labels; refused untouched (exit 2) without --labels, and with labels the rows
    cannot have come from (a label not among the run's, or another count a row than min(--top-k, labels)); --precision on a text run
    is said to be ignored.
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sgtest import BIN, ROOT, check, done, fixture, fresh_dir, on_pty, rows_on_terminal  # noqa: E402

import numpy as np  # noqa: E402

FIX = fixture("tinytext")
W = ["--backend", "cpu", "--weights", FIX, "-q"]
TOL_COS, TOL_ABS, TOL_ZS = 0.99999, 1e-4, 1e-4
work = fresh_dir("cli_text")

queries = json.load(open(os.path.join(FIX, "queries.json"), encoding="utf-8"))
ref = np.fromfile(os.path.join(FIX, "text_features.f32"), "<f4").reshape(len(queries), -1)
P = ref.shape[1]
ntok = np.fromfile(os.path.join(FIX, "text_ntok.i32"), "<i4")


def run(args, quiet=True, **kw):
    return subprocess.run([BIN] + (W if quiet else W[:-1]) + args, capture_output=True, timeout=600, **kw)


def out(name):
    return os.path.join(work, name)


def cos(a, b):
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


# ---- every fixture query, raw features against HF, for both mask rules --------------------------------------
FIX_NOMASK = os.path.join(ROOT, "tests/fixtures/tinytext_nomask")
REFS = {f: np.fromfile(os.path.join(f, "text_features.f32"), "<f4").reshape(len(queries), -1)
        for f in (FIX, FIX_NOMASK)}


def embed_all(fix, extra=()):
    """Every fixture query through --text with the checkpoint fix: (process result, raw rows or None)."""
    args = ["--no-normalize", "-f", "jsonl", "-v", "--weights", fix] + list(extra)
    for q in queries:
        args += ["--text", q]
    r = run(args, quiet=False)
    rows = [json.loads(x) for x in r.stdout.decode().splitlines()] if r.returncode == 0 else []
    raw = np.array([x["embedding"] for x in rows], dtype=np.float32) if len(rows) == len(queries) else None
    return r, rows, raw


for fix, masked in ((FIX, True), (FIX_NOMASK, False)):
    name, fref = os.path.basename(fix), REFS[fix]
    r, rows, raw = embed_all(fix)
    check(r.returncode == 0 and raw is not None,
          f"{name}: {len(queries)} queries with --text: exit 0, one row each"
          f"{'' if r.returncode == 0 else f' (got {r.returncode}: {r.stderr[-300:]!r})'}")
    for i, q in enumerate(queries):
        if raw is None:
            break
        c, d = cos(raw[i], fref[i]), float(np.abs(raw[i] - fref[i]).max())
        check(rows[i]["text"] == q and c >= TOL_COS and d <= TOL_ABS,
              f"{name} query {i} {q[:24]!r} ({ntok[i]} tokens): text kept, cosine {c:.8f} (>= {TOL_COS}), max |d| "
              f"{d:.2e} (<= {TOL_ABS}) to HF get_text_features")
    other = REFS[FIX_NOMASK if masked else FIX]
    if raw is not None:
        c_other = min(cos(raw[i], other[i]) for i in range(len(queries)))
        check(c_other < 0.9999, f"{name}: the rows do not match the other mask rule's HF references (worst cosine "
              f"{c_other:.4f}): the rule decides")
    say = b"pad positions are masked" if masked else b"every position is attended"
    check(b"text attention: " in r.stderr and say in r.stderr and f"{name}/tokenizer_config.json".encode() in r.stderr,
          f"{name}: -v says {say.decode()!r} and names its tokenizer_config.json")
    long_i = int(np.argmax(ntok))
    check(ntok[long_i] > 64 and b"truncated to 64" in r.stderr and f"query {long_i + 1} ".encode() in r.stderr,
          f"{name}: -v: the {ntok[long_i]}-token query {long_i + 1} is reported as truncated to 64")

# A checkpoint with no tokenizer_config.json: HF uses the tokenizer class's default (the mask).
bare = out("bare_ckpt")
os.makedirs(bare)
for f in ("config.json", "model.safetensors", "tokenizer.json"):
    shutil.copyfile(os.path.join(FIX_NOMASK, f), os.path.join(bare, f))
r, rows, raw = embed_all(bare)
worst = min(cos(raw[i], REFS[FIX][i]) for i in range(len(queries))) if raw is not None else 0
check(r.returncode == 0 and worst >= TOL_COS and b"the tokenizer class default" in r.stderr,
      f"no tokenizer_config.json: the class default applies (pads masked), tinytext's HF rows (worst cosine "
      f"{worst:.8f})")
for bad_cfg, why in (('{"model_input_names": ["input_ids"', b"not valid JSON"),
                     ('{"model_input_names": null}', b"model_input_names is null")):
    with open(os.path.join(bare, "tokenizer_config.json"), "w") as f:
        f.write(bad_cfg)
    r = run(["--weights", bare, "--text", "a dog"])
    r2 = run(["--weights", bare, "--labels", "dog,cat", os.path.join(FIX, "zs0.png")])
    named = (os.path.join(bare, "tokenizer_config.json")).encode()
    check(r.returncode == 2 and named in r.stderr and why in r.stderr and not r.stdout and
          r2.returncode == 2 and named in r2.stderr,
          f"tokenizer_config.json {bad_cfg!r}: --text and --labels exit 2 naming the file "
          f"({r.stderr.decode(errors='replace').strip()[-140:]!r})")

r = run(["-f", "jsonl"] + [a for q in queries[:4] for a in ("--text", q)])
norm = np.array([json.loads(x)["embedding"] for x in r.stdout.decode().splitlines()], dtype=np.float64)
check(r.returncode == 0 and norm.shape == (4, P) and np.allclose(np.linalg.norm(norm, axis=1), 1, atol=1e-6)
      and all(cos(norm[i], ref[i]) >= TOL_COS for i in range(4)),
      "--normalize (default): unit-norm rows in HF's direction")

# ---- --texts-from, formats --------------------------------------------------------------------------------
lines = ["a dog", "café crème brûlée", "", "一只狗在海滩上", "🐶 on a beach 🏖️"]
with open(out("q.txt"), "wb") as f:
    f.write("\r\n".join(lines).encode() + b"\r\n")
r = run(["--texts-from", out("q.txt"), "-f", "jsonl"])
base = [json.loads(x) for x in r.stdout.decode().splitlines()]
check(r.returncode == 0 and [x["text"] for x in base] == lines,
      f"--texts-from: CRLF stripped, the empty line kept as an empty query ({[x['text'] for x in base]})")
emb = np.array([x["embedding"] for x in base], dtype=np.float32)
by_text = {q: i for i, q in enumerate(queries)}
check(all(cos(emb[k], ref[by_text[q]]) >= TOL_COS for k, q in enumerate(lines) if q in by_text),
      "--texts-from rows equal the --text rows of the same queries (HF direction)")
r = run(["--texts-from", "-", "-f", "jsonl"], input="\n".join(lines).encode())
check(r.returncode == 0 and [json.loads(x)["text"] for x in r.stdout.decode().splitlines()] == lines,
      "--texts-from - (stdin), no final newline")
r = run(["--texts-from", "-", "-0", "-f", "jsonl"], input=b"two\nlines\0plain\0")
got = [json.loads(x)["text"] for x in r.stdout.decode().splitlines()]
check(r.returncode == 0 and got == ["two\nlines", "plain"], f"-0: NUL-separated, a newline inside a query ({got})")

r = run(["--texts-from", out("q.txt"), "-o", out("q.npy")])
x = np.load(out("q.npy")) if os.path.exists(out("q.npy")) else None
side = open(out("q.npy.texts"), encoding="utf-8").read().split("\n")[:-1] if os.path.exists(out("q.npy.texts")) else None
check(r.returncode == 0 and x is not None and x.shape == (len(lines), P) and np.array_equal(x, emb) and side == lines,
      f"npy: [{len(lines)}, {P}] identical to JSONL, FILE.texts lists the queries one per line")
for fmt in ["fbin", "fvecs", "f32", "json"]:
    r = run(["--texts-from", out("q.txt"), "-o", out(f"q.{fmt}")])
    if fmt == "fbin":
        raw_b = np.fromfile(out("q.fbin"), "<u4")
        y = raw_b[2:].view("<f4").reshape(-1, P) if raw_b[0] == len(lines) and raw_b[1] == P else None
    elif fmt == "fvecs":
        y = np.fromfile(out("q.fvecs"), "<i4").reshape(-1, P + 1)[:, 1:].view("<f4")
    elif fmt == "f32":
        y = np.fromfile(out("q.f32"), "<f4").reshape(-1, P)
    else:
        y = np.array([o["embedding"] for o in json.load(open(out("q.json"), encoding="utf-8"))], dtype=np.float32)
    check(r.returncode == 0 and y is not None and np.array_equal(y, emb), f"{fmt}: the same rows")

# ---- rows on the terminal the progress line is drawn on (as image runs: issue 14 item 5) ----------------------
many = sum([["--text", f"query {i}"] for i in range(12)], [])
rc, buf = on_pty([BIN] + W[:-1] + ["-b", "1", "-f", "jsonl"] + many)
rows, broken = rows_on_terminal(buf, "text")
check(rc == 0 and rows == 12 and b"/s" not in buf,
      f"rows on the same terminal, no --progress: no progress line drawn among them ({rows} rows, {broken} broken)")
rc, buf = on_pty([BIN] + W[:-1] + ["-b", "1", "-f", "jsonl", "--progress"] + many)
rows, broken = rows_on_terminal(buf, "text")
check(rc == 0 and rows == 12 and broken == 0 and b"queries/s" in buf and b"img/s" not in buf,
      f"with --progress the line counts queries and is cleared before each batch of rows ({rows} whole rows, "
      f"{broken} broken)")

# ---- bad input --------------------------------------------------------------------------------------------
bad = ["good one", b"caf\xe9".decode("latin-1"), "another"]
with open(out("bad.txt"), "wb") as f:
    f.write(b"good one\ncaf\xe9\nanother\n")
r = run(["--texts-from", out("bad.txt"), "-f", "jsonl"])
got = [json.loads(x)["text"] for x in r.stdout.decode().splitlines()]
check(r.returncode == 1 and got == ["good one", "another"] and b"query 2" in r.stderr and b"UTF-8" in r.stderr,
      f"invalid UTF-8: fails alone with exit 1, the others written ({r.stderr.decode(errors='replace').strip()!r})")
r = run(["--texts-from", out("bad.txt"), "-f", "jsonl", "--on-error", "null"])
got = [json.loads(x) for x in r.stdout.decode().splitlines()]
check(r.returncode == 1 and len(got) == 3 and got[1]["embedding"] is None and got[1]["text"] == "caf\ufffd",
      "--on-error null: a null row in place, its text with U+FFFD")
r = run(["--texts-from", out("bad.txt"), "-f", "jsonl", "--on-error", "fail"])
check(r.returncode == 1 and len(r.stdout.decode().splitlines()) == 1, "--on-error fail: stops after the first row")
r = run(["--text", "a\nb", "--text", "c", "-o", out("nl.npy")])
check(r.returncode == 1 and np.load(out("nl.npy")).shape == (1, P) and b"line break" in r.stderr,
      "a query with a newline cannot be listed in FILE.texts: it fails alone")
r = run(["--text", "x", "--weights", os.path.join(ROOT, "tests/fixtures/tiny16")])
check(r.returncode == 2 and b"no text tower" in r.stderr and b"tiny16/config.json" in r.stderr,
      f"vision-only checkpoint: exit 2 naming why and where ({r.stderr.decode().strip()[:160]!r})")
r = run(["--text", "x", "--weights", os.path.join(ROOT, "tests/fixtures/tiny196")])
check(r.returncode == 2 and b"tiny196/tokenizer.json" in r.stderr,
      f"no tokenizer.json: exit 2 saying where it looked ({r.stderr.decode().strip()[:120]!r})")
r = run(["--weights", os.path.join(ROOT, "tests/fixtures/tiny16"), os.path.join(ROOT, "tests/images/png_rgb.png")])
check(r.returncode == 0 and len(json.loads(r.stdout)["embedding"]) == 48,
      "the vision-only checkpoint still embeds images")
r = run(["--text", "x", os.path.join(FIX, "zs0.png")])
check(r.returncode == 2 and b"not both" in r.stderr, "images and texts in one run: usage error")

# ---- zero-shot ----------------------------------------------------------------------------------------------
for fix in (FIX, FIX_NOMASK):
    name = os.path.basename(fix)
    zs = json.load(open(os.path.join(fix, "zeroshot.json"), encoding="utf-8"))
    imgs = [os.path.join(fix, n) for n in zs["images"]]
    L = len(zs["labels"])
    r = run(["--weights", fix, "--labels", ",".join(zs["labels"]), "--top-k", str(L), "-f", "jsonl"] + imgs)
    rows = [json.loads(x) for x in r.stdout.decode().splitlines()]
    check(r.returncode == 0 and len(rows) == len(imgs), f"{name} --labels: {len(rows)} image rows")
    for i, row in enumerate(rows):
        labs = row.get("labels", [])
        worst = max(abs(x["score"] - zs["scores"][i][x["label"]]) for x in labs) if len(labs) == L else 1
        srt = all(labs[k]["score"] >= labs[k + 1]["score"] for k in range(len(labs) - 1))
        check(worst <= TOL_ZS and srt and len(row["embedding"]) == P,
              f"{name} zero-shot {zs['images'][i]}: {L} scores within {TOL_ZS} of HF's pipeline (max |d| "
              f"{worst:.2e}), sorted")
zs = json.load(open(os.path.join(FIX, "zeroshot.json"), encoding="utf-8"))
imgs = [os.path.join(FIX, n) for n in zs["images"]]
L = len(zs["labels"])
with open(out("labels.txt"), "w", encoding="utf-8") as f:
    f.write("\n".join(zs["labels"]) + "\r\n\n")
r = run(["--labels-from", out("labels.txt"), "-f", "jsonl", imgs[0]])
row = json.loads(r.stdout) if r.returncode == 0 else {}
top = sorted(zs["scores"][0].items(), key=lambda kv: -kv[1])[:5]
check(r.returncode == 0 and [x["label"] for x in row.get("labels", [])] == [k for k, _ in top],
      "--labels-from (CRLF, blank line): default top 5, HF's order")
r = run(["--labels", "dog, cat", "--template", "{}", "--top-k", "1", "-f", "jsonl", imgs[0]])
check(r.returncode == 0 and len(json.loads(r.stdout)["labels"]) == 1, "--template {} and --top-k 1")
r = run(["--labels", "dog,cat", "-o", out("z.npy"), imgs[0]])
check(r.returncode == 2 and b"JSON" in r.stderr, "--labels with a binary format: usage error")
r = run(["--labels", "dog", "--template", "no field", imgs[0]])
check(r.returncode == 2 and b"{}" in r.stderr, "--template without {}: setup error")
# Python's str.format, which HF's pipeline uses, takes {0}, {:} and {0:} as {} (session 28: refused as "a lone
# '{'"): the same hypotheses, so the same scores, byte for byte
want = run(["--labels", ",".join(zs["labels"]), "--top-k", str(L), "--template", "a photo of {}!", "-f", "jsonl"] +
           imgs)
for t in ("a photo of {0}!", "a photo of {:}!", "a photo of {0:}!"):
    r = run(["--labels", ",".join(zs["labels"]), "--top-k", str(L), "--template", t, "-f", "jsonl"] + imgs)
    check(want.returncode == 0 and r.returncode == 0 and r.stdout == want.stdout and b'"score"' in r.stdout,
          f"--template {t!r}: exactly the rows of {{}} (exit {r.returncode}, {r.stderr.decode().strip()[-120:]!r})")
# another field is refused naming it, not as a lone brace; a template that is not UTF-8 is the template's error
for t in ("{!r}", "{1}", "{name}", "{:>5}", "{ }"):
    r = run(["--labels", "dog", "--template", "a " + t, imgs[0]])
    check(r.returncode == 2 and f"field {t} is not supported".encode() in r.stderr and r.stdout == b"",
          f"--template 'a {t}': exit 2 naming the field ({r.stderr.decode().strip()[-110:]!r})")
r = subprocess.run([os.fsencode(BIN)] + [os.fsencode(x) for x in W] +
                   [b"--labels", b"dog", b"--template", b"caf\xe9 {}", os.fsencode(imgs[0])], capture_output=True,
                   timeout=600)
check(r.returncode == 2 and b"--template" in r.stderr and b"UTF-8" in r.stderr and b"label" not in r.stderr,
      f"--template not UTF-8: exit 2 naming the template, not a label ({r.stderr.decode(errors='replace').strip()!r})")
r = run(["--labels", "dog,,cat", imgs[0]])
check(r.returncode == 2 and b"empty" in r.stderr, "--labels with an empty label: error")
r = run(["--labels", "dog", "--weights", os.path.join(ROOT, "tests/fixtures/tiny196"), os.path.join(FIX, "zs0.png")])
check(r.returncode == 2 and b"tokenizer.json" in r.stderr, "--labels on a checkpoint without tokenizer.json: exit 2")
# GPU-only options on a text run: said, not silently dropped (session 27: nothing was said before)
r = subprocess.run([BIN, "--weights", FIX, "--text", "hi", "--precision", "fp8", "-f", "jsonl"], capture_output=True,
                   timeout=600)
check(r.returncode == 0 and b"--precision" in r.stderr and b"ignored" in r.stderr,
      f"--precision fp8 on a text run: embedded, with a warning that it was ignored ({r.stderr.decode().strip()[:100]!r})")

# --resume of a --labels run: the rows the tool wrote with their labels are its own
lab = out("labels_resume.jsonl")
r = run(["--labels", "dog,cat", "-o", lab] + imgs)
full = open(lab, "rb").read().splitlines(keepends=True)
with open(lab, "wb") as f:
    f.writelines(full[:1])
r = run(["--labels", "dog,cat", "--resume", "-o", lab] + imgs)
rows = [json.loads(x) for x in open(lab, "rb").read().splitlines()]
check(r.returncode == 0 and sorted(x["path"] for x in rows) == sorted(imgs) and all(x.get("labels") for x in rows),
      f"--labels --resume continues a --labels file: {len(rows)} rows, each image once, all with labels "
      f"(exit {r.returncode}: {r.stderr.decode().strip()[-120:]})")
before = open(lab, "rb").read()
r = run(["--resume", "-o", lab] + imgs)
check(r.returncode == 2 and open(lab, "rb").read() == before and b"labels" in r.stderr,
      f"--resume without --labels on a --labels file: exit 2, untouched, says why (exit {r.returncode})")
# ... and only with labels its rows can have come from (session 28: --labels car,boat continued a dog,cat file, one
# file then held rows scored against two label sets): each row's labels must be among the run's, as many as it
# writes a row (min(--top-k, labels)); else exit 2, untouched, naming the line and the label
for labs, extra, says in (("car,boat", [], b':1: this row\'s label "'), ("dog", [], b"is not one of this run's 1"),
                          ("dog,cat", ["--top-k", "1"], b":1: this row has 2 zero-shot labels and this run writes 1")):
    r = run(["--labels", labs, "--resume", "-o", lab] + extra + imgs)
    check(r.returncode == 2 and open(lab, "rb").read() == before and says in r.stderr and b"--template" in r.stderr,
          f"--resume --labels {labs} {' '.join(extra)} on a dog,cat file: exit 2, untouched, saying {says.decode()!r} "
          f"(exit {r.returncode}: {r.stderr.decode().strip()[-150:]!r})")
with open(lab, "wb") as f:
    f.writelines(full[:1])
r = run(["--labels", "cat, dog,bird", "--top-k", "2", "--resume", "-o", lab] + imgs)
rows = [json.loads(x) for x in open(lab, "rb").read().splitlines()]
check(r.returncode == 0 and sorted(x["path"] for x in rows) == sorted(imgs),
      f"--resume --labels with the same labels in another order and one more (the rows cannot tell): continues "
      f"(exit {r.returncode}: {r.stderr.decode().strip()[-120:]!r})")
# --on-error null into a binary format: a query with a newline (FILE.texts cannot list it) fails alone with no row,
# the others are written (session 28: the run stopped, writing nothing); an empty --texts-from list exits 1, as an
# image run with nothing to embed does (it exited 0)
tnpy = out("nl_q.npy")
r = run(["--texts-from", "-", "-0", "-o", tnpy, "--on-error", "null"], input=b"a\0b\nc\0d\0")
texts = open(tnpy + ".texts", "rb").read() if os.path.exists(tnpy + ".texts") else None
trows = np.load(tnpy).shape[0] if os.path.exists(tnpy) else None
check(r.returncode == 1 and texts == b"a\nd\n" and trows == 2,
      f"--on-error null: a query with a newline fails alone, no row; the others written (exit {r.returncode}, "
      f"{trows} rows, {texts!r}, {r.stderr[-200:]!r})")
open(out("empty.txt"), "w").close()
r = run(["--texts-from", out("empty.txt"), "-f", "json"], quiet=False)
check(r.returncode == 1 and r.stdout.strip() == b"[]" and b"0 queries found" in r.stderr,
      f"an empty --texts-from list: [] and exit 1, saying so (exit {r.returncode}, {r.stderr[-120:]!r})")
done()
