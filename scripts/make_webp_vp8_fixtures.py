#!/usr/bin/env python3
"""scripts/make_webp_vp8_fixtures.py — the lossy WebP (VP8) fixtures of tests/test_webp_vp8.c, with Pillow's pixels.

Writes tests/images/webp/vp8_*.webp and tests/images/webp/vp8_expected.txt. Each file is a plain RIFF / WEBP /
"VP8 " file: small images (1x1 .. 300x8) of photo-like, flat, noisy, high-contrast and gradient content, encoded by
cwebp (quality 0..100, methods 0..6, 1..4 segments, filter strength / sharpness / simple or normal, SNS, sharp
YUV, autofilter), by libwebp 1.2 through webp_vp8_encode.py (2, 4 and 8 token partitions, which cwebp cannot
write) and by Pillow's save; then damaged copies: flipped bytes that still decode, random token bytes (large
coefficients, 16-bit transform wrap), cuts, a pair differing only in the pad byte after an odd-sized chunk that
Pillow decodes in one and refuses in the other, and one hand-made change each for every header check (not a key
frame, profile, show bit, start code, zero size, scale bits, first partition too long, partition table too
short, empty last partition, a partition cut). vp8_expected.txt has one line per file, "NAME OK W H FNV1A64"
(FNV-1a 64 of Image.open(f).convert("RGB").tobytes(), as make_goldens.py writes it) or "NAME ERR reason"
(Pillow refuses it). The generation is seeded: rerunning rewrites the same bytes (cwebp and libwebp 1.2.4 from
Debian; Pillow 13.0.0 with libwebp 1.6.0 as /usr/bin/python3). Usage: make_webp_vp8_fixtures.py
"""
import io
import os
import random
import struct
import subprocess
import tempfile

from PIL import Image

import webp_vp8_encode
from pillow_oracle import fnv1a64
from webp_vp8_differential import content, vp8_payload

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "images", "webp")



def riff(payload, pad=b"\x00"):
    """A simple WebP file around a VP8 payload (pad: the byte after an odd-sized payload)."""
    chunk = b"VP8 " + struct.pack("<I", len(payload)) + payload + (pad if len(payload) & 1 else b"")
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def cwebp(im, args):
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "a.png"), os.path.join(d, "a.webp")
        im.save(src)
        subprocess.run(["cwebp", "-quiet"] + args + [src, "-o", dst], check=True)
        with open(dst, "rb") as f:
            return vp8_payload(f.read())


def pillow(im, **kw):
    b = io.BytesIO()
    im.save(b, "WEBP", **kw)
    return vp8_payload(b.getvalue())


def libwebp(im, **kw):
    return vp8_payload(webp_vp8_encode.encode(im.tobytes(), im.width, im.height, **kw))


def picture(seed, w, h, kind=None):
    """content() of one kind (0 photo, 1 flat, 2 noise, 3 stripes, 4 gradient, 5 blocks) from a fixed seed."""
    rng = random.Random(seed)
    if kind is None:
        return content(rng, w, h)
    while True:  # content() draws its kind first: retry seeds until it is the one asked for
        probe = random.Random(seed)
        probe.randrange(1 << 30)
        if probe.randrange(6) == kind:
            return content(random.Random(seed), w, h)
        seed += 1000


def set_tag(p, key=None, profile=None, show=None, part0=None):
    """The payload with frame-tag fields replaced."""
    p = bytearray(p)
    tag = p[0] | p[1] << 8 | p[2] << 16
    if key is not None:
        tag = (tag & ~1) | (0 if key else 1)
    if profile is not None:
        tag = (tag & ~0xE) | profile << 1
    if show is not None:
        tag = (tag & ~0x10) | show << 4
    if part0 is not None:
        tag = (tag & 0x1F) | part0 << 5
    p[0:3] = bytes([tag & 255, tag >> 8 & 255, tag >> 16 & 255])
    return bytes(p)


def part0_len(p):
    return (p[0] | p[1] << 8 | p[2] << 16) >> 5


def pillow_verdict(data):
    try:
        return fnv1a64(Image.open(io.BytesIO(data)).convert("RGB").tobytes())
    except Exception:
        return "ERR"


