#!/usr/bin/env python3
"""scripts/make_tokenizer_fixtures.py — reference token ids for tests/test_tokenizer.c, from Hugging Face's own code.

The real Gemma tokenizer.json of google/siglip2-base-patch16-224 cannot be downloaded here, so this script builds
tokenizers in the same configuration (docs/tokenizer.md) and has the `tokenizers` library, and transformers'
GemmaTokenizer on top of it, encode a few thousand strings:

  trained     BPE with byte fallback trained (tokenizers' BpeTrainer) on ~3.5 MB of real text: the first 3 MB
              of the Python 3.11 standard library sources (/usr/lib/python3.11/*.py, sorted) and X11's en_US.UTF-8
              Compose table (many non-ASCII characters). Gemma's layout: <pad> <eos> <bos> <unk> <mask> at 0..4,
              Gemma's control tokens, "<0xNN>" byte tokens with "<0x09>" replaced by a tab (as GemmaConverter
              does), normalizer Replace(" " -> "\\u2581"), pre-tokenizer Split(" ", merged_with_previous),
              post-processor "$A <eos>", fuse_unk, byte_fallback.
  synth256k   the deterministic 256,000-entry tokenizer of tests/synth_tokenizer.h (written by
              build/tools/sg_synth_tokenizer, so the test rebuilds the very same bytes; its FNV-1a 64 is recorded).
  variants/*  small tokenizers (trained on whole lines with a 700-entry vocabulary; every sixth string) that each change one
              component, to cover what Gemma's file does not use but the C reader accepts: legacy "a b" merges,
              Prepend, every Split behavior, "<bos> $A <eos>" and multi-id templates, no post-processor, no byte
              fallback, no unk token, ignore_merges, added tokens with lstrip / rstrip / normalized = true, and
              missing byte tokens (unknown-token fusing).

For every string, two references are recorded: the ids the processor call gives (padding="max_length",
max_length=64, truncation=True: tokenizers' enable_truncation(64) + enable_padding(length=64, pad_id=<pad>)), and
the ids without truncation or padding (long-text coverage). For trained and synth256k the script also loads
the directory with transformers (AutoTokenizer, a SigLIP2-like config.json / tokenizer_config.json /
preprocessor_config.json) and asserts that its output is identical, and that it does not lower-case.

Output (tests/fixtures/tokenizer/): strings.bin, trained.json, trained.ids, synth256k.ids, variants/NAME.json +
NAME.ids, README.md (versions, counts). File formats are described in tests/test_tokenizer.c.

Run from the repository root after `make` (needs build/tools/sg_synth_tokenizer):
    pip install tokenizers transformers   # reference only, never at test time
    python3 scripts/make_tokenizer_fixtures.py
"""
import glob
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

import tokenizers
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
MAX_LEN = 64
SEED = 20260214
SP = "\u2581"

SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "[@BOS@]"] + [f"<unused{i}>" for i in range(20)] + [
    "<start_of_turn>", "<end_of_turn>"]
NEWLINES = ["\n" * k for k in range(1, 9)]
SPACE_RUNS = [SP * k for k in range(2, 9)]
TAGS = ["<table>", "</table>", "<tr>", "<td>", "<h1>", "</h1>", "<b>", "</b>", "<br>"]


# ---------------------------------------------------------------------------------------------------------------
# corpus and training

