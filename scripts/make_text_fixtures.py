#!/usr/bin/env python3
"""scripts/make_text_fixtures.py — a tiny SiglipModel with a text tower and tokenizer, and HF references for it.

Design: the C text encoder and the zero-shot scores are checked against Hugging Face transformers in fp32 on
the CPU, like the vision fixtures (scripts/make_fixtures.py, whose perturbation this reuses: every parameter
non-trivial). The fixture is a full SiglipModel (text tower whose projection feeds the vision tower's width,
so zero-shot works) plus a tokenizer.json in the Gemma configuration SigLIP2 uses (BPE with byte fallback,
Replace(" ", "▁") normaliser, <pad>=0 <eos>=1 <bos>=2 <unk>=3 <mask>=4, byte tokens <0x00>..<0xFF>), made with
the `tokenizers` library from a small BPE trained here, saved through transformers' GemmaTokenizer (<bos> first) with
right padding (what SigLIP2's processor does: the last position is a pad for short queries). References are
what HF's processor path gives: tokenizer(q, padding="max_length", max_length=64, truncation=True) -> whatever
it returns -> SiglipModel.get_text_features(**that).pooler_output, as the processor and the zero-shot pipeline
pass it on. Whether that includes an attention_mask is the tokenizer's model_input_names: two fixtures, one
model:
  tinytext/         tokenizer_config.json without model_input_names: GemmaTokenizer's class default
                    ["input_ids", "attention_mask"]: the pads are masked;
  tinytext_nomask/  the same weights and tokenizer.json, saved as google/siglip2-base-patch16-224's tokenizer
                    was (transformers convert_siglip2_to_hf.py get_siglip2_tokenizer(): model_input_names
                    ["input_ids"]): HF returns no mask and the text tower attends to every position, pads
                    included. Its references come from the tokenizer, processor, model and pipeline loaded from
                    that directory, so they record what HF does, not what this script assumes.

  python3 scripts/make_text_fixtures.py                 # writes tests/fixtures/tinytext and tinytext_nomask
  python3 scripts/make_text_fixtures.py --full-size DIR # full-size random SiglipModel (V 256000: ~1.5 GB F32)
                                                        # + HF fp32 text features of the queries (never commit):
                                                        # DIR as the real checkpoint (no mask), DIR/masked the
                                                        # same weights with the class-default tokenizer (mask)

Files of a fixture directory (float32 / int32 little-endian, C order):
  config.json, model.safetensors, tokenizer.json, tokenizer_config.json    the checkpoint
  queries.json       the query strings (ASCII, accents, CJK, emoji, empty, control characters, > 64 tokens)
  text_ids.i32       [Q, 64] input_ids from the HF tokenizer (processor settings above)
  text_mask.i32      [Q, 64] attention_mask, only when the tokenizer returned one (absent: HF passed none)
  text_ntok.i32      [Q] tokens before truncation (len of tokenizer(q)["input_ids"] without padding/truncation)
  text_features.f32  [Q, P] get_text_features(...).pooler_output, fp32, eager attention
  zeroshot.json      labels, template, images (PNG files in the directory) and the pipeline's scores
  zs_pixels.f32      [N, 3, S, S] the pipeline's pixel_values for those images
  zs_ids.i32 / zs_mask.i32  [L, 64] the label hypotheses' input_ids / attention_mask (the mask only when
                     returned)
  meta.json          shapes, seed, versions
Needs torch, transformers 5.x, tokenizers, numpy, Pillow. Reference only: nothing here runs at test time.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch
import transformers
from transformers import SiglipConfig, SiglipModel, SiglipTextConfig, SiglipVisionConfig

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_fixtures import perturb_, processor, synthetic_photo, versions  # noqa: E402

SEED = 20261125
T = 64
CORPUS = """a photo of a dog on the beach. a cat sleeping on a red sofa. two dogs playing in the snow.
a diagram of a neural network. the city at night with lights. this is a photo of a car.
une photo d'un chien sur la plage. café crème brûlée à la française. naïve façade über straße.
一只狗在海滩上。 東京の夜景。 猫がソファで寝ている。 한국어 문장입니다.
emoji 🐶 🐱 🚗 ❤️ and symbols © ® ™ … — “quoted” text.
numbers 123 4567 89 and punctuation!? yes; no: maybe.
This Is Mixed Case TEXT With CAPITALS. the quick brown fox jumps over the lazy dog.
"""
QUERIES = [
    "a dog",
    "a photo of a cat sleeping on a red sofa",
    "This is a photo of a car.",
    "café crème brûlée",
    "一只狗在海滩上",
    "🐶 on a beach 🏖️",
    "",
    "  leading and trailing spaces  ",
    "tab\there and\nnewline",
    "UPPER case Words",
    " ".join(["the quick brown fox jumps over the lazy dog"] * 12),  # > 64 tokens: truncated
    "a",
]
LABELS = ["dog", "cat", "a red car", "東京", "crème brûlée", "🐶"]
TEMPLATE = "This is a photo of {}."  # the zero-shot pipeline's default hypothesis_template


def make_tokenizer(outdir, vocab_size):
    """Trains a small BPE on CORPUS and saves it as a Gemma-configuration tokenizer (GemmaTokenizer class,
    tokenizer.json + tokenizer_config.json) with right padding. Returns the loaded HF tokenizer."""
    from tokenizers import Tokenizer, models, normalizers, trainers
    from transformers import AutoTokenizer, GemmaTokenizer
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    byte_toks = [f"<0x{b:02X}>" for b in range(256)]
    # Learn merges on ▁-joined text (what the Gemma normaliser makes of spaces), one line per "word".
    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    t.normalizer = normalizers.Replace(" ", "\u2581")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials + byte_toks, show_progress=False,
                                  limit_alphabet=400)
    lines = [ln for ln in CORPUS.splitlines() if ln.strip()] * 4
    t.train_from_iterator(lines, trainer)
    st = json.loads(t.to_str())
    vocab = st["model"]["vocab"]
    merges = st["model"]["merges"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
    # GemmaTokenizer's defaults: <bos> prepended (its TemplateProcessing post-processor), no <eos>.
    tok = GemmaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, padding_side="right")
    tok.save_pretrained(outdir)
    tok = AutoTokenizer.from_pretrained(outdir)
    assert tok.padding_side == "right", tok.padding_side
    return tok


def encode(tok, texts):
    """The processor's text settings; returns (input_ids, attention_mask or None when the tokenizer returns
    none, tokens before truncation, the names it returned)."""
    enc = tok(texts, padding="max_length", max_length=T, truncation=True, return_tensors="np")
    ntok = [len(tok(x)["input_ids"]) for x in texts]
    mask = enc["attention_mask"].astype(np.int32) if "attention_mask" in enc else None
    return enc["input_ids"].astype(np.int32), mask, np.array(ntok, dtype=np.int32), sorted(enc.keys())


def write_i32(d, name, a):
    """Writes a (int32) as d/name, or removes d/name when a is None (HF returned no such input)."""
    path = os.path.join(d, name)
    if a is None:
        if os.path.exists(path):
            os.remove(path)
    else:
        a.astype(np.int32).tofile(path)


def build(vocab, vcfg, tcfg_kw, seed, attn):
    torch.manual_seed(seed)
    tcfg = SiglipTextConfig(vocab_size=vocab, max_position_embeddings=T, bos_token_id=None, eos_token_id=None,
                            pad_token_id=0, **tcfg_kw)
    cfg = SiglipConfig(text_config=tcfg.to_dict(), vision_config=vcfg.to_dict())
    model = SiglipModel(cfg).float().eval()
    perturb_(model, seed)
    with torch.no_grad():  # random towers give |cos| ~ 0.3: scale exp(2.31) ~ 10 spreads the scores over (0, 1)
        model.logit_scale.fill_(2.31)
        model.logit_bias.fill_(-0.37)
    for m in [model] + list(model.modules()):
        if hasattr(m, "config") and hasattr(m.config, "_attn_implementation"):
            m.config._attn_implementation = attn
    return model


def text_features(model, ids, mask):
    """get_text_features with the attention mask when there is one (mask None: none passed, as HF's
    get_text_features(**inputs) does when the tokenizer returns input_ids only)."""
    kw = {"input_ids": torch.from_numpy(ids).long()}
    if mask is not None:
        kw["attention_mask"] = torch.from_numpy(mask).long()
    with torch.no_grad():
        out = model.get_text_features(**kw)
    out = out.pooler_output if hasattr(out, "pooler_output") else out
    return out.float().numpy().astype(np.float32)


def features_of_inputs(model, inputs):
    """get_text_features(**inputs): exactly what the tokenizer / processor returned, passed on as HF does."""
    with torch.no_grad():
        out = model.get_text_features(**inputs)
    out = out.pooler_output if hasattr(out, "pooler_output") else out
    return out.float().numpy().astype(np.float32)


def save_like_siglip2(src, d):
    """The tokenizer at src saved into d as google/siglip2-base-patch16-224's was: transformers
    convert_siglip2_to_hf.py get_siglip2_tokenizer() loads it with model_input_names=["input_ids"] ("the original
    one doesn't require" the mask) and save_pretrained writes that into tokenizer_config.json."""
    from transformers import AutoTokenizer
    AutoTokenizer.from_pretrained(src, model_input_names=["input_ids"]).save_pretrained(d)
    cfg = json.load(open(os.path.join(d, "tokenizer_config.json")))
    assert cfg.get("model_input_names") == ["input_ids"], cfg


def write_tiny(d, seed, attn):
    from PIL import Image
    from transformers import pipeline
    os.makedirs(d, exist_ok=True)
    tok = make_tokenizer(d, 600)
    vcfg = SiglipVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                              image_size=32, patch_size=8)
    # Text width differs from the joint width (48 -> 32) so a head that skips the projection shows; 3 heads.
    tkw = dict(hidden_size=48, intermediate_size=96, num_hidden_layers=2, num_attention_heads=3, projection_size=32)
    model = build(len(tok), vcfg, tkw, seed, attn)
    model.save_pretrained(d)
    ids, mask, ntok, _ = encode(tok, QUERIES)
    feats = text_features(model, ids, mask)
    other = build(len(tok), vcfg, tkw, seed, "sdpa" if attn == "eager" else "eager")
    d_attn = float(np.abs(text_features(other, ids, mask) - feats).max())
    ids.tofile(os.path.join(d, "text_ids.i32"))
    write_i32(d, "text_mask.i32", mask)
    ntok.tofile(os.path.join(d, "text_ntok.i32"))
    feats.tofile(os.path.join(d, "text_features.f32"))
    with open(os.path.join(d, "queries.json"), "w", encoding="utf-8") as f:
        json.dump(QUERIES, f, ensure_ascii=False, indent=1)
        f.write("\n")

    # Zero-shot: the HF pipeline on PNG files, as a user would call it.
    rng = np.random.default_rng(seed)
    names = []
    for i, (h, w) in enumerate([(32, 32), (45, 61), (70, 40)]):
        name = f"zs{i}.png"
        Image.fromarray(synthetic_photo(rng, h, w)).save(os.path.join(d, name))
        names.append(name)
    proc, proc_name = processor(vcfg.image_size)
    pipe = pipeline("zero-shot-image-classification", model=model, tokenizer=tok, image_processor=proc,
                    device="cpu")
    scores = []
    for name in names:
        res = pipe(os.path.join(d, name), candidate_labels=LABELS)  # default hypothesis_template
        scores.append({r["label"]: float(r["score"]) for r in res})
    pixels = np.stack([proc(images=Image.open(os.path.join(d, n)).convert("RGB"), return_tensors="np")
                       ["pixel_values"][0] for n in names]).astype(np.float32)
    zids, zmask, _, _ = encode(tok, [TEMPLATE.format(x) for x in LABELS])
    pixels.tofile(os.path.join(d, "zs_pixels.f32"))
    zids.tofile(os.path.join(d, "zs_ids.i32"))
    write_i32(d, "zs_mask.i32", zmask)
    with open(os.path.join(d, "zeroshot.json"), "w", encoding="utf-8") as f:
        json.dump({"labels": LABELS, "template": TEMPLATE, "images": names, "scores": scores,
                   "logit_scale": float(model.logit_scale.detach()), "logit_bias": float(model.logit_bias.detach()),
                   "how": "transformers pipeline('zero-shot-image-classification') default hypothesis_template, "
                          f"image processor {proc_name}, scores = sigmoid(exp(logit_scale) * cos + logit_bias)"},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")
    meta = {"model_class": "SiglipModel", "seed": seed, "attn_implementation": attn, "precision": "fp32",
            "vocab_size": len(tok), "text": {"T": T, **tkw}, "vision": vcfg.to_dict(),
            "shapes": {"text_ids.i32": list(ids.shape), "text_features.f32": list(feats.shape),
                       "zs_pixels.f32": list(pixels.shape), "zs_ids.i32": list(zids.shape)},
            "ntok": ntok.tolist(), f"max_abs_text_{attn}_vs_other": d_attn,
            "tokenizer": "BPE + byte fallback trained on the script's corpus, saved by GemmaTokenizer, padding right",
            "versions": versions(), "generator": "scripts/make_text_fixtures.py"}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    size = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))
    print(f"{d}: {len(QUERIES)} queries (ntok {ntok.tolist()}), {len(LABELS)} labels x {len(names)} images, "
          f"{size / 1e6:.2f} MB, eager vs sdpa max|d| {d_attn:.2e}")
    return names


