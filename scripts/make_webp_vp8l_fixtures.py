#!/usr/bin/env python3
"""scripts/make_webp_vp8l_fixtures.py — lossless WebP test files for preprocess/decode_webp_vp8l.c, and Pillow's
answers for them (the reference).

Writes tests/images/webp/vp8l_*.webp and tests/images/webp/vp8l_expected.txt, one line per file:

    FILE OK W H MODE HASH     Pillow 13 decodes it: MODE is Pillow's mode (RGBA or RGB) and HASH the FNV-1a 64 of
                              Image.open(f).tobytes() in that mode (R,G,B[,A] interleaved, row-major)
    FILE ALPHA W H HASH       a lossy file with lossless alpha (ALPH compression 1, no filter): the hash of
                              Pillow's alpha channel, which is the ALPH chunk's VP8L stream's green channel
    FILE REFUSED              Pillow raises on Image.open(f).load()

Files:
- vp8l_cwebp_*: cwebp -lossless with -z 0..9, -q/-m, -exact, -near_lossless, on content with 1, 2, 3-4, 5-16,
  17-256 and many colours (colour indexing packing 8/4/2/1 pixels per byte, and none), gradients, noise and
  photo-like content (predictor modes, cross-colour), widths 1, odd, wide, 1x1, with and without alpha;
- vp8l_pil_*: Pillow's own lossless writer (im.save(f, "WEBP", lossless=True, ...));
- vp8l_hand_*: streams written bit by bit here (VP8LWriter) for what encoders never produce: every predictor
  mode 0..15 (14 and 15 predict black), cross-colour with random multipliers, a stream shorter than 8 bytes read
  on as zeros, bytes left over after the last pixel, and refusals: version 1, over-subscribed and incomplete
  prefix codes, an all-zero code-length code, a colour cache of 12 bits, a transform twice, a backward
  distance before the first pixel and one past the last pixel, a repeat past the alphabet, a max-symbol count
  past it, an unused group with a bad code, a distance code given only by an out-of-range simple symbol;
- vp8l_cut_* / vp8l_dmg_*: copies of some of the above whose VP8L payload is cut or has bytes changed (the
  RIFF sizes rewritten to match, so only the codec decides);
- vp8l_alpha_*: cwebp lossy files with -alpha_method 1 -alpha_filter none, and cut or damaged ALPH copies.
The C test (tests/test_webp_vp8l.c) walks each file's chunks itself and decodes the VP8L chunk (to its padded
end, as libwebp's demuxer hands it over) or the ALPH stream. Needs Pillow 13 with libwebp 1.6.0 and cwebp
(reference only; never at test time):

    python3 scripts/make_webp_vp8l_fixtures.py     # regenerates everything; review with git diff
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image, features
import PIL

from pillow_oracle import fnv1a64
import webp_files as wf


def riff(payload: bytes) -> bytes:
    """A simple lossless WebP around a VP8L payload."""
    return wf.riff([(b"VP8L", payload)])


def payload(d, tag):
    """The first chunk called tag's payload."""
    return next(p for t, p in wf.parse(d) if t == tag)


def replace_chunk(d, tag, new):
    """The file with the first chunk called tag's payload replaced (sizes rewritten)."""
    cs, done = [], False
    for t, p in wf.parse(d):
        cs.append((t, new if t == tag and not done else p))
        done = done or t == tag
    return wf.riff(cs)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "images", "webp")



# --- a VP8L bit writer, enough for hand-made streams ----------------------------------------------------------

CL_ORDER = [17, 18, 0, 1, 2, 3, 4, 5, 16, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]


def canonical_codes(lengths):
    """Canonical prefix codes (as in DEFLATE) for the given lengths: {symbol: (code, length)}."""
    codes, code = {}, 0
    for ln in range(1, 16):
        for s, l in enumerate(lengths):
            if l == ln:
                codes[s] = (code, ln)
                code += 1
        code <<= 1
    return codes