def corpus_lines():
    """The training text: Python stdlib sources (first 3 MB, files sorted) and the X11 Compose table."""
    lines, total = [], 0
    for path in sorted(glob.glob("/usr/lib/python3.11/*.py")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                lines.append(line.rstrip("\n"))
                total += len(line)
        if total > 3_000_000:
            break
    with open("/usr/share/X11/locale/en_US.UTF-8/Compose", encoding="utf-8", errors="replace") as f:
        lines += [l.rstrip("\n") for l in f]
    return lines


def train_bpe(lines, vocab_size, limit_alphabet=600, whole_lines=False):
    """BpeTrainer on the lines, with Gemma's space handling (pieces start with \\u2581, like SentencePiece), or
    with whole lines as words (whole_lines: merges then also span \\u2581, so the Split behaviors of the
    variants give different ids)."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", SP)
    if not whole_lines:
        tok.pre_tokenizer = pre_tokenizers.Split(SP, behavior="merged_with_next")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, special_tokens=[],
                                  limit_alphabet=limit_alphabet, max_token_length=16)
    tok.train_from_iterator(lines, trainer=trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    pieces = sorted(model["vocab"], key=model["vocab"].get)
    return pieces, merges


def gemma_layout(pieces, merges, drop_bytes=()):
    """Vocab in Gemma's order: specials, control pieces, byte tokens (tab literal for 0x09), learned pieces."""
    vocab = {}

    def add(s):
        if s not in vocab:
            vocab[s] = len(vocab)

    for s in SPECIALS + NEWLINES + SPACE_RUNS + TAGS:
        add(s)
    for b in range(256):
        if b in drop_bytes:
            continue
        add("\t" if b == 9 else f"<0x{b:02X}>")
    for p in pieces:
        add(p)
    # Every merge's halves and result must exist (they do for a trained model; keep the check).
    for a, b in merges:
        assert a in vocab and b in vocab and a + b in vocab, (a, b)
    return vocab


def build_tokenizer(vocab, merges, *, added=None, normalizer="gemma", pre="gemma", post="eos", byte_fallback=True,
                    fuse_unk=True, unk="<unk>", ignore_merges=False):
    model = models.BPE(vocab=vocab, merges=merges, unk_token=unk, fuse_unk=fuse_unk, byte_fallback=byte_fallback,
                       ignore_merges=ignore_merges)
    tok = Tokenizer(model)
    if normalizer == "gemma":
        tok.normalizer = normalizers.Replace(" ", SP)
    elif normalizer is not None:
        tok.normalizer = normalizer
    if pre == "gemma":
        tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous", invert=False)
    elif pre is not None:
        tok.pre_tokenizer = pre
    if post == "eos":
        tok.post_processor = processors.TemplateProcessing(single="$A:0 <eos>:0", pair="$A:0 <eos>:0 $B:1 <eos>:1",
                                                           special_tokens=[("<eos>", vocab["<eos>"])])
    elif post is not None:
        tok.post_processor = post
    tok.decoder = decoders.Sequence([decoders.Replace(SP, " "), decoders.ByteFallback(), decoders.Fuse()])
    if added is None:
        added = [AddedToken(s, special=True, normalized=False) for s in SPECIALS] + \
                [AddedToken(s, special=False, normalized=False) for s in NEWLINES[:4] + TAGS]
    tok.add_tokens(added)
    return tok


# ---------------------------------------------------------------------------------------------------------------
# test strings

CAPTION_WORDS = {
    "adj": ["red", "small", "old", "happy", "Blue", "GREEN", "wooden", "shiny", "Tiny", "fluffy", "dark", "bright"],
    "noun": ["dog", "cat", "car", "house", "tree", "Horse", "bird", "city", "beach", "mountain", "PERSON", "bicycle",
             "train", "flower", "plate of food", "painting", "photo"],
    "place": ["beach", "park", "street", "kitchen", "forest", "snow", "river", "table", "sky", "road", "garden"],
    "prep": ["on", "in", "near", "under", "next to", "behind", "with"],
}
ACCENTED = ["café", "naïve", "résumé", "Ångström", "São Paulo", "Zürich", "Ελληνικά", "Привет мир", "Straße",
            "mañana", "Crème brûlée", "Dvořák", "Łódź", "İstanbul", "ﬁancé", "e\u0301", "a\u0308o\u0308u\u0308",
            "ÀÉÎÕÜ", "Æsir", "øre", "œuvre", "Việt Nam", "ǅ", "ΣΊΣΥΦΟΣ", "ß", "ﬀ"]
SCRIPTS = [(0x4E00, 0x9FFF), (0x3040, 0x309F), (0x30A0, 0x30FF), (0xAC00, 0xD7A3), (0x0E00, 0x0E7F),
           (0x0600, 0x06FF), (0x05D0, 0x05EA), (0x0900, 0x097F), (0x0400, 0x04FF), (0x0370, 0x03FF)]
EMOJI = ["😀", "🐶", "🐱", "🌸", "🚗", "🏖️", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "🇯🇵", "❤️", "✨", "🧑‍💻", "🏳️‍🌈", "😀😃😄",
         "\U0001F9D1\u200D\U0001F680", "\u263A\uFE0F", "#\uFE0F\u20E3", "🦄", "🍕"]
CONTROLS = [chr(c) for c in range(0, 32)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)] + \
           ["\u200b", "\u200c", "\u200d", "\ufeff", "\u2028", "\u2029", "\u00ad", "\u202e", "\ufffd", "\ufffe"]
