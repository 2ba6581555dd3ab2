"""Parquet page decompression, each codec bounded by the size the page header declares.

Snappy is what the ``datasets`` library (through pyarrow's default) writes. ``cramjam`` (the
``parquet`` extra, one small compiled wheel) decodes snappy, zstd, lz4 and brotli; without it, snappy
is decoded here in Python (correct, slower: JPEG bytes are mostly literals, so the loop is short),
gzip by :mod:`zlib` and zstd by ``zstandard`` when installed. A codec nobody here can decode is one
error naming the codec and the fix.
"""

from __future__ import annotations

import zlib
from types import ModuleType
from typing import Any

from evalharness.core.errors import DataError

NAMES = {0: "uncompressed", 1: "snappy", 2: "gzip", 3: "lzo", 4: "brotli", 5: "lz4", 6: "zstd", 7: "lz4_raw"}


class Damaged(ValueError):
    """Compressed bytes that do not decode to the declared size."""


def _cramjam() -> ModuleType | None:
    try:
        import cramjam
    except ImportError:
        return None
    return cramjam


def decompress(codec: int, data: bytes | memoryview, size: int, where: str) -> bytes | memoryview:
    """The ``size`` bytes ``data`` decompresses to under parquet codec ``codec``."""
    if codec == 0:
        return data
    if codec == 2:
        inflate = zlib.decompressobj(wbits=47)  # gzip or zlib framing, as writers differ
        try:
            out = inflate.decompress(data, size + 1)
        except zlib.error as exc:
            raise Damaged(f"gzip: {exc}") from None
        return _sized(out, size)
    cramjam = _cramjam()
    if codec == 1:
        if cramjam is None:
            return _sized(snappy(data, size), size)
        return _sized(_cram(cramjam.snappy.decompress_raw, data, size), size)
    if codec == 6:
        return _sized(
            _zstd(data, size) if cramjam is None else _cram(cramjam.zstd.decompress, data, size), size
        )
    if cramjam is not None and codec in (4, 7):
        decoder = cramjam.brotli.decompress if codec == 4 else cramjam.lz4.decompress_block
        return _sized(_cram(decoder, data, size), size)
    name = NAMES.get(codec, f"codec {codec}")
    fix = (
        "pip install 'evalharness[parquet]' (cramjam decodes it)"
        if codec in (4, 7)
        else "re-write the parquet with compression='snappy' (pyarrow's default) or 'zstd'"
    )
    raise DataError(f"{where}: pages compressed with {name}, which this reader cannot decode; {fix}")


def _cram(decoder: Any, data: bytes | memoryview, size: int) -> memoryview:
    """cramjam's decoder, told the size so that a forged header cannot make it allocate more."""
    try:
        out = decoder(data, output_len=size)
    except Exception as exc:  # cramjam raises its own DecompressionError
        raise Damaged(str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__) from None
    return memoryview(out)  # cramjam's buffer, not copied: a page is ~1 MB


def _zstd(data: bytes | memoryview, size: int) -> bytes:
    try:
        import zstandard
    except ImportError:
        raise DataError(
            "parquet pages compressed with zstd need cramjam or zstandard; pip install 'evalharness[parquet]'"
        ) from None
    try:
        return zstandard.ZstdDecompressor().decompress(bytes(data), max_output_size=size)
    except zstandard.ZstdError as exc:
        raise Damaged(f"zstd: {exc}") from None


def _sized(out: bytes | memoryview, size: int) -> bytes | memoryview:
    if len(out) != size:
        raise Damaged(f"decompressed to {len(out)} bytes, the page header says {size}")
    return out


def snappy(src: bytes | memoryview, limit: int) -> memoryview:
    """Raw snappy (the block format, no framing), never growing past ``limit`` bytes."""
    src = memoryview(src)
    size, pos = _varint(src, 0)
    if size > limit:
        raise Damaged(f"snappy block of {size} bytes, the page header says {limit}")
    out = bytearray()
    end = len(src)
    while pos < end:
        tag = src[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # literal: length in the tag, or in the 1-4 bytes after it
            length = tag >> 2
            if length >= 60:
                width = length - 59
                length = int.from_bytes(src[pos : pos + width], "little")
                pos += width
            length += 1
            if pos + length > end:
                raise Damaged("snappy literal runs past the block")
            out += src[pos : pos + length]
            pos += length
        else:  # copy of earlier output
            if kind == 1:
                length, offset = ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | src[pos]
                pos += 1
            else:
                width = 2 if kind == 2 else 4
                length, offset = (tag >> 2) + 1, int.from_bytes(src[pos : pos + width], "little")
                pos += width
            start = len(out) - offset
            if offset == 0 or start < 0:
                raise Damaged("snappy copy before the start of the block")
            if offset >= length:
                out += out[start : start + length]
            else:  # the copy overlaps what it writes: the pattern repeats
                out += (out[start:] * (length // offset + 1))[:length]
        if len(out) > size:
            raise Damaged("snappy block longer than it declares")
    if pos > end or len(out) != size:
        raise Damaged("snappy block shorter than it declares")
    return memoryview(out)  # the bytearray itself, not a copy


def _varint(data: memoryview, pos: int) -> tuple[int, int]:
    shift = result = 0
    while pos < len(data) and shift <= 63:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
    raise Damaged("a varint runs past the block")