class VP8LWriter:
    def __init__(self):
        self.bits = []

    def put(self, v, n):  # n bits of v, least significant first
        for i in range(n):
            self.bits.append((v >> i) & 1)

    def put_code(self, code, n):  # a prefix code, first bit first
        for i in range(n - 1, -1, -1):
            self.bits.append((code >> i) & 1)

    def data(self):
        out = bytearray((len(self.bits) + 7) // 8)
        for i, b in enumerate(self.bits):
            out[i >> 3] |= b << (i & 7)
        return bytes(out)

    def header(self, w, h, alpha=0, version=0):
        self.put(0x2F, 8)
        self.put(w - 1, 14)
        self.put(h - 1, 14)
        self.put(alpha, 1)
        self.put(version, 3)

    def simple_code(self, syms):
        """1 or 2 symbols of length 1 (first symbol 1-bit when < 2, else 8-bit)."""
        self.put(1, 1)
        self.put(len(syms) - 1, 1)
        if syms[0] < 2:
            self.put(0, 1)
            self.put(syms[0], 1)
        else:
            self.put(1, 1)
            self.put(syms[0], 8)
        if len(syms) == 2:
            self.put(syms[1], 8)
        return {syms[0]: (0, 0)} if len(syms) == 1 or syms[0] == syms[1] else canonical_codes(
            [1 if s in syms else 0 for s in range(256)])

    def normal_code(self, lengths, cl_lengths=None, max_symbol=None, raw=None):
        """Code lengths through a code-length code whose 16 literal symbols all have 4 bits (a complete code);
        raw: a list of (clsym, extra_value) written instead of the lengths (for repeat codes)."""
        if cl_lengths is None:
            cl_lengths = [4] * 16 + [0, 0, 0]
            if raw:
                cl_lengths = [5] * 16 + [2, 2, 0]  # 16*2^-5 + 2*2^-2 = 1: complete with repeats 16 and 17
        self.put(0, 1)
        self.put(19 - 4, 4)
        for i in range(19):
            self.put(cl_lengths[CL_ORDER[i]], 3)
        clc = canonical_codes(cl_lengths)
        if max_symbol is None:
            self.put(0, 1)
        else:
            self.put(1, 1)
            self.put(7, 3)  # 2 + 2*7 = 16 bits of count
            self.put(max_symbol - 2, 16)
        items = raw if raw is not None else [(l, None) for l in lengths]
        for sym, extra in items:
            c, n = clc[sym]
            self.put_code(c, n)
            if sym == 16:
                self.put(extra, 2)
            elif sym == 17:
                self.put(extra, 3)
            elif sym == 18:
                self.put(extra, 7)
        return canonical_codes(lengths) if raw is None else None

    def sym(self, codes, s):
        c, n = codes[s]
        self.put_code(c, n)


def literal_codes(w: VP8LWriter, green_extra=0):
    """Green, red, blue, alpha: every byte value with 8 bits; distance: one symbol (0). green_extra: the number of
    length / cache symbols after the literals (given length 0)."""
    g = w.normal_code([8] * 256 + [0] * green_extra)
    r = w.normal_code([8] * 256)
    b = w.normal_code([8] * 256)
    a = w.normal_code([8] * 256)
    w.simple_code([0])
    return g, r, b, a


def put_pixels(w: VP8LWriter, codes, argb):
    g, r, b, a = codes
    for p in argb:
        w.sym(g, (p >> 8) & 255)
        w.sym(r, (p >> 16) & 255)
        w.sym(b, p & 255)
        w.sym(a, p >> 24)


def sub_image(w: VP8LWriter, argb):
    w.put(0, 1)  # no colour cache
    put_pixels(w, literal_codes(w, 24), argb)




def rand_argb(rng, n):
    return [int(x) for x in rng.integers(0, 1 << 32, n, dtype=np.uint64)]


def hand_streams(rng):
    """{name: (payload bytes, note)} for the hand-made streams."""
    out = {}

    def plain_image(w, h, pixels, transforms=None, cache_bits=None, before_codes=None, trailing=b""):
        s = VP8LWriter()
        s.header(w, h, alpha=1)  # Pillow's RGBA: the alpha channel is compared too
        for t in transforms or []:
            t(s)
        s.put(0, 1)  # no more transforms
        if cache_bits is not None:
            s.put(1, 1)
            s.put(cache_bits, 4)
        else:
            s.put(0, 1)
        s.put(0, 1)  # no entropy image
        if before_codes:
            before_codes(s)
        put_pixels(s, literal_codes(s, 24 + ((1 << cache_bits) if cache_bits else 0)), pixels)
        return s.data() + trailing

    # every predictor mode: 5 x 4 tiles of 4 x 4 pixels (modes 0..15, then 4 more), random residuals
    w, h = 19, 14

    def predictor(s, bits=2, modes=None):
        s.put(1, 1)
        s.put(0, 2)
        s.put(bits - 2, 3)
        tw, th = -(-w // (1 << bits)), -(-h // (1 << bits))
        sub_image(s, [modes[i % len(modes)] << 8 for i in range(tw * th)])  # the mode is the green byte

    out["vp8l_hand_predictor_modes.webp"] = plain_image(
        w, h, rand_argb(rng, w * h), [lambda s: predictor(s, 2, list(range(16)) + [11, 12, 13, 5])])
    # smooth content so the clamped modes 12 / 13 and select 11 see both signs
    y, x = np.mgrid[0:h, 0:w]
    smooth = [(int(a) << 24) | (int(r) << 16) | (int(g) << 8) | int(b) for a, r, g, b in zip(
        ((x * 37 + y * 11) % 256).ravel(), ((x * x + y * 5) % 256).ravel(), ((255 - x * 13) % 256).ravel(),
        ((y * y * 3 + x) % 256).ravel())]
    out["vp8l_hand_predictor_smooth.webp"] = plain_image(
        w, h, [v if i % 3 else v & 0x03030303 for i, v in enumerate(smooth)],
        [lambda s: predictor(s, 2, [13, 12, 11, 10, 5, 9, 3, 8, 6, 4, 7])])
    out["vp8l_hand_predictor_bits3.webp"] = plain_image(
        w, h, rand_argb(rng, w * h), [lambda s: predictor(s, 3, [3, 9, 10, 5, 14, 15])])

    def cross_color(s, bits=2):
        s.put(1, 1)
        s.put(1, 2)
        s.put(bits - 2, 3)
        tw, th = -(-w // (1 << bits)), -(-h // (1 << bits))
        sub_image(s, rand_argb(rng, tw * th))

    out["vp8l_hand_cross_color.webp"] = plain_image(w, h, rand_argb(rng, w * h), [cross_color])

    def subtract_green(s):
        s.put(1, 1)
        s.put(2, 2)

    out["vp8l_hand_all_three.webp"] = plain_image(
        w, h, rand_argb(rng, w * h), [subtract_green, cross_color, lambda s: predictor(s, 2, [1, 2, 11, 13])])
    def color_indexing(ncolors):
        def fn(s):
            s.put(1, 1)
            s.put(3, 2)
            s.put(ncolors - 1, 8)
            sub_image(s, rand_argb(rng, ncolors))
        return fn

    # indices past the palette (random green bytes) give transparent black
    out["vp8l_hand_palette3_past_end.webp"] = plain_image(5, 2, rand_argb(rng, 4), [color_indexing(3)])
    out["vp8l_hand_palette17_past_end.webp"] = plain_image(4, 3, rand_argb(rng, 12), [color_indexing(17)])
    out["vp8l_hand_trailing_bytes.webp"] = plain_image(3, 2, rand_argb(rng, 6), trailing=b"\xff" * 9)

    # refusals
    bad = bytearray(plain_image(3, 2, rand_argb(rng, 6)))
    bad[4] |= 1 << 5  # version 1
    out["vp8l_hand_bad_version.webp"] = bytes(bad)
    out["vp8l_hand_cache_12_bits.webp"] = plain_image(2, 2, rand_argb(rng, 4), cache_bits=12)
    out["vp8l_hand_transform_twice.webp"] = plain_image(2, 2, rand_argb(rng, 4), [subtract_green, subtract_green])

    def code_image(w_, h_, codes_fn, body_fn):
        s = VP8LWriter()
        s.header(w_, h_, alpha=1)
        s.put(0, 3)
        codes = codes_fn(s)
        body_fn(s, codes)
        return s.data() + b"\0\0\0\0"

    def with_green(lengths):
        def fn(s):
            g = s.normal_code(lengths)
            r = s.normal_code([8] * 256)
            b = s.normal_code([8] * 256)
            a = s.normal_code([8] * 256)
            d = s.simple_code([0])
            return g, r, b, a, d
        return fn

    def lit(s, c, p):
        g, r, b, a = c[:4]
        s.sym(g, (p >> 8) & 255)
        s.sym(r, (p >> 16) & 255)
        s.sym(b, p & 255)
        s.sym(a, p >> 24)

    over = [1, 1, 1] + [0] * 277
    out["vp8l_hand_oversubscribed.webp"] = code_image(2, 1, with_green(over), lambda s, c: None)
    out["vp8l_hand_incomplete.webp"] = code_image(2, 1, with_green([1, 2] + [0] * 278), lambda s, c: None)
    # a complete green code with one length symbol (256: length 1) beside 256 literals of 9 bits
    back = [9] * 256 + [1] + [0] * 23
    out["vp8l_hand_distance_before_start.webp"] = code_image(
        4, 2, with_green(back), lambda s, c: s.sym(c[0], 256))  # length 1, distance code 1: one row up
    out["vp8l_hand_copy_ok.webp"] = code_image(
        4, 2, with_green(back), lambda s, c: ([lit(s, c, p) for p in rand_argb(rng, 4)],
                                              [s.sym(c[0], 256) for _ in range(4)]))

    def clamp_codes(s):
        g = s.normal_code(back)
        r = s.normal_code([8] * 256)
        b = s.normal_code([8] * 256)
        a = s.normal_code([8] * 256)
        d = s.simple_code([3])  # distance code 4 -> 2-D code 4: (dy 1, dx -1) -> 1 * 1 - 1 = 0, clamped to 1
        return g, r, b, a, d

    out["vp8l_hand_distance_clamp.webp"] = code_image(
        1, 3, clamp_codes, lambda s, c: (lit(s, c, 0x80402010), s.sym(c[0], 256), lit(s, c, 0x11223344)))

    def len_code_past_end(s):
        g = s.normal_code([9] * 256 + [0] * 3 + [1] + [0] * 20)  # length symbol 3: length 4
        r = s.normal_code([8] * 256)
        b = s.normal_code([8] * 256)
        a = s.normal_code([8] * 256)
        d = s.simple_code([1])  # distance code 2 -> 2-D code 2: (0, 1) -> 1 pixel back
        return g, r, b, a, d

    out["vp8l_hand_copy_past_end.webp"] = code_image(
        3, 2, len_code_past_end, lambda s, c: ([lit(s, c, p) for p in rand_argb(rng, 3)], s.sym(c[0], 259)))

    def zero_cl(s):
        s.normal_code(None, cl_lengths=[0] * 19, raw=[])
        return None

    out["vp8l_hand_code_length_code_zero.webp"] = code_image(2, 1, zero_cl, lambda s, c: None)

    def repeat_past(s):
        s.normal_code(None, raw=[(8, None)] * 250 + [(17, 7)] * 2)  # 250 + 2 * 10 > 256 (red alphabet)
        return None

    def repeat_past_full(s):
        s.normal_code([8] * 256 + [0] * 24)
        return repeat_past(s)

    out["vp8l_hand_repeat_past_alphabet.webp"] = code_image(2, 1, repeat_past_full, lambda s, c: None)

    def max_symbol_past(s):
        s.normal_code([8] * 256 + [0] * 24, max_symbol=281)
        return None

    out["vp8l_hand_max_symbol_past.webp"] = code_image(2, 1, max_symbol_past, lambda s, c: None)

    def dist_out_of_range(two):
        def fn(s):
            g = s.normal_code([8] * 256 + [0] * 24)
            r = s.normal_code([8] * 256)
            b = s.normal_code([8] * 256)
            a = s.normal_code([8] * 256)
            s.simple_code([200, 3] if two else [200])  # symbol 200 is past the 40 distance codes
            return g, r, b, a
        return fn

    out["vp8l_hand_dist_simple_out_of_range.webp"] = code_image(
        2, 1, dist_out_of_range(False), lambda s, c: [lit(s, c, p) for p in rand_argb(rng, 2)])
    out["vp8l_hand_dist_simple_one_in_range.webp"] = code_image(
        2, 1, dist_out_of_range(True), lambda s, c: [lit(s, c, p) for p in rand_argb(rng, 2)])

    # an entropy image naming groups 0 and 2 only; group 1 (unused) has an over-subscribed code
    def meta(bad_unused):
        s = VP8LWriter()
        s.header(8, 4, alpha=1)
        s.put(0, 1)  # no transforms
        s.put(0, 1)  # no cache
        s.put(1, 1)  # entropy image
        s.put(0, 3)  # 4x4 tiles -> 2 x 1
        sub_image(s, [0 << 8, 2 << 8])
        groups = []
        for gi in range(3):
            if gi == 1 and bad_unused:
                s.normal_code(over)
                for _ in range(4):
                    s.simple_code([0])
                groups.append(None)
            else:
                groups.append(literal_codes(s, 24))
        for yy in range(4):
            for xx in range(8):
                lit(s, groups[0 if xx < 4 else 2], int(rng.integers(0, 1 << 32, dtype=np.uint64)))
        return s.data()

    out["vp8l_hand_meta_groups.webp"] = meta(False)
    out["vp8l_hand_meta_unused_bad.webp"] = meta(True)
    return out


def hand_alpha_streams(rng):
    """{name: (w, h, ALPH stream after its header byte)}: the end-of-stream rules of libwebp's alpha decoder."""
    out = {}

    def window(npix, ones):
        """No transform; green a 2-symbol simple code (0 and 1, one bit a pixel), the others one symbol."""
        s = VP8LWriter()
        s.put(0, 3)
        s.simple_code([0, 1])
        for _ in range(4):
            s.simple_code([0])
        for i in range(npix):
            s.put(1 if i in ones else 0, 1)
        return s

    s = window(8, {0, 2})  # 31 + 8 bits: pixels 3..7 are zero bits, past a 4-byte stream but inside bit 64
    out["short_window"] = (8, 1, s.data()[:4])
    s = window(90, {0, 5})  # 121 bits; cut to 15 bytes the last pixel is past the end (>= 8 bytes: refused)
    out["overread_long"] = (90, 1, s.data()[:15])
    out["overread_long_whole"] = (90, 1, s.data())

    def palette_stream(w, h, wide_simple, cache):
        """Colour indexing of 256 colours (no packing), then 8-bit indices: libwebp's 8-bit alpha path unless
        cache. wide_simple: how many one-symbol codes use an 8-bit symbol (7 more bits each), to place the last
        pixel's code against the byte boundary."""
        s = VP8LWriter()
        s.put(1, 1)
        s.put(3, 2)
        s.put(255, 8)
        s.put(0, 1)  # palette: no cache
        s.normal_code([8] * 256 + [0] * 24)
        n = 0
        for _ in range(3):
            s.simple_code([200 + n] if n < wide_simple else [0])
            n += 1
        s.simple_code([0])
        g = canonical_codes([8] * 256)
        for _ in range(256):
            s.sym(g, 1)  # green deltas of 1: palette entry i has green i + 1
        s.put(0, 1)  # no more transforms
        if cache:
            s.put(1, 1)
            s.put(1, 4)
        else:
            s.put(0, 1)
        s.put(0, 1)  # no entropy image
        s.normal_code([8] * 256 + [0] * (24 + (2 if cache else 0)))
        for _ in range(3):
            s.simple_code([200 + n] if n < wide_simple else [0])
            n += 1
        s.simple_code([0])
        for v in rng.integers(0, 256, w * h):
            s.sym(g, int(v))
        return s

    def meta_stream(w, h, tile_groups, ngroups):
        """Colour indexing (256 colours), then an entropy image of 4x4 tiles naming tile_groups; groups not
        named get a two-symbol red code (so libwebp's 8-bit path is off if it keeps them)."""
        s = VP8LWriter()
        s.put(1, 1)
        s.put(3, 2)
        s.put(255, 8)
        sub_image(s, [0x00000100] * 256)  # green deltas of 1
        s.put(0, 1)  # no more transforms
        s.put(0, 1)  # no cache
        s.put(1, 1)
        s.put(0, 3)  # 4x4 tiles
        sub_image(s, [gid << 8 for gid in tile_groups])
        green = {}
        for gi in range(ngroups):
            if gi in tile_groups:
                green[gi] = s.normal_code([8] * 256 + [0] * 24)
                for _ in range(4):
                    s.simple_code([0])
            else:
                s.simple_code([0])
                s.simple_code([0, 1])
                for _ in range(3):
                    s.simple_code([0])
        tiles_x = -(-w // 4)
        for i, v in enumerate(rng.integers(0, 256, w * h)):
            y_, x_ = divmod(i, w)
            s.sym(green[tile_groups[(y_ // 4) * tiles_x + x_ // 4]], int(v))
        return s

    s = meta_stream(7, 3, [0, 2], 3)  # 3 groups <= 1000 and <= 21 pixels: libwebp keeps group 1 -> 32-bit path
    out["meta_kept_whole"] = (7, 3, s.data())
    out["meta_kept_cut_in_last"] = (7, 3, s.data()[:-1])
    s = meta_stream(2, 1, [5], 6)  # 6 groups > 2 pixels: libwebp keeps only group 5 -> 8-bit path
    out["meta_mapped_whole"] = (2, 1, s.data())
    out["meta_mapped_cut_in_last"] = (2, 1, s.data()[:-1])

    w, h = 7, 3
    s = palette_stream(w, h, 0, False)
    assert len(s.bits) % 8 == 5  # the last index has 3 bits in the second-last byte, 5 in the last
    out["pal8_whole"] = (w, h, s.data())
    out["pal8_cut_in_last"] = (w, h, s.data()[:-1])
    out["pal8_cut_two_short"] = (w, h, s.data()[:-2])
    s = palette_stream(w, h, 5, False)
    assert len(s.bits) % 8 == 0  # the last index is the last byte
    out["pal8_cut_before_last"] = (w, h, s.data()[:-1])  # the 8-bit path reads it from the wrapped window
    s = palette_stream(w, h, 0, True)
    out["pal32_whole"] = (w, h, s.data())
    out["pal32_cut_in_last"] = (w, h, s.data()[:-1])
    return out


# --- content for the encoders -----------------------------------------------------------------------------

def content(kind, w, h, rng, alpha=False):
    y, x = np.mgrid[0:h, 0:w]
    if kind.startswith("pal"):
        n = int(kind[3:])
        pal = rng.integers(0, 256, (n, 4))
        pal[:, 3] = 255 if not alpha else pal[:, 3]
        a = pal[(x * 7 + y * 3 + rng.integers(0, 2, (h, w))) % n]
    elif kind == "grad":
        a = np.stack([x * 5 + y, y * 3, (x + y) * 2, 255 - x], -1)
    elif kind == "noise":
        a = rng.integers(0, 256, (h, w, 4))
    elif kind == "photo":
        a = np.stack([np.sin(x / 6.0) * 90 + 128 + y, np.cos(y / 5.0) * 90 + 128, (x * y) % 97 + 60,
                      200 + x % 50], -1) + rng.integers(0, 5, (h, w, 4))
    elif kind == "flat":
        a = np.zeros((h, w, 4)) + [10, 200, 30, 128]
    a = np.clip(a, 0, 255).astype(np.uint8)
    if not alpha:
        a[..., 3] = 255
    return Image.fromarray(a, "RGBA") if alpha else Image.fromarray(a[..., :3], "RGB")


CWEBP_CASES = [  # name, kind, w, h, alpha, cwebp flags
    ("pal2_z9", "pal2", 21, 9, False, ["-z", "9"]),
    ("pal2_w1", "pal2", 1, 17, False, ["-z", "6"]),
    ("pal3_z6", "pal3", 13, 7, False, ["-z", "6"]),
    ("pal4_alpha", "pal4", 19, 5, True, ["-z", "3", "-exact"]),
    ("pal11_z0", "pal11", 23, 6, False, ["-z", "0"]),
    ("pal16_z9", "pal16", 17, 11, True, ["-z", "9"]),
    ("pal17_z5", "pal17", 15, 10, False, ["-z", "5"]),
    ("pal200_z7", "pal200", 31, 12, False, ["-z", "7"]),
    ("pal256_alpha", "pal256", 33, 20, True, ["-z", "4", "-exact"]),
    ("grad_z0", "grad", 40, 24, False, ["-z", "0"]),
    ("grad_z9", "grad", 40, 24, False, ["-z", "9"]),
    ("grad_alpha_exact", "grad", 29, 21, True, ["-z", "8", "-exact"]),
    ("grad_wide", "grad", 300, 3, False, ["-z", "6"]),
    ("noise_z1", "noise", 17, 13, True, ["-z", "1"]),
    ("noise_z9", "noise", 11, 9, False, ["-z", "9"]),
    ("photo_z2", "photo", 48, 32, False, ["-z", "2"]),
    ("photo_z6", "photo", 48, 32, True, ["-z", "6"]),
    ("photo_z9", "photo", 37, 29, False, ["-z", "9"]),
    ("photo_q100_m6", "photo", 41, 23, False, ["-q", "100", "-m", "6"]),
    ("photo_near", "photo", 35, 20, False, ["-near_lossless", "40", "-z", "5"]),
    ("photo_w1", "photo", 1, 40, False, ["-z", "9"]),
    ("photo_h1", "photo", 57, 1, False, ["-z", "9"]),
    ("photo_odd", "photo", 7, 5, True, ["-z", "3", "-exact"]),
    ("flat_1x1", "flat", 1, 1, False, ["-z", "9"]),
    ("flat_1x1_alpha", "flat", 1, 1, True, ["-z", "0", "-exact"]),
    ("flat_big", "flat", 200, 150, False, ["-z", "6"]),
]

PIL_CASES = [  # name, kind, w, h, alpha, save kwargs
    ("photo_m0", "photo", 45, 27, False, dict(quality=0, method=0)),
    ("photo_m6", "photo", 45, 27, True, dict(quality=100, method=6, exact=True)),
    ("grad_m4", "grad", 64, 9, False, dict(quality=50, method=4)),
    ("pal5_m6", "pal5", 19, 19, False, dict(quality=90, method=6)),
    ("noise_m2", "noise", 9, 30, True, dict(quality=30, method=2)),
]

ALPHA_CASES = [  # name, w, h, alpha kind, cwebp extra flags
    ("binary", 37, 21, "binary", []),
    ("ramp", 40, 12, "ramp", []),
    ("noise", 19, 17, "noise", []),
    ("levels", 33, 25, "levels", ["-alpha_q", "30"]),
    ("w1", 1, 64, "binary", []),
    ("photo", 48, 30, "photo", ["-m", "6"]),
]


def alpha_image(kind, w, h, rng):
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([x * 6 % 256, y * 9 % 256, (x + y) * 4 % 256], -1)
    if kind == "binary":
        a = np.where((x // 3 + y // 2) % 2 == 0, 0, 255)
    elif kind == "ramp":
        a = x * 255 // max(1, w - 1) ^ (y % 5)
    elif kind == "noise":  # random 2x2 blocks (pure noise would be stored uncompressed)
        a = np.kron(rng.integers(0, 256, (h // 2 + 1, w // 2 + 1)), np.ones((2, 2), int))[:h, :w]
    elif kind == "levels":
        a = (np.sin(x / 4.0) * 120 + 128 + y * 2)
    else:
        a = np.clip(np.cos(x / 7.0) * 100 + np.sin(y / 5.0) * 100 + 128 + rng.integers(0, 3, (h, w)), 0, 255)
    a = np.clip(a, 0, 254).astype(np.uint8)
    return Image.fromarray(np.dstack([rgb.astype(np.uint8), a]), "RGBA")


# --- damage -----------------------------------------------------------------------------------------------







def pillow_line(name, path, alpha):
    try:
        im = Image.open(path)
        im.load()
    except Exception:
        return f"{name} REFUSED"
    if alpha:
        assert im.mode == "RGBA"
        return f"{name} ALPHA {im.width} {im.height} {fnv1a64(im.getchannel('A').tobytes())}"
    assert im.mode in ("RGB", "RGBA"), im.mode
    return f"{name} OK {im.width} {im.height} {im.mode} {fnv1a64(im.tobytes())}"


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        if f.startswith("vp8l_"):
            os.unlink(os.path.join(OUT, f))
    rng = np.random.default_rng(20261127)
    files = {}  # name -> (bytes, is_alpha)
    cwebp_version = subprocess.run(["cwebp", "-version"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind, w, h, alpha, flags in CWEBP_CASES:
            png, webp = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.webp")
            content(kind, w, h, rng, alpha).save(png)
            subprocess.run(["cwebp", "-quiet", "-lossless"] + flags + [png, "-o", webp], check=True)
            files[f"vp8l_cwebp_{name}.webp"] = (open(webp, "rb").read(), False)
        for name, kind, w, h, alpha, kw in PIL_CASES:
            webp = os.path.join(tmp, "out.webp")
            content(kind, w, h, rng, alpha).save(webp, "WEBP", lossless=True, **kw)
            files[f"vp8l_pil_{name}.webp"] = (open(webp, "rb").read(), False)
        for name, w, h, kind, flags in ALPHA_CASES:
            png, webp = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.webp")
            alpha_image(kind, w, h, rng).save(png)
            subprocess.run(["cwebp", "-quiet", "-q", "60", "-alpha_method", "1", "-alpha_filter", "none"] + flags +
                           [png, "-o", webp], check=True)
            d = open(webp, "rb").read()
            hdr = payload(d, b"ALPH")[0]
            assert hdr & 3 == 1 and (hdr >> 2) & 3 == 0, (name, hdr)
            files[f"vp8l_alpha_{name}.webp"] = (d, True)
    for name, p in hand_streams(rng).items():
        files[name] = (riff(p), False)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (w, h, stream) in hand_alpha_streams(rng).items():
            png, webp = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.webp")
            alpha_image("noise", w, h, rng).save(png)
            subprocess.run(["cwebp", "-quiet", "-q", "60", "-alpha_method", "1", "-alpha_filter", "none", png,
                            "-o", webp], check=True)
            files[f"vp8l_alpha_hand_{name}.webp"] = (replace_chunk(open(webp, "rb").read(), b"ALPH",
                                                                    b"\x01" + stream), True)

    # cut and damaged copies: the codec's verdict on a stream that runs out or has changed bytes
    for src in ["vp8l_cwebp_photo_z6.webp", "vp8l_cwebp_pal3_z6.webp", "vp8l_cwebp_pal200_z7.webp",
                "vp8l_pil_photo_m6.webp", "vp8l_cwebp_grad_z9.webp", "vp8l_hand_predictor_modes.webp"]:
        d = files[src][0]
        p = payload(d, b"VP8L")
        base = src[len("vp8l_"):-len(".webp")]
        for frac in (0.1, 0.5, 0.9, 0.99):
            n = max(1, int(len(p) * frac))
            files[f"vp8l_cut_{base}_{n}.webp"] = (replace_chunk(d, b"VP8L", p[:n]), False)
        files[f"vp8l_cut_{base}_last.webp"] = (replace_chunk(d, b"VP8L", p[:-1]), False)
        if len(p) % 2 == 0:  # the chunk one byte shorter, its pad byte the cut byte: libwebp reads the pad too
            q = bytearray(replace_chunk(d, b"VP8L", p[:-1]))
            q[-1] = p[-1]
            files[f"vp8l_cut_{base}_padbyte.webp"] = (bytes(q), False)
        for k in range(3):
            q = bytearray(p)
            i = int(rng.integers(5, len(q)))
            q[i] ^= 1 << int(rng.integers(0, 8))
            files[f"vp8l_dmg_{base}_{k}.webp"] = (replace_chunk(d, b"VP8L", bytes(q)), False)
    for src in ["vp8l_alpha_binary.webp", "vp8l_alpha_photo.webp", "vp8l_alpha_levels.webp"]:
        d = files[src][0]
        p = payload(d, b"ALPH")
        base = src[len("vp8l_alpha_"):-len(".webp")]
        for n in sorted({2, len(p) // 2, len(p) - 2, len(p) - 1}):
            files[f"vp8l_alpha_cut_{base}_{n}.webp"] = (replace_chunk(d, b"ALPH", p[:n]), True)
        for k in range(3):
            q = bytearray(p)
            i = int(rng.integers(1, len(q)))
            q[i] ^= 1 << int(rng.integers(0, 8))
            files[f"vp8l_alpha_dmg_{base}_{k}.webp"] = (replace_chunk(d, b"ALPH", bytes(q)), True)

    lines = [f"# scripts/make_webp_vp8l_fixtures.py: Pillow {PIL.__version__}, libwebp {features.version('webp')}, "
             f"cwebp {cwebp_version}",
             "# FILE OK W H MODE HASH | FILE ALPHA W H HASH | FILE REFUSED  (HASH: FNV-1a 64 of Pillow's bytes)"]
    for name in sorted(files):
        data, alpha = files[name]
        path = os.path.join(OUT, name)
        with open(path, "wb") as f:
            f.write(data)
        lines.append(pillow_line(name, path, alpha))
    must_refuse = ["bad_version", "cache_12_bits", "transform_twice", "oversubscribed", "incomplete",
                   "distance_before_start", "copy_past_end", "code_length_code_zero", "repeat_past_alphabet",
                   "max_symbol_past", "dist_simple_out_of_range", "meta_unused_bad"]
    must_decode = ["predictor_modes", "predictor_smooth", "predictor_bits3", "cross_color", "all_three",
                   "trailing_bytes", "copy_ok", "distance_clamp", "palette3_past_end", "palette17_past_end", "dist_simple_one_in_range",
                   "meta_groups"]
    verdict = {ln.split()[0]: ln.split()[1] for ln in lines[2:]}
    for m in must_refuse:
        assert verdict[f"vp8l_hand_{m}.webp"] == "REFUSED", m
    for m in must_decode:
        assert verdict[f"vp8l_hand_{m}.webp"] == "OK", m
    for m in ["short_window", "overread_long_whole", "pal8_whole", "pal8_cut_in_last", "pal8_cut_before_last",
              "pal32_whole", "meta_kept_whole", "meta_mapped_whole", "meta_mapped_cut_in_last"]:
        assert verdict[f"vp8l_alpha_hand_{m}.webp"] == "ALPHA", m
    for m in ["overread_long", "pal8_cut_two_short", "pal32_cut_in_last", "meta_kept_cut_in_last"]:
        assert verdict[f"vp8l_alpha_hand_{m}.webp"] == "REFUSED", m
    with open(os.path.join(OUT, "vp8l_expected.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    total = sum(len(v[0]) for v in files.values())
    print(f"{len(files)} files, {total} bytes; {sum(v == 'REFUSED' for v in verdict.values())} refused")


if __name__ == "__main__":
    sys.exit(main())