SPACES = [" ", "  ", "   ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2003", SP, SP + SP, " \t ", "\n\n", "\v", "\f"]


def specials_strings(rng):
    toks = SPECIALS + TAGS + NEWLINES[:4] + ["<sep>", " <q>", "<q>", SP + "<q>", "<extra_id>", "[LS]", "<0x41>",
                                             "<0xF0>", "<a>", "<a><b>", "ab", " x "]
    near = ["<eos", "eos>", "<EOS>", "<<eos>>", "< eos>", "<eos >", "<pad><pad>", "<unused>", "<unused100>",
            "<start_of_turn", "</table", "<h1 >", "[@BOS@", "<bos><eos>", "<sep><sep>", "  <sep>  ", "x<sep>y",
            "x <sep> y", "\t<sep>\n", "\u3000<sep>\u3000", "a  <q>", "a <q>", "a<q>", "[LS]x", "  [LS]", "\n[LS]",
            " <extra_id>  z", "<a><b>c", "<a>b", " x  x ", "x x x"]
    out = list(toks) + near
    for _ in range(300):
        parts = []
        for _ in range(rng.randint(1, 6)):
            r = rng.random()
            if r < 0.4:
                parts.append(rng.choice(toks))
            elif r < 0.6:
                parts.append(rng.choice(near))
            elif r < 0.8:
                parts.append(rng.choice(["hello", "a photo", " ", "user\n", "x", "  ", "DOG", "🐶", "é"]))
            else:
                parts.append(rng.choice(SPACES))
        out.append("".join(parts))
    return out


def random_unicode(rng, n):
    out = []
    for _ in range(n):
        cp = rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x24F), rng.randint(0x370, 0x1FFF),
                         rng.randint(0x2000, 0xD7FF), rng.randint(0xE000, 0xFFFD), rng.randint(0x10000, 0x10FFFF),
                         rng.randint(0x1F300, 0x1FAFF), rng.randint(0, 0x1F)])
        out.append(chr(cp))
    return "".join(out)


