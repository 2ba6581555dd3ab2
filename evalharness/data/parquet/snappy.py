"""Raw snappy (the block format parquet pages use), decoded from a stream into one buffer of the
declared size.

Parquet written by the ``datasets`` library keeps a row group's images in one snappy page (about
100 images: ~13 MB of ImageNet JPEGs). Decoding it as it is read from the file, a block at a time,
holds the decoded page and one block instead of the page twice; JPEG bytes are almost all literals,
so the Python loop here is short (about 1 GB/s). The input is untrusted: the output never grows
past the size the page header declares, and every copy is checked to lie inside what was decoded.
"""

from __future__ import annotations

from collections.abc import Callable

from evalharness.data.parquet.thrift import varint

BLOCK = 1 << 18  # bytes read from the file at a time


class Damaged(ValueError):
    """Compressed bytes that do not decode to the declared size."""


def decode(read: Callable[[int], bytes], limit: int, prefix: bytes = b"") -> memoryview:
    """``prefix`` + the snappy block ``read`` yields (``read(n)``: up to n more bytes, b"" at its
    end), never more than ``limit`` decoded bytes; the whole block must be consumed."""
    try:
        return _decode(read, limit, prefix)
    except (IndexError, ValueError) as exc:  # a header or offset cut short by a damaged block
        raise Damaged(str(exc) if isinstance(exc, Damaged) else "snappy block cut short") from None


def _decode(read: Callable[[int], bytes], limit: int, prefix: bytes) -> memoryview:
    buf = memoryview(read(BLOCK))
    size, pos = varint(buf, 0, len(buf))  # the decoded length
    if size != limit:
        raise Damaged(f"snappy block of {size} bytes, the page header says {limit}")
    first = len(prefix)
    out = bytearray(first + size)
    out[:first] = prefix
    o, end = first, first + size
    while o < end:
        if len(buf) - pos < 5:  # a tag and its 4 length/offset bytes stay in the buffer
            more = read(BLOCK)
            if more:
                buf, pos = memoryview(bytes(buf[pos:]) + more), 0
        tag = buf[pos]
        pos += 1
        kind = tag & 3
        if kind == 0:  # a literal: its length in the tag, or in the 1-4 bytes after it
            length = tag >> 2
            if length >= 60:
                width = length - 59
                length = int.from_bytes(buf[pos : pos + width], "little")
                pos += width
            length += 1
            if o + length > end:
                raise Damaged("snappy block longer than it declares")
            have = min(length, len(buf) - pos)
            out[o : o + have] = buf[pos : pos + have]
            pos, o = pos + have, o + have
            if have < length:  # the rest of a long literal straight from the stream
                rest = read(length - have)
                if len(rest) != length - have:
                    raise Damaged("snappy literal runs past the block")
                out[o : o + len(rest)] = rest
                o += len(rest)
            continue
        if kind == 1:  # a copy of earlier output, its offset in 11 or 16 or 32 bits
            length, offset = ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | buf[pos]
            pos += 1
        else:
            width = 2 if kind == 2 else 4
            length, offset = (tag >> 2) + 1, int.from_bytes(buf[pos : pos + width], "little")
            pos += width
        start = o - offset
        if offset == 0 or start < first or o + length > end:
            raise Damaged("snappy copy outside the block")
        if offset >= length:
            out[o : o + length] = out[start : start + length]
        else:  # the copy overlaps what it writes: the pattern repeats
            out[o : o + length] = (out[start:o] * (length // offset + 1))[:length]
        o += length
    if pos != len(buf) or read(1):
        raise Damaged("snappy block longer than it declares")
    return memoryview(out)
