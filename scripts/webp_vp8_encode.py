"""scripts/webp_vp8_encode.py — lossy WebP encoding through the system libwebp (ctypes), for what cwebp cannot set.

Debian's cwebp (libwebp 1.2.4) has no option for the number of token partitions, which the VP8 fixtures and the
differential need (1, 2, 4 or 8 partitions exercise the decoder's partition table and per-row switching). This
calls WebPEncode from libwebp.so.7 with a WebPConfig of our own; the structures are libwebp 1.2's public ABI
(encoder ABI 0x020f: src/webp/encode.h). Used by make_webp_vp8_fixtures.py and webp_vp8_differential.py.
encode(rgb_bytes, w, h, **options) returns the whole .webp file; options are WebPConfig fields (quality, method,
segments, sns_strength, filter_strength, filter_sharpness, filter_type, autofilter, partitions, pass_,
use_sharp_yuv, preprocessing, partition_limit).
"""
import ctypes

_ABI = 0x020F


class _Config(ctypes.Structure):
    _fields_ = [(n, t) for n, t in [
        ("lossless", ctypes.c_int), ("quality", ctypes.c_float), ("method", ctypes.c_int),
        ("image_hint", ctypes.c_int), ("target_size", ctypes.c_int), ("target_PSNR", ctypes.c_float),
        ("segments", ctypes.c_int), ("sns_strength", ctypes.c_int), ("filter_strength", ctypes.c_int),
        ("filter_sharpness", ctypes.c_int), ("filter_type", ctypes.c_int), ("autofilter", ctypes.c_int),
        ("alpha_compression", ctypes.c_int), ("alpha_filtering", ctypes.c_int), ("alpha_quality", ctypes.c_int),
        ("pass_", ctypes.c_int), ("show_compressed", ctypes.c_int), ("preprocessing", ctypes.c_int),
        ("partitions", ctypes.c_int), ("partition_limit", ctypes.c_int), ("emulate_jpeg_size", ctypes.c_int),
        ("thread_level", ctypes.c_int), ("low_memory", ctypes.c_int), ("near_lossless", ctypes.c_int),
        ("exact", ctypes.c_int), ("use_delta_palette", ctypes.c_int), ("use_sharp_yuv", ctypes.c_int),
        ("qmin", ctypes.c_int), ("qmax", ctypes.c_int)]]


_P = ctypes.c_void_p


class _Picture(ctypes.Structure):
    _fields_ = [
        ("use_argb", ctypes.c_int), ("colorspace", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
        ("y", _P), ("u", _P), ("v", _P), ("y_stride", ctypes.c_int), ("uv_stride", ctypes.c_int), ("a", _P),
        ("a_stride", ctypes.c_int), ("pad1", ctypes.c_uint32 * 2), ("argb", _P), ("argb_stride", ctypes.c_int),
        ("pad2", ctypes.c_uint32 * 3), ("writer", _P), ("custom_ptr", _P), ("extra_info_type", ctypes.c_int),
        ("extra_info", _P), ("stats", _P), ("error_code", ctypes.c_int), ("progress_hook", _P), ("user_data", _P),
        ("pad3", ctypes.c_uint32 * 3), ("pad4", _P), ("pad5", _P), ("pad6", ctypes.c_uint32 * 8),
        ("memory_", _P), ("memory_argb_", _P), ("pad7", _P * 2)]


class _Writer(ctypes.Structure):
    _fields_ = [("mem", ctypes.POINTER(ctypes.c_uint8)), ("size", ctypes.c_size_t), ("max_size", ctypes.c_size_t),
                ("pad", ctypes.c_uint32)]


_lib = None


def _load():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libwebp.so.7")
        _lib.WebPConfigInitInternal.argtypes = [ctypes.POINTER(_Config), ctypes.c_int, ctypes.c_float, ctypes.c_int]
        _lib.WebPValidateConfig.argtypes = [ctypes.POINTER(_Config)]
        _lib.WebPPictureInitInternal.argtypes = [ctypes.POINTER(_Picture), ctypes.c_int]
        _lib.WebPPictureImportRGB.argtypes = [ctypes.POINTER(_Picture), ctypes.c_char_p, ctypes.c_int]
        _lib.WebPMemoryWriterInit.argtypes = [ctypes.POINTER(_Writer)]
        _lib.WebPMemoryWriterClear.argtypes = [ctypes.POINTER(_Writer)]
        _lib.WebPEncode.argtypes = [ctypes.POINTER(_Config), ctypes.POINTER(_Picture)]
        _lib.WebPPictureFree.argtypes = [ctypes.POINTER(_Picture)]
    return _lib


def encode(rgb, w, h, **options):
    """The .webp bytes of w x h RGB (bytes, row-major) with WebPConfig fields set from options."""
    lib = _load()
    cfg = _Config()
    if not lib.WebPConfigInitInternal(ctypes.byref(cfg), 0, ctypes.c_float(75.0), _ABI):
        raise RuntimeError("libwebp: config ABI mismatch")
    for k, v in options.items():
        setattr(cfg, k, v)
    if not lib.WebPValidateConfig(ctypes.byref(cfg)):
        raise ValueError(f"libwebp: invalid config {options}")
    pic = _Picture()
    if not lib.WebPPictureInitInternal(ctypes.byref(pic), _ABI):
        raise RuntimeError("libwebp: picture ABI mismatch")
    pic.width, pic.height = w, h
    wr = _Writer()
    lib.WebPMemoryWriterInit(ctypes.byref(wr))
    try:
        if not lib.WebPPictureImportRGB(ctypes.byref(pic), bytes(rgb), 3 * w):
            raise RuntimeError("libwebp: import failed")
        pic.writer = ctypes.cast(lib.WebPMemoryWrite, _P)
        pic.custom_ptr = ctypes.cast(ctypes.byref(wr), _P)
        if not lib.WebPEncode(ctypes.byref(cfg), ctypes.byref(pic)):
            raise RuntimeError(f"libwebp: encode failed, error {pic.error_code}")
        return ctypes.string_at(wr.mem, wr.size)
    finally:
        lib.WebPPictureFree(ctypes.byref(pic))
        lib.WebPMemoryWriterClear(ctypes.byref(wr))
