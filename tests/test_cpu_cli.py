"""tests/test_cpu_cli.py — the program end to end on the cpu backend against HF's pooler_output.

Each fixture's image0_u8.raw (an S x S RGB image whose HF-processed pixels are pixels.f32[0]) is written as a
PNG with the standard library only, embedded by `siglip2-embed --backend cpu --weights <fixture>`, and compared
with HF's pooled.f32[0]: raw output (--no-normalize) within max |d| 1e-4 and cosine 0.99999 (the fp32 parity
gate), and the default output equal to it divided by its L2 norm. No resize happens (the image is already
S x S), so this isolates decode + conversion + encoder + writer.
"""
import os
import struct
import subprocess
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sgtest as t  # noqa: E402


def write_png(path, rgb):
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))  # filter type 0 on every row

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def embed(fixture, png, out, *extra):
    cmd = [t.BIN, "--backend", "cpu", "--weights", fixture, "-f", "f32", "-o", out, *extra, png]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return r, (np.fromfile(out, dtype=np.float32) if r.returncode == 0 and os.path.exists(out) else None)


def main():
    if not os.access(t.BIN, os.X_OK):
        t.fail(f"cpu cli: {t.BIN} not built")
        t.done()
    for name in ("tiny196", "tiny16"):
        fx = os.path.join(t.ROOT, "tests", "fixtures", name)
        pooled = np.fromfile(os.path.join(fx, "pooled.f32"), dtype=np.float32)
        u8 = np.fromfile(os.path.join(fx, "image0_u8.raw"), dtype=np.uint8)
        S = int(round((u8.size // 3) ** 0.5))
        D = pooled.size * S * S * 3 // np.fromfile(os.path.join(fx, "pixels.f32"), dtype=np.float32).size
        ref = pooled[:D].astype(np.float64)
        png = os.path.join(t.TMP, f"cpu_cli_{name}.png")
        write_png(png, u8.reshape(S, S, 3))
        r, raw = embed(fx, png, os.path.join(t.TMP, f"cpu_cli_{name}_raw.f32"), "--no-normalize")
        if raw is None or raw.size != D:
            t.fail(f"{name}: siglip2-embed --backend cpu --no-normalize: rc {r.returncode}, "
                   f"{None if raw is None else raw.size} floats (expected {D}): {r.stderr.strip()[-300:]}")
            continue
        mx = float(np.abs(raw - ref).max())
        cos = float(raw @ ref / np.linalg.norm(raw) / np.linalg.norm(ref))
        t.check(mx <= 1e-4 and cos >= 0.99999,
                f"{name}: PNG -> siglip2-embed --backend cpu --no-normalize vs HF pooler_output: max|d| {mx:.3g}, "
                f"cos {cos:.9f} (gate 1e-4, 0.99999)")
        r, nrm = embed(fx, png, os.path.join(t.TMP, f"cpu_cli_{name}_norm.f32"))
        ok = nrm is not None and nrm.size == D and float(np.abs(nrm - raw / np.linalg.norm(raw)).max()) <= 1e-6
        t.check(ok, f"{name}: default output is the raw embedding divided by its L2 norm (max|d| <= 1e-6)")
    t.done()


if __name__ == "__main__":
    main()
