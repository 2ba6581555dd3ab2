"""Apache Thrift's compact protocol, read generically and within limits: a struct is a dict of field
id to value, which is all a parquet footer or page header is.

Parquet keeps its metadata in this encoding; reading it here (about a hundred lines) is what lets
``dataset.format=parquet`` run without pyarrow, whose import and allocator would cost a streamed run
more memory than the images it reads. The input is an untrusted file: every length is checked against
the bytes left, nesting is bounded, and running out of bytes raises :class:`Short` (the caller may
read more and retry) while any other malformation raises :class:`Malformed`.
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 32  # parquet's deepest struct is ~6 levels
# Values one struct may decode to: each costs a byte of input but ~50-100 bytes as a Python object,
# so a 64 MB footer of empty structs would be gigabytes. A 50,000-image file's footer holds ~10,000;
# 500 row groups of 3 columns ~40,000. 2**19 of the costliest kind (empty structs) is ~40 MB.
MAX_VALUES = 1 << 19
Struct = dict[int, Any]

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class Malformed(ValueError):
    """Bytes that are not a compact-protocol struct."""


class Short(Malformed):
    """The struct runs past the bytes given: read more of the file and decode again."""


def varint(data: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    """(value, offset after it) of the unsigned LEB128 varint at ``pos``: thrift's compact protocol,
    parquet's RLE run headers and delta blocks, snappy's length all write integers so. Past ``end``:
    :class:`Short`; longer than 64 bits: :class:`Malformed`."""
    shift = result = 0
    while True:
        if pos >= end:
            raise Short("ends inside a varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise Malformed("a varint longer than 64 bits")


def zigzag(n: int) -> int:
    """A signed integer from its zigzag encoding (0, -1, 1, -2, ... as 0, 1, 2, 3, ...)."""
    return (n >> 1) ^ -(n & 1)


class Reader:
    """A cursor over ``data`` decoding compact-protocol values."""

    def __init__(self, data: bytes | memoryview, pos: int = 0) -> None:
        self.data, self.pos, self.values = memoryview(data), pos, 0

    def _byte(self) -> int:
        if self.pos >= len(self.data):
            raise Short("ends inside a value")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise Short(f"a {n}-byte value runs past the end")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def varint(self) -> int:
        value, self.pos = varint(self.data, self.pos, len(self.data))
        return value

    def zigzag(self) -> int:
        return zigzag(self.varint())

    def struct(self, depth: int = 0) -> Struct:
        if depth > MAX_DEPTH:
            raise Malformed(f"values nested deeper than {MAX_DEPTH}")
        out: Struct = {}
        last = 0
        while True:
            header = self._byte()
            if header == _STOP:
                return out
            kind, delta = header & 0x0F, header >> 4
            last = last + delta if delta else self.zigzag()
            if kind in (_TRUE, _FALSE):
                self._count(1)
                out[last] = kind == _TRUE
            else:
                out[last] = self.value(kind, depth)

    def value(self, kind: int, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise Malformed(f"values nested deeper than {MAX_DEPTH}")
        self._count(1)
        if kind == _BYTE:
            return int.from_bytes(self._take(1), "little", signed=True)
        if kind in (_I16, _I32, _I64):
            return self.zigzag()
        if kind == _DOUBLE:
            return self._take(8).cast("d")[0]
        if kind == _BINARY:
            return bytes(self._take(self.varint()))
        if kind in (_LIST, _SET):
            header = self._byte()
            size, element = header >> 4, header & 0x0F
            if size == 15:
                size = self.varint()
            self._fits(size)
            if element in (_TRUE, _FALSE):  # a bool element is one byte: 1 true
                self._count(size)
                return [self._byte() == 1 for _ in range(size)]
            return [self.value(element, depth + 1) for _ in range(size)]
        if kind == _MAP:
            size = self.varint()
            if size == 0:
                return {}
            self._fits(size)
            types = self._byte()
            if types >> 4 in (_LIST, _SET, _MAP, _STRUCT):
                raise Malformed("a map keyed by a collection")
            key, value = types >> 4, types & 0x0F
            return {self.value(key, depth + 1): self.value(value, depth + 1) for _ in range(size)}
        if kind == _STRUCT:
            return self.struct(depth + 1)
        raise Malformed(f"unknown compact type {kind}")

    def _count(self, n: int) -> None:
        self.values += n
        if self.values > MAX_VALUES:
            raise Malformed(f"more than {MAX_VALUES} values in one struct")

    def _fits(self, size: int) -> None:
        """Every element takes at least a byte: a count beyond the bytes left is damage, not memory."""
        if size > len(self.data) - self.pos:
            raise Short(f"a collection of {size} elements in {len(self.data) - self.pos} bytes")


def read_struct(data: bytes | memoryview, pos: int = 0) -> tuple[Struct, int]:
    """(the struct at ``pos``, the offset just past it)."""
    reader = Reader(data, pos)
    return reader.struct(), reader.pos
