#!/usr/bin/env python3
"""tests/make_malformed.py OUTDIR — writes tiny safetensors checkpoints, good and crafted-bad, for the weights tests.

Standard library only (struct + json), so it runs under Debian's python3 at test time with no torch.

The model is a SigLIP vision tower shrunk to D=8, F=16, H=2, L=2, C=3, S=8, P=4 (T=4 tokens). Element j of the
tensor whose unprefixed name is N holds value(N, j) = ((fnv1a32(N) + 7*j) % 251 - 125) / 64: multiples of 1/64
below 2, exact in F32, F16 and BF16, so a loader test can recompute every value independently and check that
each tensor landed in the right field and was widened exactly.

OUTDIR gets:
  good/<case>/          loadable checkpoints (directory form: config.json + model.safetensors or a sharded index)
  bad/<case>.safetensors  one crafted malformed file per case, with bad/config.json (the tiny config) beside
  badcfg/<case>/        the good weights with a bad config.json
  cases.tsv             kind<TAB>path<TAB>substring the error message must contain
  f16_all.safetensors   every F16 bit pattern ("h") with its float32 value from struct's 'e' format ("ref"),
                        and every BF16 bit pattern ("b")

make_malformed.py {F32,F16,BF16} OUTDIR writes instead a checkpoint of the real base vision shapes (for timing
the loader; see docs/perf-notes.md, weights/ section).
"""
import json
import os
import struct
import sys