def make_strings(lines):
    rng = random.Random(SEED)
    s = ["", " ", "  ", "\n", SP, "a", "A", "<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "a photo of a dog",
         "A photo of a dog.", "a dog on a beach at sunset", "This is a photo of two cats.", "🐶", "富士山",
         "hello world", "Hello World", "HELLO WORLD"]
    s += [chr(c) for c in range(128)]
    s += [chr(c) for c in range(0xA0, 0x180)]
    for _ in range(700):
        w = CAPTION_WORDS
        cap = rng.choice(["a photo of a {adj} {noun} {prep} the {place}", "{adj} {noun}", "a {noun}",
                          "This is a photo of a {noun}.", "two {noun}s {prep} a {place}", "{noun} {prep} {place}",
                          "A {adj} {noun}, {prep} the {place}!"])
        cap = cap.format(**{k: rng.choice(v) for k, v in w.items()})
        r = rng.random()
        if r < 0.15:
            cap = cap.upper()
        elif r < 0.3:
            cap = cap.title()
        s.append(cap)
    for _ in range(600):
        line = rng.choice(lines)
        if rng.random() < 0.3:
            line = line + rng.choice(SPACES) + rng.choice(lines)
        s.append(line)
    for _ in range(300):
        s.append(" ".join(rng.choice(ACCENTED) for _ in range(rng.randint(1, 5))))
    for _ in range(350):
        lo, hi = rng.choice(SCRIPTS)
        t = "".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 25)))
        if rng.random() < 0.4:
            t = t[:len(t) // 2] + " " + t[len(t) // 2:]
        s.append(t)
    for _ in range(300):
        s.append("".join(rng.choice(EMOJI + [" ", "a", "dog ", "\u200d", "\ufe0f"]) for _ in range(rng.randint(1, 8))))
    for _ in range(300):
        s.append("".join(rng.choice(CONTROLS + ["a", "b", " ", "é", "🐶"]) for _ in range(rng.randint(1, 12))))
    for _ in range(300):
        s.append("".join(rng.choice(SPACES + ["a", "dog", "x", "é"]) for _ in range(rng.randint(1, 14))))
    s += specials_strings(rng)
    for _ in range(500):
        s.append(random_unicode(rng, rng.randint(1, 30)))
    for _ in range(200):
        s.append("".join(chr(rng.randint(0x20, 0x7E)) for _ in range(rng.randint(1, 60))))
    # Long text: truncation at 64, and long words through BPE (the whole query is one piece for Gemma).
    longs = [Repeat("a", 5000), Repeat(" ", 3000), Repeat("🐶", 800), Repeat("\n", 500), Repeat(SP, 1000),
             Repeat("ab", 3000), Repeat("<eos>", 200), Repeat("Ελληνικά ", 400), Repeat("富士山", 700),
             Repeat("x ", 2000), Repeat("a photo of a dog. ", 300), Repeat("\t\n ", 700), Repeat("é", 2500),
             Repeat("\x00", 300), Repeat("<unused1>x", 100)]
    for _ in range(30):
        parts = []
        target = rng.choice([300, 1000, 2500, 5000])
        while sum(map(len, parts)) < target:
            parts.append(rng.choice(lines) if rng.random() < 0.7 else random_unicode(rng, 40))
        longs.append(" ".join(parts)[:target])
    s += longs
    # Every string must survive UTF-8 (lone surrogates cannot; none are generated).
    for t in s:
        t.encode("utf-8")
    return s


# ---------------------------------------------------------------------------------------------------------------
# references and file writing

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def reference_ids(tok, strings, pad_id):
    """[(count before truncation, full ids, ids of the max_length=64 call)] for each string."""
    full_tok = Tokenizer.from_str(tok.to_str())
    full_tok.no_truncation()
    full_tok.no_padding()
    cut_tok = Tokenizer.from_str(tok.to_str())
    cut_tok.enable_truncation(MAX_LEN)
    cut_tok.enable_padding(length=MAX_LEN, pad_id=pad_id, pad_token="<pad>")
    out = []
    for s in strings:
        full = full_tok.encode(s).ids
        cut = cut_tok.encode(s).ids
        assert len(cut) == MAX_LEN
        out.append((len(full), full, cut))
    return out


def fnv64_ids(ids):
    """FNV-1a 64 over the ids as little-endian int32 bytes (what the C test hashes its own ids with)."""
    h = 1469598103934665603
    for b in struct.pack(f"<{len(ids)}i", *ids):
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def write_ids(path, refs, pad_id, fingerprint=0):
    """SGTI: magic, u32 count, u64 fingerprint; per string: varint count (ids before truncation), then
         count <= 64: the count ids (varints), which the script checked are exactly what HF's 64-id call gives
                      before its padding (pad ids follow);
         count > 64:  u64 FNV-1a of the full untruncated id sequence, then the 64 ids HF's call gives."""
    data = bytearray(b"SGTI" + struct.pack("<IQ", len(refs), fingerprint))
    for count, full, cut in refs:
        data += varint(count)
        if count <= MAX_LEN:
            assert cut == full + [pad_id] * (MAX_LEN - len(full))
            for i in full:
                data += varint(i)
        else:
            data += struct.pack("<Q", fnv64_ids(full))
            for i in cut:
                data += varint(i)
    with open(path, "wb") as f:
        f.write(data)


def write_strings(path, strings):
    """SGTS: magic, u32 count; per string: u32 n, then n bytes of UTF-8; or, for a string that is one pattern
    repeated, u32 (n | 0x80000000), u32 repeats, n bytes of the pattern."""
    data = bytearray(b"SGTS" + struct.pack("<I", len(strings)))
    for s in strings:
        if isinstance(s, Repeat):
            b = s.pattern.encode("utf-8")
            data += struct.pack("<II", len(b) | 0x80000000, s.times) + b
        else:
            b = s.encode("utf-8")
            data += struct.pack("<I", len(b)) + b
    with open(path, "wb") as f:
        f.write(data)


class Repeat(str):
    """A long test string stored as pattern x times (so strings.bin stays small)."""

    def __new__(cls, pattern, times):
        obj = super().__new__(cls, pattern * times)
        obj.pattern, obj.times = pattern, times
        return obj


def transformers_check(tok_json_path, strings, refs, pad_id, name):
    """Loads the directory as transformers does for google/siglip2-base-patch16-224 and compares."""
    import transformers
    from transformers import AutoTokenizer
    with tempfile.TemporaryDirectory() as d:
        with open(tok_json_path, encoding="utf-8") as f:
            tj = json.load(f)
        with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tj, f, ensure_ascii=False)
        added = {str(t["id"]): {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word",
                                                   "special")} for t in tj["added_tokens"]}
        # tokenizer_config.json as transformers' convert_siglip2_to_hf.get_siglip2_tokenizer() saves it
        # (GemmaTokenizerFast, add_bos_token=False, add_eos_token=True, padding_side="right").
        cfg = {"tokenizer_class": "GemmaTokenizer", "add_bos_token": False, "add_eos_token": True,
               "padding_side": "right", "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>",
               "unk_token": "<unk>", "mask_token": "<mask>", "model_max_length": 1000000000000000019884624838656,
               "model_input_names": ["input_ids"], "added_tokens_decoder": added, "clean_up_tokenization_spaces": False,
               "spaces_between_special_tokens": False, "processor_class": "SiglipProcessor"}
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump(cfg, f)
        # config.json of google/siglip2-base-patch16-224 (model_type "siglip", docs/tokenizer.md).
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump({"initializer_factor": 1.0, "model_type": "siglip",
                       "text_config": {"model_type": "siglip_text_model", "vocab_size": 256000},
                       "vision_config": {"model_type": "siglip_vision_model"}}, f)
        tk = AutoTokenizer.from_pretrained(d)
        assert type(tk).__name__ == "GemmaTokenizer", type(tk).__name__
        assert tk.pad_token_id == pad_id
        bad = 0
        for s, (count, full, cut) in zip(strings, refs):
            got = tk(s, padding="max_length", max_length=MAX_LEN, truncation=True)["input_ids"]
            got_full = tk(s)["input_ids"]
            if got != cut or got_full != full:
                bad += 1
                if bad <= 5:
                    print(f"  transformers differs on {s[:40]!r}: {got[:12]} vs {cut[:12]}", file=sys.stderr)
        up = tk("HELLO World", padding="max_length", max_length=MAX_LEN, truncation=True)["input_ids"]
        low = tk("hello world", padding="max_length", max_length=MAX_LEN, truncation=True)["input_ids"]
        print(f"{name}: transformers {transformers.__version__} {type(tk).__name__}: {len(strings) - bad} of "
              f"{len(strings)} strings identical to tokenizers; lower-cases: {up == low}")
        assert bad == 0
        assert up != low, "the processor lower-cased; docs/tokenizer.md says it does not for this checkpoint"


