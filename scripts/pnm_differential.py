#!/usr/bin/env python3
"""scripts/pnm_differential.py — random and damaged binary PNMs (P5, P6), our decoder's verdict and pixels against Pillow's.

Design: a seeded generator writes N files: P5 and P6, every kind of maxval (1, 255, 256, 65535 and random ones), the
header's tokens separated by runs of white space of every kind and by comments (at the ends of lines or not), sizes
from 1 x 1 to 60 x 30, samples in range or above maxval. A third of them are damaged: the pixels cut short, the
header cut, a sign or letter in a number, a zero or huge size, a number of many digits, no white space after maxval.
Each file is decoded by Pillow (Image.open(f).convert("RGB"); any exception is a refusal) in the Python given by
--python (default: this one) and by DUMP (tests/fuzz/gif_dump.c built as its top comment says: it decodes any format
with sg_decode_rgb). Prints every file whose verdict, size or pixels differ, and a count.
Usage: pnm_differential.py DUMP OUTDIR [N] [SEED] [--python PY]
"""
from pillow_oracle import compare_main


def ws(rng):
    """White space between header tokens, with a comment now and then."""
    s = "".join(rng.choice(" \t\n\r\v\f") for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.15:
        s += "# a comment" + rng.choice(["\n", "\r", " x\n"]) + rng.choice(["", " ", "\n"])
    return s if s.strip(" \t\n\r\v\f#acomentx") == "" or s[-1] in " \t\n\r\v\f" else s + " "


def pnm(rng):
    kind = rng.choice(["P5", "P6"])
    w, h = rng.randint(1, rng.choice([5, 60])), rng.randint(1, rng.choice([3, 30]))
    maxval = rng.choice([1, 255, 255, 255, 256, 65535, rng.randint(2, 254), rng.randint(257, 65534)])
    ch = 3 if kind == "P6" else 1
    nb = 1 if maxval < 256 else 2
    over = rng.random() < 0.2
    samples = [rng.randint(0, (255 if nb == 1 else 65535) if over else maxval) for _ in range(w * h * ch)]
    data = b"".join(v.to_bytes(nb, "big") for v in samples)
    damage = rng.randrange(9)
    tok = [str(w), str(h), str(maxval)]
    if damage == 1:
        tok[rng.randrange(3)] = rng.choice(["-1", "0", "1x", "+3", "99999999999", "0000000005"])
    head = kind + ws(rng) + tok[0] + ws(rng) + tok[1] + ws(rng) + tok[2]
    head += "" if damage == 2 else rng.choice([" ", "\n", "\t", "\r"])
    out = head.encode() + data
    if damage == 3:
        out = out[:rng.randrange(len(head), len(out))]
    if damage == 4:
        out = out[:rng.randrange(2, len(head) + 1)]
    return out


if __name__ == "__main__":
    compare_main("n%05d.pnm", pnm)