NOMASK_COPIED = ["config.json", "model.safetensors", "text_ntok.i32", "queries.json", "zs_pixels.f32"]


def write_nomask(src, d, attn, names):
    """tests/fixtures/tinytext_nomask: tinytext's checkpoint with its tokenizer saved as SigLIP2's was
    (save_like_siglip2), and HF's references for it computed from that directory alone: the tokenizer and
    model loaded from it, the model-card path (processor(text=..., padding="max_length", max_length=64) ->
    get_text_features(**inputs)) and the zero-shot pipeline given only the directory (plus the image
    processor, which the fixture has no preprocessor_config.json for). The copied files are byte-identical to
    tinytext's (git stores them once)."""
    from transformers import AutoTokenizer, SiglipProcessor, pipeline
    os.makedirs(d, exist_ok=True)
    for name in NOMASK_COPIED + names:
        shutil.copyfile(os.path.join(src, name), os.path.join(d, name))
    save_like_siglip2(src, d)
    tok = AutoTokenizer.from_pretrained(d)
    model = SiglipModel.from_pretrained(d, attn_implementation=attn).float().eval()
    inputs = tok(QUERIES, padding="max_length", max_length=T, truncation=True, return_tensors="pt")
    proc, proc_name = processor(model.config.vision_config.image_size)
    card = SiglipProcessor(image_processor=proc, tokenizer=tok)(text=QUERIES, padding="max_length", max_length=T,
                                                                 truncation=True, return_tensors="pt")
    assert sorted(card.keys()) == sorted(inputs.keys()) and all(torch.equal(card[k], inputs[k]) for k in inputs), \
        "the processor and its tokenizer disagree"
    feats = features_of_inputs(model, inputs)
    ids = inputs["input_ids"].numpy().astype(np.int32)
    mask = inputs["attention_mask"].numpy().astype(np.int32) if "attention_mask" in inputs else None
    ids.tofile(os.path.join(d, "text_ids.i32"))
    write_i32(d, "text_mask.i32", mask)
    feats.tofile(os.path.join(d, "text_features.f32"))
    masked = np.fromfile(os.path.join(src, "text_features.f32"), "<f4").reshape(feats.shape)
    cos_masked = [float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b)) for a, b in zip(feats, masked)]

    pipe = pipeline("zero-shot-image-classification", model=d, image_processor=proc, device="cpu",
                    model_kwargs={"attn_implementation": attn})
    scores = []
    for name in names:
        res = pipe(os.path.join(d, name), candidate_labels=LABELS)  # default hypothesis_template
        scores.append({r["label"]: float(r["score"]) for r in res})
    zids, zmask, _, zkeys = encode(pipe.tokenizer, [TEMPLATE.format(x) for x in LABELS])
    zids.tofile(os.path.join(d, "zs_ids.i32"))
    write_i32(d, "zs_mask.i32", zmask)
    with open(os.path.join(d, "zeroshot.json"), "w", encoding="utf-8") as f:
        json.dump({"labels": LABELS, "template": TEMPLATE, "images": names, "scores": scores,
                   "logit_scale": float(model.logit_scale.detach()), "logit_bias": float(model.logit_bias.detach()),
                   "tokenizer_outputs": zkeys,
                   "how": "transformers pipeline('zero-shot-image-classification', model=<this directory>) default "
                          f"hypothesis_template, image processor {proc_name}, tokenizer loaded from the directory "
                          f"(model_input_names {pipe.tokenizer.model_input_names}), scores = "
                          "sigmoid(exp(logit_scale) * cos + logit_bias)"},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")
    meta = {"model_class": "SiglipModel", "attn_implementation": attn, "precision": "fp32",
            "same_weights_as": "tinytext", "model_input_names": tok.model_input_names,
            "tokenizer_outputs": sorted(inputs.keys()),
            "how": "AutoTokenizer and SiglipModel loaded from this directory; inputs = tokenizer(queries, "
                   "padding='max_length', max_length=64, truncation=True) (SiglipProcessor gives the same); "
                   "text_features = get_text_features(**inputs).pooler_output",
            "cosine_to_tinytext_masked_features": [round(c, 6) for c in cos_masked],
            "versions": versions(), "generator": "scripts/make_text_fixtures.py"}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    print(f"{d}: tokenizer outputs {sorted(inputs.keys())}, cosine to the masked features "
          f"min {min(cos_masked):.4f} max {max(cos_masked):.6f}")


def write_full_size(d, seed, attn, threads):
    """Full-size random SiglipModel as google/siglip2-base-patch16-224 is shaped (text V 256000, D 768, 12
    layers, T 64; vision base), with this script's small tokenizer (its ids are a subset of the vocabulary), in
    two checkpoint directories that share the weights:
      DIR         the tokenizer saved as the real checkpoint's (save_like_siglip2: model_input_names
                  ["input_ids"]), so HF returns no attention mask: what users of the real checkpoint get;
      DIR/masked  config.json, model.safetensors (a symlink to ../model.safetensors) and the class-default
                  tokenizer (HF returns a mask), the other rule at full size.
    Each gets HF fp32 text features of QUERIES + LABELS hypotheses from what the tokenizer loaded from that
    directory returns, passed on to get_text_features as returned (the ids spread over the 256k table first)."""
    from transformers import AutoTokenizer
    masked = os.path.join(d, "masked")
    os.makedirs(masked, exist_ok=True)
    if threads:
        torch.set_num_threads(threads)
    tok = make_tokenizer(masked, 600)
    save_like_siglip2(masked, d)
    model = build(256000, SiglipVisionConfig(), {}, seed, attn)
    model.save_pretrained(d)
    shutil.copyfile(os.path.join(d, "config.json"), os.path.join(masked, "config.json"))
    link = os.path.join(masked, "model.safetensors")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.join("..", "model.safetensors"), link)
    texts = QUERIES + [TEMPLATE.format(x) for x in LABELS]
    # Real queries use ids all over the 256k table: spread this fixture's ids over it too (same mapping for
    # every query, pads stay 0), so rows far from the start of the table are read.
    remap = np.arange(len(tok), dtype=np.int64)
    remap[300:] = np.random.default_rng(seed).choice(np.arange(300, 256000), size=len(tok) - 300, replace=False)
    for sub in (d, masked):
        inputs = AutoTokenizer.from_pretrained(sub)(texts, padding="max_length", max_length=T, truncation=True,
                                                    return_tensors="pt")
        inputs["input_ids"] = torch.from_numpy(remap[inputs["input_ids"].numpy()])
        feats = features_of_inputs(model, inputs)
        inputs["input_ids"].numpy().astype(np.int32).tofile(os.path.join(sub, "text_ids.i32"))
        write_i32(sub, "text_mask.i32", inputs["attention_mask"].numpy() if "attention_mask" in inputs else None)
        feats.tofile(os.path.join(sub, "text_features.f32"))
        with open(os.path.join(sub, "meta.json"), "w") as f:
            json.dump({"model_class": "SiglipModel", "seed": seed, "queries": len(texts), "T": T,
                       "tokenizer_outputs": sorted(inputs.keys()),
                       "note": "ids remapped over the 256k vocabulary; tokenizer.json is the small fixture one; "
                               "text_features = get_text_features(**what the tokenizer loaded from this directory "
                               "returned)",
                       "versions": versions()}, f, indent=1)
            f.write("\n")
        print(f"{sub}: tokenizer outputs {sorted(inputs.keys())}")
    print(f"{d}: full-size SiglipModel, {len(texts)} reference queries, as the real checkpoint (no mask) and "
          f"{masked} (mask)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                                  "fixtures", "tinytext"))
    ap.add_argument("--full-size", metavar="OUTDIR")
    ap.add_argument("--attn", default="eager", choices=["eager", "sdpa"])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--seed", type=int, default=SEED)
    a = ap.parse_args()
    if a.full_size:
        write_full_size(a.full_size, a.seed, a.attn, a.threads)
    else:
        out = os.path.normpath(a.out)
        names = write_tiny(out, a.seed, a.attn)
        write_nomask(out, out + "_nomask", a.attn, names)
    print("transformers", transformers.__version__, "torch", torch.__version__)


if __name__ == "__main__":
    main()