D, F, H, L, C, S, P = 8, 16, 2, 2, 3, 8, 4
T = (S // P) ** 2
CONFIG = {"hidden_size": D, "intermediate_size": F, "num_attention_heads": H, "num_hidden_layers": L,
          "num_channels": C, "image_size": S, "patch_size": P, "layer_norm_eps": 1e-6,
          "hidden_act": "gelu_pytorch_tanh", "model_type": "siglip_vision_model"}
DTYPES = {"F32": ("<f", 4), "F16": ("<e", 2), "BF16": (None, 2)}


def fnv1a32(s):
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def value(name, j):
    return ((fnv1a32(name) + 7 * j) % 251 - 125) / 64.0


def vision_tensors():
    """(unprefixed name, shape) of every vision tensor, model-spec.md section 4."""
    t = [("embeddings.patch_embedding.weight", [D, C, P, P]), ("embeddings.patch_embedding.bias", [D]),
         ("embeddings.position_embedding.weight", [T, D])]
    for l in range(L):
        p = f"encoder.layers.{l}."
        t += [(p + "layer_norm1.weight", [D]), (p + "layer_norm1.bias", [D])]
        for x in "qkv":
            t += [(p + f"self_attn.{x}_proj.weight", [D, D]), (p + f"self_attn.{x}_proj.bias", [D])]
        t += [(p + "self_attn.out_proj.weight", [D, D]), (p + "self_attn.out_proj.bias", [D]),
              (p + "layer_norm2.weight", [D]), (p + "layer_norm2.bias", [D]),
              (p + "mlp.fc1.weight", [F, D]), (p + "mlp.fc1.bias", [F]),
              (p + "mlp.fc2.weight", [D, F]), (p + "mlp.fc2.bias", [D])]
    t += [("post_layernorm.weight", [D]), ("post_layernorm.bias", [D]), ("head.probe", [1, 1, D]),
          ("head.attention.in_proj_weight", [3 * D, D]), ("head.attention.in_proj_bias", [3 * D]),
          ("head.attention.out_proj.weight", [D, D]), ("head.attention.out_proj.bias", [D]),
          ("head.layernorm.weight", [D]), ("head.layernorm.bias", [D]),
          ("head.mlp.fc1.weight", [F, D]), ("head.mlp.fc1.bias", [F]),
          ("head.mlp.fc2.weight", [D, F]), ("head.mlp.fc2.bias", [D])]
    return t


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def encode(vals, dtype):
    if dtype == "BF16":
        return b"".join(struct.pack("<I", struct.unpack("<I", struct.pack("<f", v))[0])[2:] for v in vals)
    fmt, _ = DTYPES[dtype]
    return b"".join(struct.pack(fmt, v) for v in vals)


def blobs(dtype="F32", prefix="vision_model.", text=False):
    """[(name, dtype, shape, bytes)] for the tiny model (and a few text-tower tensors)."""
    out = []
    for n, shape in vision_tensors():
        out.append((prefix + n, dtype, shape, encode([value(n, j) for j in range(numel(shape))], dtype)))
    if text:
        for n, shape in [("text_model.embeddings.token_embedding.weight", [32, D]),
                         ("text_model.head.weight", [D, D]), ("logit_scale", [1]), ("logit_bias", [1])]:
            out.append((n, "F32", shape, encode([0.5] * numel(shape), "F32")))
    return out


def pack(tensors, metadata=None, header_pad=0, reverse=False, header_override=None):
    """A safetensors file. Data is laid out in list order; the JSON lists entries reversed when asked (a
    reader must not assume key order follows offsets). header_pad spaces make the data area misaligned."""
    hdr, data = {}, b""
    entries = []
    for name, dtype, shape, raw in tensors:
        entries.append((name, {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}))
        data += raw
    if metadata is not None:
        hdr["__metadata__"] = metadata
    for name, e in (reversed(entries) if reverse else entries):
        hdr[name] = e
    h = header_override if header_override is not None else json.dumps(hdr).encode()
    h += b" " * header_pad
    return struct.pack("<Q", len(h)) + h + data


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def raw_header(entries_json, data):
    """A file from literal header text (for entries json.dumps cannot express: duplicates, odd numbers)."""
    h = entries_json.encode() if isinstance(entries_json, str) else entries_json
    return struct.pack("<Q", len(h)) + h + data


def main(out):
    cases = []
    full_cfg = {"model_type": "siglip", "initializer_factor": 1.0,
                "text_config": {"model_type": "siglip_text_model", "vocab_size": 32},
                "vision_config": {k: v for k, v in CONFIG.items() if k != "model_type"}}
    full_cfg["vision_config"]["model_type"] = "siglip_vision_model"
    good = os.path.join(out, "good")

    def good_dir(name, cfg, st, misalign=0):
        d = os.path.join(good, name)
        write(os.path.join(d, "config.json"), json.dumps(cfg).encode())
        if st is not None:
            write(os.path.join(d, "model.safetensors"), st)
        return d

    # Full SiglipModel: prefixed names, text tower present, __metadata__, JSON order reversed.
    good_dir("full_f32", full_cfg, pack(blobs(text=True), metadata={"format": "pt"}, reverse=True))
    # Standalone SiglipVisionModel: no prefix; header padded so the data area starts at 8 + N with N % 4 == 2.
    base = pack(blobs(prefix=""))
    n = struct.unpack("<Q", base[:8])[0]
    good_dir("vision_unaligned", CONFIG, pack(blobs(prefix=""), header_pad=(2 - n) % 4 or 4))
    good_dir("vision_f16", CONFIG, pack(blobs("F16", prefix="")))
    good_dir("full_bf16", full_cfg, pack(blobs("BF16", text=True)))
    # Sharded: two shards plus an index; text tensors in a third shard the loader must not need.
    t = blobs(text=True)
    vis, txt = [x for x in t if x[0].startswith("vision_model.")], [x for x in t if not x[0].startswith("vision_model.")]
    d = good_dir("sharded", full_cfg, None)
    shards = {"model-00001-of-00003.safetensors": vis[:20], "model-00002-of-00003.safetensors": vis[20:],
              "model-00003-of-00003.safetensors": txt}
    wm = {}
    for fn, ts in shards.items():
        write(os.path.join(d, fn), pack(ts))
        wm.update({x[0]: fn for x in ts})
    write(os.path.join(d, "model.safetensors.index.json"), json.dumps({"metadata": {}, "weight_map": wm}).encode())
    # A single .safetensors file with no config.json beside it: defaults apply, so shapes mismatch by name.
    write(os.path.join(out, "noconfig", "weights.safetensors"), pack(blobs()))
    cases.append(("model", "noconfig/weights.safetensors",
                  "tensor 'vision_model.embeddings.patch_embedding.weight': shape [768, 3, 16, 16] expected, "
                  "found [8, 3, 4, 4] (F32) (config: SiglipVisionConfig defaults"))

    # ---- malformed safetensors, each with its own message ----
    bad = os.path.join(out, "bad")
    write(os.path.join(bad, "config.json"), json.dumps(CONFIG).encode())
    valid = pack(blobs())
    vn = struct.unpack("<Q", valid[:8])[0]
    small = [("a", "F32", [2], encode([1, 2], "F32")), ("b", "F32", [2], encode([3, 4], "F32"))]

    def hdr(d):
        return json.dumps(d)

    def bad_case(name, data, expect, kind="st"):
        write(os.path.join(bad, name + ".safetensors"), data)
        cases.append((kind, f"bad/{name}.safetensors", expect))

    bad_case("empty", b"", "file is 0 bytes, too short for the 8-byte header length")
    bad_case("short5", valid[:5], "file is 5 bytes, too short")
    bad_case("truncated_header", valid[:8 + vn // 2], f"header length {vn} runs past the end of the file")
    bad_case("truncated_data", valid[:len(valid) - 10], "out of range: the data area is")
    bad_case("header_len_huge", struct.pack("<Q", 1 << 63) + valid[8:], "exceeds the format's limit of 100000000 bytes")
    bad_case("header_len_zero", struct.pack("<Q", 0) + valid[8:], "header length 0 is too short for a JSON object")
    bad_case("not_json", raw_header('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]', b"\0" * 8),
             "header is not valid JSON")
    bad_case("not_object", raw_header('[1, 2]', b""), "header is not a JSON object")
    bad_case("trailing_json", raw_header('{} {}', b""), "after the JSON object")
    bad_case("non_utf8", raw_header(b'{"\xff\xfe": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', b"\0" * 8),
             "header is not valid UTF-8")
    bad_case("overlong_utf8", raw_header(b'{"\xc0\xaf": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', b"\0" * 8),
             "header is not valid UTF-8")
    bad_case("surrogate_utf8", raw_header(b'{"\xed\xa0\x80": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', b"\0" * 8),
             "header is not valid UTF-8")
    bad_case("control_byte", raw_header(b'{"a\x01": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', b"\0" * 8),
             "control character 0x01")
    bad_case("nul_escape", raw_header('{"a\\u0000b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}', b"\0" * 8),
             "\\u0000 (NUL) is not allowed")
    bad_case("unknown_dtype", raw_header(hdr({"a": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}), b"\0" * 8),
             "tensor 'a': unsupported dtype 'I64', expected F32, F16 or BF16")
    bad_case("size_mismatch", raw_header(hdr({"a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}}), b"\0" * 20),
             "tensor 'a': shape [2, 3] (F32) needs 24 bytes, but data_offsets [0, 20] span 20")
    bad_case("overlap", raw_header(hdr({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}), b"\0" * 12),
             "tensor 'b' [4, 12) overlaps tensor 'a' [0, 8)")
    bad_case("hole", raw_header(hdr({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                                     "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}}), b"\0" * 20),
             "hole of 4 bytes between tensor 'a' (ends at 8) and tensor 'b' (begins at 12)")
    bad_case("hole_at_start", raw_header(hdr({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}), b"\0" * 16),
             "hole of 8 bytes at the start of the data area")
    bad_case("out_of_range", raw_header(hdr({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}), b"\0" * 8),
             "tensor 'a': data_offsets [0, 16] out of range: the data area is 8 bytes")
    bad_case("trailing_data", raw_header(hdr({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}), b"\0" * 12),
             "4 trailing bytes after the last tensor 'a'")
    bad_case("begin_after_end", raw_header(hdr({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}}), b"\0" * 8),
             "data_offsets [8, 0] has begin after end")
    bad_case("duplicate_key", raw_header('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, '
                                         '"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}', b"\0" * 16),
             "duplicate tensor name 'a'")
    bad_case("duplicate_metadata", raw_header('{"__metadata__": {}, "__metadata__": {}}', b""),
             "duplicate key '__metadata__'")
    bad_case("metadata_not_string", raw_header('{"__metadata__": {"format": 1}}', b""),
             "__metadata__ 'format' is a number, expected a string")
    bad_case("shape_overflow", raw_header(hdr({"a": {"dtype": "F32", "shape": [2 ** 32, 2 ** 32, 16], "data_offsets": [0, 8]}}), b"\0" * 8),
             "tensor 'a': shape [4294967296, 4294967296, 16] x 4 bytes overflows 64 bits")
    bad_case("too_many_dims", raw_header(hdr({"a": {"dtype": "F32", "shape": [1] * 9, "data_offsets": [0, 4]}}), b"\0" * 4),
             "shape has 9 dimensions, at most 8 supported")
    bad_case("shape_not_array", raw_header(hdr({"a": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}}), b"\0" * 8),
             "tensor 'a': shape is a string, expected an array of integers")
    bad_case("offset_2p53_plus_1", raw_header('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 9007199254740993]}}', b"\0" * 8),
             "data_offsets[1] is 9007199254740992 (2^53 or more")
    bad_case("offset_1e300", raw_header('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 1e300]}}', b"\0" * 8),
             "data_offsets[1] is 1.0000000000000001e+300 (2^53 or more")
    bad_case("offset_negative", raw_header('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}}', b"\0" * 8),
             "data_offsets[0] is -8 (negative)")
    bad_case("offset_fraction", raw_header('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 7.5]}}', b"\0" * 8),
             "data_offsets[1] is 7.5 (not an integer)")
    bad_case("offset_string", raw_header('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, "8"]}}', b"\0" * 8),
             "data_offsets[1] is a string, expected an integer")
    bad_case("offsets_three", raw_header('{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8, 8]}}', b"\0" * 8),
             "data_offsets has 3 elements, expected 2")
    bad_case("missing_field", raw_header('{"a": {"dtype": "F32", "shape": [2]}}', b"\0" * 8),
             "tensor 'a': missing field 'data_offsets'")
    bad_case("unknown_field", raw_header('{"a": {"dtype": "F32", "DTYPE": "F16", "shape": [2], "data_offsets": [0, 8]}}', b"\0" * 8),
             "tensor 'a': unknown field 'DTYPE'")
    bad_case("too_many_values", raw_header(b'{"__metadata__": [' + b"0," * 4000000 + b'0]}', b""),
             "more than the 4000000 this reader accepts")
    bad_case("entry_not_object", raw_header('{"a": [0, 8]}', b""),
             "tensor 'a': entry is an array, expected an object")
    # Model-level (kind "model"): a valid safetensors file whose tensors do not fit the config.
    bad_case("missing_tensor", pack([x for x in blobs() if x[0] != "vision_model.head.probe"]),
             "tensor 'vision_model.head.probe' (or 'head.probe') not found: expected shape [1, 1, 8]", "model")
    wrong = [(n, dt, [F, D + 1], encode([0.0] * (F * (D + 1)), dt)) if n == "vision_model.encoder.layers.1.mlp.fc1.weight"
             else (n, dt, s, r) for n, dt, s, r in blobs()]
    bad_case("wrong_shape", pack(wrong),
             "tensor 'vision_model.encoder.layers.1.mlp.fc1.weight': shape [16, 8] expected, found [16, 9] (F32)", "model")
    extra = blobs() + [("vision_model.encoder.layers.2.layer_norm1.weight", "F32", [D], encode([0.0] * D, "F32"))]
    bad_case("extra_layer", pack(extra),
             "tensor 'vision_model.encoder.layers.2.layer_norm1.weight' is not part of the vision model the config describes (2 layers)", "model")
    both = blobs() + [("head.probe", "F32", [1, 1, D], encode([0.0] * D, "F32"))]
    bad_case("prefixed_and_bare", pack(both), "tensor 'head.probe' is present twice", "model")

    # ---- bad config.json beside good weights ----
    def bad_cfg(name, cfg_text, expect):
        d = os.path.join(out, "badcfg", name)
        write(os.path.join(d, "config.json"), cfg_text.encode() if isinstance(cfg_text, str) else cfg_text)
        write(os.path.join(d, "model.safetensors"), valid)
        cases.append(("model", f"badcfg/{name}", expect))

    def with_(**kw):
        c = dict(CONFIG)
        c.update(kw)
        return json.dumps(c)

    bad_cfg("act_relu", with_(hidden_act="relu"), "hidden_act 'relu' is not supported, expected 'gelu_pytorch_tanh' or 'gelu'")
    bad_cfg("no_head", with_(vision_use_head=False), "vision_use_head is false")
    bad_cfg("head_not_bool", with_(vision_use_head=1), "vision_use_head is a number, expected true or false")
    bad_cfg("hidden_string", with_(hidden_size="8"), "hidden_size is a string, expected an integer")
    bad_cfg("hidden_fraction", with_(hidden_size=8.5), "hidden_size is 8.5, expected an integer in [1, 16384]")
    bad_cfg("channels_1", with_(num_channels=1), "num_channels is 1, expected 3")
    bad_cfg("heads_indivisible", with_(num_attention_heads=3), "hidden_size 8 is not divisible by num_attention_heads 3")
    bad_cfg("patch_indivisible", with_(image_size=10), "image_size 10 is not divisible by patch_size 4")
    bad_cfg("layers_zero", with_(num_hidden_layers=0), "num_hidden_layers is 0, expected an integer in [1, 1024]")
    bad_cfg("eps_negative", with_(layer_norm_eps=-1), "layer_norm_eps is -1, expected a number in (0, 1)")
    bad_cfg("model_type_clip", with_(model_type="clip"), "model_type 'clip' is not supported")
    bad_cfg("vision_config_array", '{"model_type": "siglip", "vision_config": []}', "vision_config is an array, expected an object")
    bad_cfg("duplicate_field", with_()[:-1] + ', "hidden_size": 16}', "hidden_size appears more than once")
    bad_cfg("not_json", '{"hidden_size": ', "not valid JSON")
    bad_cfg("too_many_values", '{"a": [' + "0," * 100000 + '0]}', "more than the 100000 a config.json may have")
    bad_cfg("nested_wrong", json.dumps({"model_type": "siglip", "vision_config": {"hidden_size": "768"}}),
            "vision_config.hidden_size is a string, expected an integer")

    # ---- every F16 and BF16 bit pattern ----
    hs = list(range(65536))
    h_raw = b"".join(struct.pack("<H", x) for x in hs)
    ref = []
    for x in hs:
        v = struct.unpack("<e", struct.pack("<H", x))[0]
        ref.append(struct.pack("<f", v))
    write(os.path.join(out, "f16_all.safetensors"),
          pack([("h", "F16", [65536], h_raw), ("ref", "F32", [65536], b"".join(ref)), ("b", "BF16", [65536], h_raw)]))

    with open(os.path.join(out, "cases.tsv"), "w") as f:
        for kind, path, expect in cases:
            f.write(f"{kind}\t{path}\t{expect}\n")


def full_size(dtype, out):
    """A checkpoint with the real SigLIP2-B/16-224 vision shapes (SiglipVisionConfig defaults, prefixed names)
    for timing the loader; values are a repeating byte pattern (only sizes matter). Not used by the tests."""
    global D, F, H, L, C, S, P, T
    D, F, H, L, C, S, P = 768, 3072, 12, 12, 3, 224, 16
    T = (S // P) ** 2
    size = DTYPES[dtype][1]
    ts = [("vision_model." + n, dtype, shape, (b"\x3c\x00\x80\x3f" * (numel(shape) * size // 4 + 1))[:numel(shape) * size])
          for n, shape in vision_tensors()]
    plain = pack(ts, metadata={"format": "pt"})
    hn = struct.unpack("<Q", plain[:8])[0]
    # Like the safetensors writer, pad the header with spaces so the data area starts 8-byte aligned.
    write(os.path.join(out, "model.safetensors"), pack(ts, metadata={"format": "pt"}, header_pad=(8 - (8 + hn) % 8) % 8))
    write(os.path.join(out, "config.json"), b'{"model_type":"siglip","vision_config":{"model_type":"siglip_vision_model"}}')


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in DTYPES:
        full_size(sys.argv[1], sys.argv[2])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit("usage: make_malformed.py OUTDIR | make_malformed.py {F32,F16,BF16} OUTDIR (full size, for timing)")
