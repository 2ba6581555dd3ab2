"""Decoding image files to RGB pixels, with every failure a clear, one-line DataError.

Convertible images (grayscale, CMYK, palette, RGBA, 16-bit) become RGB; EXIF orientation is NOT
applied (TFLite's tool does not either). Oversized images are refused from the header, before any
pixel is decoded (decompression-bomb guard); FIFOs, loops and broken links are named as such.
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import warnings

import numpy as np
from PIL import Image, UnidentifiedImageError

from evalharness.core.errors import DataError
from evalharness.core.fileguard import file_error_reason

# Decompression-bomb guard: decode_rgb refuses a larger image from its header, before any pixel is
# decoded. The value is Pillow's own default limit (~89.5 Mpixel; 10k x 10k is refused, a 48 MP
# photo is not); Pillow alone only warns there and errors at twice as many pixels.
MAX_IMAGE_PIXELS = 1024 * 1024 * 1024 // 4 // 3
# Pillow warns above its threshold (at most ours, which refuses the image right after with a DataError
# naming it): silenced once for the process, not per image with ``warnings.catch_warnings``, which is
# not thread-safe (preparing threads and lanes decode at once) and cost each image a filter-list copy.
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)


def decode_rgb(path: str) -> np.ndarray:
    """Decode one image file to HxWx3 uint8 RGB, or raise a one-line DataError naming the path.

    Conversions (never a reason to skip an image): grayscale -> R=G=B; 16-bit samples -> their high
    byte; alpha (RGBA, LA, palette transparency) dropped without compositing, colour values kept;
    palette -> its colours; CMYK/YCbCr by Pillow's conversion. EXIF orientation is NOT applied, as
    in TFLite's tool: pixels are used in stored order. Refused: a missing, empty, non-regular or
    unreadable file, a symlink loop, a file no Pillow decoder recognises, a truncated or corrupt
    image, and an image over MAX_IMAGE_PIXELS (checked from its header, before decoding).
    """
    _check_regular_file(path)
    return np.asarray(_decode(path, path), dtype=np.uint8)


def decode_rgb_image(path: str) -> Image.Image:
    """:func:`decode_rgb`'s pixels as a Pillow RGB image (the same conversions and refusals), for a
    caller that resizes it with Pillow next: no array made and turned back into an image."""
    _check_regular_file(path)
    return _decode(path, path)


def read_image_file(path: str) -> bytes:
    """The encoded bytes of one image file, refused as :func:`decode_rgb` refuses it (missing, empty,
    not a regular file) before it is read; decoded with :func:`decode_rgb_bytes` they are the pixels
    :func:`decode_rgb` gives."""
    _check_regular_file(path)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise DataError(f"{path}: cannot read image ({file_error_reason(exc, path)})") from None


def decode_rgb_bytes(data: bytes, name: str) -> np.ndarray:
    """:func:`decode_rgb` of an image's encoded bytes (a member of a container shard), with the same
    conversions and refusals; ``name`` (``shard:member``) names it in every error."""
    if not data:
        raise DataError(f"{name}: cannot decode image (empty member, 0 bytes)")
    return np.asarray(_decode(io.BytesIO(data), name), dtype=np.uint8)


def _decode(source: str | io.BytesIO, name: str) -> Image.Image:
    """Decode ``source`` (a path or the bytes of one) to an RGB image; errors name ``name``."""
    try:
        with Image.open(source) as img:  # Pillow's bomb warning is silenced above; our limit is next
            width, height = img.size
            if width * height > MAX_IMAGE_PIXELS:
                raise DataError(_too_large(name, f"{width}x{height}, {width * height}", MAX_IMAGE_PIXELS))
            img.load()
            return _as_rgb(img)
    except DataError:
        raise
    except Image.DecompressionBombError as exc:  # over twice Pillow's limit: refused by Image.open
        found = re.search(r"\((\d+) pixels\)", str(exc))
        pillow_limit = 2 * Image.MAX_IMAGE_PIXELS if Image.MAX_IMAGE_PIXELS else MAX_IMAGE_PIXELS
        limit = min(MAX_IMAGE_PIXELS, pillow_limit)
        raise DataError(_too_large(name, found.group(1) if found else f"over {limit}", limit)) from None
    except UnidentifiedImageError:
        raise DataError(
            f"{name}: cannot decode image (not a format Pillow recognises; "
            f"the file starts with {_head(source)!r})"
        ) from None
    except OSError as exc:
        raise DataError(f"{name}: cannot decode image ({file_error_reason(exc, name)})") from None
    except Exception as exc:  # any other failure of a decoder on a corrupt file (struct.error, EOFError...)
        reason = (str(exc).splitlines() or [""])[0]
        raise DataError(f"{name}: cannot decode image ({type(exc).__name__}: {reason})") from None


def _head(source: str | io.BytesIO) -> bytes:
    if isinstance(source, io.BytesIO):
        return source.getvalue()[:16]
    with open(source, "rb") as f:
        return f.read(16)


def _check_regular_file(path: str) -> None:
    """Refuse what is not a non-empty regular file before Pillow opens it (a FIFO would block)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT and not os.path.islink(path):
            raise DataError(f"{path}: image file not found") from None
        raise DataError(f"{path}: cannot read image ({file_error_reason(exc, path)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise DataError(f"{path}: cannot read image (not a regular file)")
    if st.st_size == 0:
        raise DataError(f"{path}: cannot decode image (empty file, 0 bytes)")


def _too_large(path: str, pixels: str, limit: int) -> str:
    return (
        f"{path}: image too large to decode safely ({pixels} pixels, limit {limit}: "
        "decompression-bomb guard); downscale it or remove it from the dataset"
    )


_ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")


def _as_rgb(img: Image.Image) -> Image.Image:
    """A decoded Pillow image of any mode as an RGB image of its own (the file's may be closed)."""
    if img.mode.startswith("I"):  # I;16, I;16B, I;16L (16-bit PNG) and I: keep the high byte
        gray = (np.clip(np.asarray(img).astype(np.int64), 0, 65535) >> 8).astype(np.uint8)
        return Image.fromarray(np.repeat(gray[..., None], 3, axis=2), "RGB")
    if img.mode in _ALPHA_MODES or (img.mode == "P" and "transparency" in img.info):
        img = img.convert("RGBA")  # RGBA -> RGB below drops alpha, keeping the colour values
    return img.convert("RGB")  # a copy even when it is RGB already


def image_size(path: str) -> tuple[int, int]:
    """(width, height) of an image file from its header alone, no pixel decoded (what ground truth in
    normalised coordinates is scaled by); the run's decode checks the same size again."""
    _check_regular_file(path)
    try:
        with Image.open(path) as img:
            size: tuple[int, int] = img.size  # (width, height); Pillow's types are not installed here
            return size
    except Exception as exc:  # noqa: BLE001 - any reader's failure on a corrupt header is this one line
        reason = (str(exc).splitlines() or [""])[0][:200]
        raise DataError(f"{path}: cannot read the image header ({type(exc).__name__}: {reason})") from None