# ---------------------------------------------------------------------------------------------------------------
# variants

def variants(pieces, merges):
    """name -> tokenizers.Tokenizer, each changing one component of the small Gemma-like tokenizer."""
    v = {}
    base = gemma_layout(pieces, merges)
    v["legacy_merges"] = ("legacy", build_tokenizer(base, merges))
    v["prepend"] = (None, build_tokenizer(base, merges, normalizer=normalizers.Sequence(
        [normalizers.Prepend(SP), normalizers.Replace(" ", SP)]), pre=None))
    # Split on "\u2581" after Gemma's normalizer: learned pieces start with it, so each behavior gives other ids.
    for beh in ["removed", "isolated", "merged_with_previous", "merged_with_next", "contiguous"]:
        v["split_" + beh] = (None, build_tokenizer(base, merges, pre=pre_tokenizers.Split(SP, behavior=beh,
                                                                                           invert=False)))
    v["no_normalizer_split_space"] = (None, build_tokenizer(base, merges, normalizer=None, pre=pre_tokenizers.Split(
        " ", behavior="merged_with_next", invert=False)))
    v["split_sequence"] = (None, build_tokenizer(base, merges, pre=pre_tokenizers.Sequence([
        pre_tokenizers.Split(SP, behavior="merged_with_next"), pre_tokenizers.Split("e", behavior="isolated")])))
    v["bos_eos"] = (None, build_tokenizer(base, merges, post=processors.TemplateProcessing(
        single="<bos> $A <eos>", pair="<bos> $A <eos> $B <eos>",
        special_tokens=[("<bos>", base["<bos>"]), ("<eos>", base["<eos>"])])))
    v["multi_id_special"] = (None, build_tokenizer(base, merges, post=processors.TemplateProcessing(
        single="[X] $A [Y]", pair="[X] $A [Y] $B:1 [Y]:1",
        special_tokens=[{"id": "[X]", "ids": [base["<bos>"], base["<unused3>"]], "tokens": ["<bos>", "<unused3>"]},
                        {"id": "[Y]", "ids": [base["<eos>"], base["<unused4>"], 7], "tokens": ["<eos>", "a", "b"]}])))
    v["no_post"] = (None, build_tokenizer(base, merges, post=None))
    v["no_byte_fallback"] = (None, build_tokenizer(base, merges, byte_fallback=False, fuse_unk=False))
    v["no_unk_token"] = (None, build_tokenizer(base, merges, byte_fallback=False, unk=None))
    v["ignore_merges"] = (None, build_tokenizer(base, merges, ignore_merges=True))
    few_bytes = gemma_layout(pieces, merges, drop_bytes=set(range(0x80, 0x100)) - {0xC3, 0xA9, 0xE2, 0x96, 0x81})
    v["missing_bytes_fused_unk"] = (None, build_tokenizer(few_bytes, merges))
    v["missing_bytes_unfused_unk"] = (None, build_tokenizer(few_bytes, merges, fuse_unk=False))
    flags = [AddedToken(s, special=True, normalized=False) for s in SPECIALS] + [
        AddedToken("<sep>", special=True, normalized=False, lstrip=True, rstrip=True),
        AddedToken(" <q>", special=False, normalized=True),
        AddedToken("<q>", special=False, normalized=True, lstrip=True),
        AddedToken("<extra_id>", special=True, normalized=False, rstrip=True),
        AddedToken("[LS]", special=False, normalized=False, lstrip=True),
        AddedToken("<a>", special=False, normalized=False), AddedToken("<a><b>", special=False, normalized=False),
        AddedToken("ab", special=False, normalized=True), AddedToken(" x ", special=False, normalized=False,
                                                                    rstrip=True),
        AddedToken("dog", special=False, normalized=True, lstrip=True, rstrip=True)]
    v["added_flags"] = (None, build_tokenizer(base, merges, added=flags))
    return v


