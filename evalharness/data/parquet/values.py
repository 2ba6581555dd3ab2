"""Parquet's value encodings, as a data page holds them: PLAIN (integers, byte arrays), the
RLE / bit-packed hybrid (definition levels, dictionary indices) and DELTA_BINARY_PACKED (integers,
as parquet v2 writers such as Spark's and DuckDB's store them).

Every reader here takes the page's bytes and a ``damaged(why)`` callback that makes the error naming
the shard and byte; a count or width that would read past the page is damage, never an
allocation (the file is untrusted).
"""

from __future__ import annotations

import struct
from typing import Any

from evalharness.data.bounds import VALUES_EXPANSION, OverBudget, backed
from evalharness.data.parquet.thrift import Malformed, varint, zigzag

INT32, INT64, BYTE_ARRAY = 1, 2, 6
ENCODINGS = {
    0: "PLAIN", 2: "PLAIN_DICTIONARY", 3: "RLE", 4: "BIT_PACKED", 5: "DELTA_BINARY_PACKED",
    6: "DELTA_LENGTH_BYTE_ARRAY", 7: "DELTA_BYTE_ARRAY", 8: "RLE_DICTIONARY", 9: "BYTE_STREAM_SPLIT",
}  # fmt: skip
MAX_BLOCK = 1 << 16  # values in one DELTA_BINARY_PACKED block (writers use 128)

Value = Any  # bytes-like (BYTE_ARRAY) or int (INT32/INT64)


def hybrid(data: memoryview, pos: int, end: int, width: int, count: int, damaged: Any) -> list[int]:
    """``count`` values of parquet's RLE / bit-packed hybrid encoding in ``data[pos:end]``."""
    out: list[int] = []
    if width == 0:
        return [0] * count
    if width > 32 or end > len(data):
        raise damaged(f"levels of width {width} or past the page")
    size = (width + 7) // 8
    while len(out) < count:
        if pos >= end:
            raise damaged("levels end early")
        header, pos = _varint(data, pos, end, damaged)
        if header & 1:  # bit-packed groups of 8 values, width bytes each, least significant bit first
            groups = min(header >> 1, (count - len(out) + 7) // 8)
            out.extend(_unpack(data, pos, width, groups * 8))
            pos += groups * width
        else:  # one value repeated
            value = int.from_bytes(data[pos : pos + size], "little")
            pos += size
            out.extend([value] * min(header >> 1, count - len(out)))
    if pos > end:
        raise damaged("levels run past their length")
    return out[:count]


def _unpack(data: memoryview, pos: int, width: int, n: int) -> list[int]:
    """``n`` values of ``width`` bits packed least-significant bit first from ``data[pos:]``, 64
    values (``8 * width`` bytes) at a time: linear in ``n`` whatever the width (shifting one integer
    of a whole 65,536-value miniblock would be quadratic), and as fast as one integer for the
    32-value miniblocks writers make."""
    if width == 0:
        return [0] * n
    mask, out = (1 << width) - 1, list[int]()
    for first in range(0, n, 64):
        count = min(64, n - first)
        at = pos + first * width // 8
        run = int.from_bytes(data[at : at + (count * width + 7) // 8], "little")
        out.extend([(run >> shift) & mask for shift in range(0, count * width, width)])
    return out


def plain(data: memoryview, pos: int, physical: int, count: int, damaged: Any) -> list[Value]:
    if physical in (INT32, INT64):
        width = 4 if physical == INT32 else 8
        if pos + count * width > len(data):
            raise damaged("integers past the page")
        return list(struct.unpack_from(f"<{count}{'i' if width == 4 else 'q'}", data, pos))
    if physical != BYTE_ARRAY:
        raise damaged(f"physical type {physical} where bytes or integers were expected")
    out: list[Value] = []
    for _ in range(count):
        length = int.from_bytes(data[pos : pos + 4], "little")
        pos += 4
        if pos + length > len(data):
            raise damaged("a byte array past the page")
        out.append(data[pos : pos + length])
        pos += length
    return out


def _varint(data: memoryview, pos: int, end: int, damaged: Any) -> tuple[int, int]:
    try:
        return varint(data, pos, end)
    except Malformed as exc:  # Short included: a run header or delta block past its bytes
        raise damaged(f"{exc} in the page's values") from None


def delta_binary_packed(
    data: memoryview, pos: int, physical: int, count: int, damaged: Any
) -> tuple[list[int], int]:
    """``count`` integers of DELTA_BINARY_PACKED: a header (block size, miniblocks a block, total,
    first value), then blocks of (min delta, each miniblock's bit width, the miniblocks packed
    least-significant bit first); arithmetic wraps at the physical type's width, as the writer's.
    Returns the values and the offset after them (a byte array's lengths are followed by its bytes)."""
    end, bits = len(data), 32 if physical == INT32 else 64
    block, pos = _varint(data, pos, end, damaged)
    minis, pos = _varint(data, pos, end, damaged)
    total, pos = _varint(data, pos, end, damaged)
    first, pos = _varint(data, pos, end, damaged)
    if not (0 < minis <= block <= MAX_BLOCK and block % minis == 0 and (block // minis) % 8 == 0):
        raise damaged(f"a delta block of {block} values in {minis} miniblocks")
    per_mini, wrap = block // minis, 1 << bits
    value = zigzag(first)
    out = [value] if count else []
    while len(out) < min(count, total):
        raw, pos = _varint(data, pos, end, damaged)
        least = zigzag(raw)
        widths = bytes(data[pos : pos + minis])
        pos += minis
        for width in widths:
            wanted = min(count, total) - len(out)
            if wanted <= 0:
                break
            if width > bits or pos + per_mini * width // 8 > end:
                raise damaged(f"a delta miniblock of width {width} past the page")
            for delta in _unpack(data, pos, width, min(per_mini, wanted)):
                value = (value + least + delta) % wrap
                out.append(value - wrap if value >= wrap >> 1 else value)
            pos += per_mini * width // 8
    if len(out) < count:
        raise damaged(f"{len(out)} delta-packed values for {count} rows")
    return out[:count], pos


def delta_byte_arrays(data: memoryview, pos: int, count: int, prefixed: bool, damaged: Any) -> list[Value]:
    """DELTA_LENGTH_BYTE_ARRAY (the lengths delta-packed, then the bytes one after another) or, with
    ``prefixed``, DELTA_BYTE_ARRAY (each value the previous one's first *prefix* bytes + a suffix)."""
    prefixes = [0] * count
    if prefixed:
        prefixes, pos = delta_binary_packed(data, pos, INT32, count, damaged)
    lengths, pos = delta_binary_packed(data, pos, INT32, count, damaged)
    try:  # what the values will total, before one is built: prefixes repeat at no cost
        backed(
            sum(max(0, n) for n in prefixes) + sum(max(0, n) for n in lengths),
            len(data),
            "the page's byte arrays",
            VALUES_EXPANSION,
        )
    except OverBudget as exc:
        raise damaged(f"{exc}; re-write the column with dictionary or PLAIN encoding") from None
    out: list[Value] = []
    previous: Value = b""
    for prefix, length in zip(prefixes, lengths, strict=True):
        if length < 0 or pos + length > len(data) or not 0 <= prefix <= len(previous):
            raise damaged("a byte array past the page")
        value = (
            data[pos : pos + length]
            if not prefix
            else bytes(previous[:prefix]) + bytes(data[pos : pos + length])
        )
        pos += length
        out.append(value)
        previous = value
    return out
