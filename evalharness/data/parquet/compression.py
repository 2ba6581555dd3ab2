"""Parquet page decompression, each codec bounded by the size the page header declares.

Snappy, what the ``datasets`` library writes (pyarrow's default), is decoded by ``cramjam`` when it
is installed and the page compresses at least :data:`WHOLE_SNAPPY_RATIO`:1 (there the Python loop's
copies run at ~20 MB/s against cramjam's 550+, and the compressed page held whole beside the decoded
one costs at most half a page more); otherwise, JPEG pages being almost all literals, as the page
streams from the file (:mod:`evalharness.data.parquet.snappy`, ~3 GB/s on them), so a page is in memory
once; gzip by
:mod:`zlib`; zstd by ``zstandard`` (the ``size`` extra) or ``cramjam``; brotli and lz4 by ``cramjam``
(the ``parquet`` extra, one small compiled wheel). A codec nobody here can decode is one error naming
the codec and the fix.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from evalharness.core.errors import DataError
from evalharness.data.parquet import snappy
from evalharness.data.parquet.snappy import Damaged
from evalharness.data.parquet.thrift import Malformed, varint

# A snappy page whose decoded size is at least this many times its stored size goes to cramjam whole.
WHOLE_SNAPPY_RATIO = 2
NAMES = {0: "uncompressed", 1: "snappy", 2: "gzip", 3: "lzo", 4: "brotli", 5: "lz4", 6: "zstd", 7: "lz4_raw"}


def _cramjam() -> ModuleType | None:
    try:
        import cramjam
    except ImportError:
        return None
    return cramjam


def decompress_stream(
    codec: int, read: Callable[[int], bytes], stored: int, size: int, where: str, prefix: bytes = b""
) -> bytes | memoryview:
    """``prefix`` + the ``size`` bytes a page's ``stored`` compressed bytes decompress to, read
    through ``read``: snappy (the usual codec) is decoded as it streams, so a page is in memory once;
    the rest are read whole and decompressed."""
    cramjam = _cramjam() if codec == 1 else None
    if codec == 1 and (cramjam is None or stored * WHOLE_SNAPPY_RATIO > size):
        return snappy.decode(read, size, prefix)
    data = read(stored)
    if len(data) != stored:
        raise Damaged(f"page of {stored} bytes cut to {len(data)}")
    if cramjam is not None:
        return _snappy_whole(cramjam, data, size, prefix)
    out = decompress(codec, data, size, where)
    return prefix + bytes(out) if prefix else out


def decompress(codec: int, data: bytes | memoryview, size: int, where: str) -> bytes | memoryview:
    """The ``size`` bytes ``data`` decompresses to under parquet codec ``codec`` (snappy streams:
    :func:`decompress_stream`)."""
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
    if codec == 6:
        return _sized(
            _zstd(data, size) if cramjam is None else _cram(cramjam.zstd.decompress_into, data, size), size
        )
    if cramjam is not None and codec in (4, 7):
        decoder = cramjam.brotli.decompress_into if codec == 4 else cramjam.lz4.decompress_block_into
        return _sized(_cram(decoder, data, size), size)
    name = NAMES.get(codec, f"codec {codec}")
    fix = (
        "pip install 'evalharness[parquet]' (cramjam decodes it)"
        if codec in (4, 7)
        else "re-write the parquet with compression='snappy' (pyarrow's default) or 'zstd'"
    )
    raise DataError(f"{where}: pages compressed with {name}, which this reader cannot decode; {fix}")


def _snappy_whole(cramjam: ModuleType, data: bytes, size: int, prefix: bytes) -> memoryview:
    """``prefix`` + the raw snappy block ``data`` decoded by cramjam: the block's own length is
    checked against the page header's (already backed, data/bounds.py) before the output exists."""
    try:
        declared = varint(data, 0, len(data))[0]
    except Malformed:
        raise Damaged("snappy block cut short") from None
    if declared != size:
        raise Damaged(f"snappy block of {declared} bytes, the page header says {size}")
    return _cram(cramjam.snappy.decompress_raw_into, data, size, prefix)


def _cram(decoder: Any, data: bytes | memoryview, size: int, prefix: bytes = b"") -> memoryview:
    """``prefix`` + cramjam's decoder writing into a buffer of the declared size (already backed by
    the stored bytes, data/bounds.py), so a forged header cannot make it allocate more; it returns
    what it wrote, so a page that decodes to less is damage (told ``output_len``, cramjam pads with
    zeros)."""
    out = bytearray(len(prefix) + size)
    out[: len(prefix)] = prefix
    try:
        written = decoder(data, memoryview(out)[len(prefix) :])
    except Exception as exc:  # cramjam raises its own DecompressionError
        raise Damaged(str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__) from None
    if written != size:
        raise Damaged(f"decompressed to {written} bytes, the page header says {size}")
    return memoryview(out)


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