def padbyte_pair(p):
    """Two cuts of p to the same odd length whose pad bytes give Pillow different results: libwebp decodes the
    padded chunk, so the pad byte is data for the last partition, read by the last tokens (whether they run out
    can depend on its value). Found by trying lengths near the end and four pad values."""
    for n in range(len(p) - 1 - (len(p) & 1), len(p) // 2, -2):
        files = [(f"vp8_padbyte_{v:02x}", riff(p[:n], pad=bytes([v]))) for v in (0x00, 0x55, 0xAA, 0xFF)]
        seen = {}
        for name, data in files:
            seen.setdefault(pillow_verdict(data), (name, data))
        if len(seen) > 1:
            return list(seen.values())[:2]
    raise RuntimeError("no length where the pad byte matters")


def cases():
    """(name, file bytes), in order."""
    out = []
    sizes = [(1, 1), (2, 3), (15, 17), (16, 16), (33, 65), (7, 5), (31, 9), (17, 40), (300, 8), (3, 97)]
    for i, (w, h) in enumerate(sizes):  # every size in photo-like content, cwebp defaults
        out.append((f"vp8_size_{w}x{h}", riff(cwebp(picture(10 + i, w, h, 0), ["-q", "75"]))))
    for q in (0, 10, 50, 90, 100):  # quality range
        out.append((f"vp8_q{q}", riff(cwebp(picture(30, 40, 24, 0), ["-q", str(q)]))))
    for m in (0, 3, 6):
        out.append((f"vp8_m{m}", riff(cwebp(picture(31, 37, 29, 0), ["-q", "60", "-m", str(m)]))))
    for s in (1, 2, 3, 4):
        out.append((f"vp8_segments{s}", riff(cwebp(picture(32, 48, 32, 0), ["-q", "50", "-segments", str(s)]))))
    filters = [("f0", ["-f", "0"]), ("f100_strong", ["-f", "100", "-strong"]),
               ("f60_simple", ["-f", "60", "-nostrong"]),
               ("f100_simple_sharp7", ["-f", "100", "-nostrong", "-sharpness", "7"]),
               ("f80_sharp3", ["-f", "80", "-sharpness", "3", "-strong"]),
               ("f30_sharp5", ["-f", "30", "-sharpness", "5"]),
               ("af", ["-af"]), ("sns0", ["-sns", "0"]), ("sns100", ["-sns", "100"]), ("sharp_yuv", ["-sharp_yuv"])]
    for name, args in filters:
        out.append((f"vp8_{name}", riff(cwebp(picture(33, 45, 35, 0), ["-q", "40"] + args))))
    kinds = ["photo", "flat", "noise", "stripes", "gradient", "blocks"]
    for k, kind in enumerate(kinds):  # content kinds, in odd sizes
        out.append((f"vp8_{kind}", riff(cwebp(picture(40 + k, 29 + 3 * k, 19 + 2 * k, k), ["-q", "70"]))))
    out.append(("vp8_noise_q100", riff(cwebp(picture(50, 24, 20, 2), ["-q", "100", "-f", "100", "-strong"]))))
    out.append(("vp8_stripes_q5", riff(cwebp(picture(51, 40, 40, 3), ["-q", "5", "-f", "100", "-strong"]))))
    for parts in (1, 2, 3):  # 2, 4, 8 token partitions (libwebp needs low_memory to keep them)
        out.append((f"vp8_partitions{1 << parts}", riff(libwebp(picture(60 + parts, 35, 70, 0), quality=60.0,
                                                                partitions=parts, low_memory=1))))
    out.append(("vp8_partitions8_1row", riff(libwebp(picture(64, 40, 10, 0), quality=60.0, partitions=3,
                                                     low_memory=1))))
    for q in (20, 95):
        out.append((f"vp8_pillow_q{q}", riff(pillow(picture(70 + q, 41, 33, 0), quality=q, method=4))))

    # damaged copies of one picture: flipped token bytes that still decode, random tokens, cuts
    base = cwebp(picture(80, 48, 40, 0), ["-q", "80"])
    rng = random.Random(80)
    start = 10 + part0_len(base)
    for k in range(3):
        p = bytearray(base)
        for _ in range(3):
            p[rng.randrange(start, len(p))] ^= 1 << rng.randrange(8)
        out.append((f"vp8_bad_tokenflip{k}", riff(bytes(p))))
    for k in range(4):  # random token bytes: any coefficient size (q 100 -> 0 keeps the quantisers large)
        p = cwebp(picture(81 + k, 32, 32, 0), ["-q", "0"])
        s = 10 + part0_len(p)
        noise = bytes(rng.randrange(256) for _ in range(len(p) - s + 200))
        out.append((f"vp8_bad_tokennoise{k}", riff(p[:s] + noise)))
    for frac in (0.99, 0.9, 0.5):
        out.append((f"vp8_cut_{int(frac * 100)}", riff(base[:int(len(base) * frac)])))
    out.append(("vp8_cut_padbyte", riff(base[:len(base) - 1 - (len(base) & 1)], pad=b"\x9b")))
    out += padbyte_pair(base)

    # one header change each (a tiny flat picture, so the files stay small)
    tiny = cwebp(picture(90, 16, 16, 1), ["-q", "50"])
    out.append(("vp8_hdr_ok", riff(tiny)))
    out.append(("vp8_hdr_interframe", riff(set_tag(tiny, key=False))))
    for prof in (1, 3, 4, 7):
        out.append((f"vp8_hdr_profile{prof}", riff(set_tag(tiny, profile=prof))))
    out.append(("vp8_hdr_hidden", riff(set_tag(tiny, show=0))))
    out.append(("vp8_hdr_startcode", riff(tiny[:3] + b"\x9d\x01\x2b" + tiny[6:])))
    out.append(("vp8_hdr_width0", riff(tiny[:6] + b"\x00\x00" + tiny[8:])))
    out.append(("vp8_hdr_height0", riff(tiny[:8] + b"\x00\xc0" + tiny[10:])))
    scaled = bytes([tiny[6], tiny[7] | 0xC0, tiny[8], tiny[9] | 0x40])  # the 2 scale bits of each dimension
    out.append(("vp8_hdr_scale", riff(tiny[:6] + scaled + tiny[10:])))
    out.append(("vp8_hdr_part0_long", riff(set_tag(tiny, part0=len(tiny) - 9))))
    out.append(("vp8_hdr_part0_all", riff(set_tag(tiny, part0=len(tiny) - 10))))
    out.append(("vp8_hdr_part0_short", riff(set_tag(tiny, part0=max(1, part0_len(tiny) - 6)))))
    out.append(("vp8_hdr_9bytes", riff(tiny[:9])))
    out.append(("vp8_hdr_header_only", riff(tiny[:10])))
    out.append(("vp8_hdr_part0_cut", riff(tiny[:10 + part0_len(tiny) // 2])))
    out.append(("vp8_hdr_no_tokens", riff(tiny[:10 + part0_len(tiny)])))
    # 8 partitions declared with too few bytes for the size table, and a table pointing past the data: the
    # partition bits sit in the first partition, so take a file that has them and cut it after the table
    p8 = libwebp(picture(91, 16, 48, 0), quality=50.0, partitions=3, low_memory=1)
    s8 = 10 + part0_len(p8)
    out.append(("vp8_hdr_parts8_ok", riff(p8)))
    out.append(("vp8_hdr_parts8_table_cut", riff(p8[:s8 + 20])))
    sizes = [p8[s8 + 3 * i] | p8[s8 + 3 * i + 1] << 8 | p8[s8 + 3 * i + 2] << 16 for i in range(7)]
    last = len(p8) - s8 - 21 - sum(sizes)
    for give, name in ((last, "last_empty"), (last - 1, "last_1byte")):  # partition 6 takes the last's bytes
        t = bytearray(p8)
        t[s8 + 18:s8 + 21] = struct.pack("<I", sizes[6] + give)[:3]
        out.append((f"vp8_hdr_parts8_{name}", riff(bytes(t))))
    big = bytearray(p8)
    big[s8:s8 + 3] = b"\xff\xff\x00"  # first partition "longer" than the data: cut to what is left, no error
    out.append(("vp8_hdr_parts8_size_past_end", riff(bytes(big))))
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.startswith("vp8_") and f.endswith(".webp"):
            os.remove(os.path.join(OUT, f))
    lines = []
    for name, data in cases():
        path = os.path.join(OUT, name + ".webp")
        with open(path, "wb") as f:
            f.write(data)
        try:
            im = Image.open(path).convert("RGB")
            lines.append(f"{name}.webp OK {im.width} {im.height} {fnv1a64(im.tobytes())}")
        except Exception as e:
            lines.append(f"{name}.webp ERR {type(e).__name__}: {str(e)[:60]}".rstrip())
    with open(os.path.join(OUT, "vp8_expected.txt"), "w") as f:
        f.write("# name, then OK width height fnv1a64 of Pillow 13's RGB, or ERR and Pillow's exception\n")
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} files, {sum(1 for l in lines if ' OK ' in l)} decoded by Pillow")


if __name__ == "__main__":
    main()
