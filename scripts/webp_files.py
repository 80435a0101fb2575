"""scripts/webp_files.py — WebP files for the tests: chunks read and written by hand, streams from cwebp / Pillow.

Used by make_goldens.py (tests/images/webp_*.webp), make_corrupt_goldens.py (damaged and cut WebPs) and
webp_differential.py (random container damage against Pillow). A file is a list of (tag, payload) chunks after
"RIFF size WEBP"; riff() writes them with even padding and the right sizes unless told otherwise, so a test can
put any chunk anywhere (ALPH after its image, a second VP8X, an ANMF whose size lies, ...).
Streams come from cwebp (Debian's libwebp tools: raw or lossless alpha, lossy or lossless) or Pillow; the pixels
to match are always those Pillow 13 decodes, whatever made the file.
"""
import io
import os
import struct
import subprocess
import tempfile

import numpy as np
from PIL import Image


def chunk(tag, payload, size=None, pad=True):
    """One chunk: tag, the size field (len(payload) unless given), payload, a zero pad byte after an odd one."""
    size = len(payload) if size is None else size
    return tag + struct.pack("<I", size & 0xFFFFFFFF) + payload + (b"\0" if pad and len(payload) % 2 else b"")


def riff(chunks, riff_size=None, tail=b""):
    """A RIFF WEBP file of (tag, payload) chunks (or already written chunk bytes); tail goes after the RIFF end."""
    body = b"WEBP" + b"".join(c if isinstance(c, bytes) else chunk(*c) for c in chunks)
    size = len(body) if riff_size is None else riff_size
    return b"RIFF" + struct.pack("<I", size & 0xFFFFFFFF) + body + tail


def parse(data):
    """The (tag, payload) chunks of a well-formed file (simple or VP8X; ANMF payloads left whole)."""
    out, p, end = [], 12, 8 + struct.unpack_from("<I", data, 4)[0]
    while p + 8 <= end:
        tag, n = data[p:p + 4], struct.unpack_from("<I", data, p + 4)[0]
        out.append((tag, data[p + 8:p + 8 + n]))
        p += 8 + n + (n & 1)
    return out


def image_chunks(data):
    """The image-bearing chunks (ALPH, VP8 / VP8L) of a still file, in order."""
    return [c for c in parse(data) if c[0] in (b"ALPH", b"VP8 ", b"VP8L")]


def vp8x(flags, w, h, extra=b""):
    return (b"VP8X", bytes([flags, 0, 0, 0]) + (w - 1).to_bytes(3, "little") + (h - 1).to_bytes(3, "little") + extra)


def anim(bg=0xFFFFFFFF, loops=0):
    return (b"ANIM", struct.pack("<IH", bg, loops))


def anmf(x, y, w, h, frame_chunks, duration=100, bits=0):
    """An ANMF chunk: offset (x, y even), size w x h, then the frame's chunks written whole."""
    head = (x // 2).to_bytes(3, "little") + (y // 2).to_bytes(3, "little") + (w - 1).to_bytes(3, "little") + \
        (h - 1).to_bytes(3, "little") + duration.to_bytes(3, "little") + bytes([bits])
    return (b"ANMF", head + b"".join(chunk(*c) for c in frame_chunks))


def cwebp(rgb_or_rgba, *args):
    """cwebp's output for an image (numpy HxWx3 or HxWx4) with the given options."""
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.png"), os.path.join(d, "out.webp")
        Image.fromarray(rgb_or_rgba).save(src)
        subprocess.run(["cwebp", "-quiet", *args, src, "-o", dst], check=True)
        return open(dst, "rb").read()


def pillow_webp(im, **kw):
    b = io.BytesIO()
    im.save(b, "WEBP", **kw)
    return b.getvalue()


def still_ext(image, flags=0x10, exif=None, xmp=None, iccp=None, before=(), after=()):
    """A VP8X still file around the image chunks of a simple or VP8X file `image`: flags as given (the EXIF /
    XMP / ICCP flags added for the chunks passed), canvas the image's size."""
    im = Image.open(io.BytesIO(image))
    chunks = image_chunks(image)
    meta_before = [(b"ICCP", iccp)] if iccp is not None else []
    meta_after = ([(b"EXIF", exif)] if exif is not None else []) + ([(b"XMP ", xmp)] if xmp is not None else [])
    flags |= (0x20 if iccp is not None else 0) | (0x08 if exif is not None else 0) | (0x04 if xmp is not None else 0)
    return riff([vp8x(flags, *im.size)] + meta_before + list(before) + chunks + list(after) + meta_after)


def pattern(w, h, seed, alpha=False):
    """Smooth colour with some noise (an image a lossy encoder keeps detail of); alpha: a ramp with holes."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / max(w, 1) * 5.1 + seed) * np.cos(y / max(h, 1) * 2.7)
    g = 255 * (x + 2 * y) / max(w + 2 * h - 3, 1)
    b = np.where(((x // 5 + y // 3) % 2) == 0, 30.0, 220.0)
    img = np.clip(np.stack([r, g, b], -1) + rng.normal(0, 10, (h, w, 3)), 0, 255).astype(np.uint8)
    if not alpha:
        return img
    a = ((x * 255 / max(w - 1, 1)) * (((x // 4 + y // 4) % 3) != 0)).astype(np.uint8)
    return np.dstack([img, a])