def main():
    os.makedirs(os.path.join(OUT, "variants"), exist_ok=True)
    lines = corpus_lines()
    strings = make_strings(lines)
    write_strings(os.path.join(OUT, "strings.bin"), strings)
    print(f"{len(strings)} strings, {sum(len(s.encode()) for s in strings)} bytes of UTF-8")

    # trained
    pieces, merges = train_bpe(lines, 8000)
    vocab = gemma_layout(pieces, merges)
    tok = build_tokenizer(vocab, merges)
    path = os.path.join(OUT, "trained.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(tok.to_str(pretty=False))
    refs = reference_ids(tok, strings, vocab["<pad>"])
    write_ids(os.path.join(OUT, "trained.ids"), refs, vocab["<pad>"])
    print(f"trained: vocab {len(vocab)}, merges {len(merges)}, "
          f"{sum(c > MAX_LEN for c, _, _ in refs)} strings longer than {MAX_LEN} tokens")
    transformers_check(path, strings, refs, vocab["<pad>"], "trained")

    # synth256k
    subprocess.run(["make", "-s", "build/tools/sg_synth_tokenizer"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as d:
        sp = os.path.join(d, "synth.json")
        subprocess.run([os.path.join(ROOT, "build/tools/sg_synth_tokenizer"), sp], check=True, stdout=subprocess.PIPE)
        with open(sp, "rb") as f:
            raw = f.read()
        fnv = 1469598103934665603
        for byte in raw:
            fnv = ((fnv ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        stok = Tokenizer.from_file(sp)
        pad = stok.token_to_id("<pad>")
        srefs = reference_ids(stok, strings, pad)
        write_ids(os.path.join(OUT, "synth256k.ids"), srefs, pad, fnv)
        print(f"synth256k: {len(raw)} bytes, fnv64 {fnv:016x}, vocab {stok.get_vocab_size()}")
        transformers_check(sp, strings, srefs, pad, "synth256k")

    # variants: a smaller vocabulary, every sixth string
    vpieces, vmerges = train_bpe(lines, 700, limit_alphabet=250, whole_lines=True)
    vstrings = strings[::6]
    for name, (fmt, vt) in variants(vpieces, vmerges).items():
        js = json.loads(vt.to_str())
        if fmt == "legacy":
            js["model"]["merges"] = [" ".join(m) for m in js["model"]["merges"]]
            Tokenizer.from_str(json.dumps(js))  # the library still accepts it
        vpath = os.path.join(OUT, "variants", name + ".json")
        with open(vpath, "w", encoding="utf-8") as f:
            f.write(json.dumps(js, ensure_ascii=False, indent=2 if fmt == "legacy" else None))
        vt2 = Tokenizer.from_file(vpath)
        pad = vt2.token_to_id("<pad>")
        write_ids(os.path.join(OUT, "variants", name + ".ids"), reference_ids(vt2, vstrings, pad), pad)
        print(f"variant {name}: {len(vstrings)} strings")

    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write(f"""# Tokenizer fixtures

Written by `scripts/make_tokenizer_fixtures.py` (read its header for what each file is) with tokenizers
{tokenizers.__version__} and transformers {__import__('transformers').__version__}; checked by `tests/test_tokenizer.c`.

| file | what |
|---|---|
| `strings.bin` | {len(strings)} test strings (UTF-8): captions, source lines, accents, CJK and other scripts, emoji, control characters, white-space runs, special-token look-alikes, random code points, {len([s for s in strings if len(s) > 250])} long texts |
| `trained.json` | BPE with byte fallback trained on real text, Gemma's configuration, {len(vocab)} ids |
| `trained.ids`, `synth256k.ids` | HF's ids for every string: without truncation, and from the max_length=64 processor call |
| `variants/*.json`, `*.ids` | small tokenizers changing one component each; ids for every sixth string |

The 256k tokenizer itself is not stored: the test rebuilds it from `tests/synth_tokenizer.h` and checks its
FNV-1a 64 against the one in `synth256k.ids`.
""")


if __name__ == "__main__":
    main()
