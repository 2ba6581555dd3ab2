"""A parquet file read page by page, with no pyarrow: its footer (:mod:`.footer`), then the values of
one data page at a time (definition levels; PLAIN, dictionary and DELTA encodings).

That is what a Hugging Face image dataset needs, and it keeps a streamed run's memory at about one
page instead of pyarrow's import, allocator and row groups. The file is untrusted: every offset and
size is checked against the chunk it must lie in and the budgets of data/bounds.py, a page header is
read from a bounded window, a page's checksum is verified where kept, and anything else (a repeated
column, an encrypted footer, damage) is one :class:`DataError` naming the shard, what, and the fix.
"""

from __future__ import annotations

import bisect
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from evalharness.core.errors import DataError
from evalharness.data.bounds import CODEC_EXPANSION, MOST_EXPANSION, OverBudget, backed
from evalharness.data.parquet import compression
from evalharness.data.parquet.footer import Chunk, integer, pread, read_footer
from evalharness.data.parquet.snappy import BLOCK, Damaged
from evalharness.data.parquet.thrift import Malformed, Short, Struct, read_struct
from evalharness.data.parquet.values import (
    BYTE_ARRAY,
    ENCODINGS,
    INT32,
    INT64,
    Value,
    delta_binary_packed,
    delta_byte_arrays,
    hybrid,
    plain,
)

MAX_HEADER = 1 << 20  # page headers are tens of bytes (statistics of large values are not written)
MAX_PAGE = 1 << 30  # stored bytes of one page (what they decode to: data/bounds.py)
MAX_ROWS = 1 << 20  # rows in one page (pyarrow writes at most 20,000)
DATA_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 2, 3
PLAIN, PLAIN_DICTIONARY, RLE, RLE_DICTIONARY = 0, 2, 3, 8
DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY = 5, 6, 7


@dataclass(frozen=True)
class Page:
    """A data page's values, one per row (None for a null), and where its header starts."""

    offset: int
    values: list[Value | None]


class ParquetFile:
    """The footer of ``path`` read and checked; pages read on demand (thread-safe)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.leaves, self.top, self.metadata, self.groups = read_footer(path)
        self._chunks = sorted((c for g in self.groups for c in g.values()), key=lambda c: c.start)
        self._starts = [c.start for c in self._chunks]
        self._dictionary: tuple[int, list[Value]] | None = None  # (chunk start, values): the last one
        self._lock = threading.Lock()

    def pages(self, chunk: Chunk) -> Iterator[Page]:
        """The data pages of ``chunk`` in order, their values resolved through its dictionary."""
        seen, pos, dictionary = 0, chunk.start, None
        while seen < chunk.num_values:
            if pos >= chunk.end:
                raise DataError(f"{self.path}: column {'.'.join(chunk.leaf.path)} ends before its values")
            header, body, after = self._page(chunk, pos)
            if header[1] == DICTIONARY_PAGE:
                dictionary = self._dictionary_values(chunk, header, body, pos)
            elif header[1] in (DATA_PAGE, DATA_PAGE_V2):
                values = self._values(chunk, header, body, dictionary, pos)
                seen += len(values)
                yield Page(pos, values)
            pos = after

    def page_at(self, offset: int) -> list[Value | None]:
        """The values of the data page whose header starts at ``offset`` (as :meth:`pages` gave)."""
        index = bisect.bisect_right(self._starts, offset) - 1
        chunk = self._chunks[index] if index >= 0 else None
        if chunk is None or not chunk.start <= offset < chunk.end:
            raise self._damaged(offset, "no column chunk holds it: the file changed since it was listed")
        header, body, _ = self._page(chunk, offset)
        if header[1] not in (DATA_PAGE, DATA_PAGE_V2):
            raise self._damaged(offset, "not a data page: the file changed since it was listed")
        return self._values(chunk, header, body, lambda: self._dictionary_of(chunk), offset)

    def _dictionary_of(self, chunk: Chunk) -> list[Value] | None:
        with self._lock:
            kept = self._dictionary
            if kept is not None and kept[0] == chunk.start:
                return kept[1]
            self._dictionary = None  # the old one goes before the new one is read: one in memory
        header, body, _ = self._page(chunk, chunk.start)
        if header[1] != DICTIONARY_PAGE:
            return None
        values = self._dictionary_values(chunk, header, body, chunk.start)
        with self._lock:
            self._dictionary = (chunk.start, values)
        return values

    def _page(self, chunk: Chunk, pos: int) -> tuple[Struct, bytes | memoryview, int]:
        """(header, decompressed body, offset after the page) of the page at ``pos``."""
        window = min(4096, chunk.end - pos)
        while True:
            try:
                header, length = read_struct(pread(self.path, pos, window))
                break
            except Short:
                if window >= min(MAX_HEADER, chunk.end - pos):
                    raise self._damaged(pos, "page header runs past its column") from None
                window = min(window * 16, MAX_HEADER, chunk.end - pos)
            except Malformed as exc:
                raise self._damaged(pos, str(exc)) from None
        try:
            integer(header[1])
            raw_size, size = integer(header[2]), integer(header[3])
            _checked(header)
        except (KeyError, ValueError):
            raise self._damaged(pos, "page header without its type, sizes or counts as integers") from None
        start, after = pos + length, pos + length + size
        if not (0 <= size <= MAX_PAGE and after <= chunk.end):
            raise self._damaged(pos, f"a {size}-byte page past its column's end")
        try:  # the decoded size is allocated before a byte is decoded: it must be backed first
            backed(raw_size, size, "the page", CODEC_EXPANSION.get(chunk.codec, MOST_EXPANSION))
        except OverBudget as exc:
            raise self._damaged(pos, str(exc)) from None
        with _Stored(self.path, start, size) as stored:
            try:
                body = self._decoded(chunk, header, stored, size, raw_size, pos)
            except Damaged as exc:  # a checksum, where kept, says damage before the codec does
                stored.drain()
                why = "page checksum mismatch" if not stored.checksum_holds(header.get(4)) else str(exc)
                raise self._damaged(pos, why) from None
            if stored.drain() or not stored.checksum_holds(header.get(4)):
                raise self._damaged(pos, "page checksum mismatch or bytes after its values")
        return header, body, after

    def _decoded(
        self, chunk: Chunk, header: Struct, stored: _Stored, size: int, raw_size: int, pos: int
    ) -> bytes | memoryview:
        """The page's bytes as :meth:`_values` reads them: v2 levels (stored uncompressed ahead of the
        values) then the values, decompressed as they stream."""
        prefix, compressed = b"", True
        if header[1] == DATA_PAGE_V2:
            v2 = header.get(8) or {}
            levels = v2.get(5, 0) + v2.get(6, 0)
            if not 0 <= levels <= min(size, raw_size):
                raise self._damaged(pos, "level lengths past the page")
            prefix, compressed = stored.read(levels), bool(v2.get(7, True))
            size, raw_size = size - levels, raw_size - levels
        codec = chunk.codec if compressed else 0
        where = f"{self.path}:{'.'.join(chunk.leaf.path)}"
        return compression.decompress_stream(codec, stored.read, size, raw_size, where, prefix)

    def _dictionary_values(
        self, chunk: Chunk, header: Struct, body: bytes | memoryview, pos: int
    ) -> list[Value]:
        info = header.get(7) or {}
        if info.get(2, PLAIN) not in (PLAIN, PLAIN_DICTIONARY):
            raise self._unsupported(chunk, f"a dictionary encoded as {_encoding(info.get(2))}")
        count = info.get(1, 0)
        if not 0 <= count <= MAX_ROWS:
            raise self._damaged(pos, f"a dictionary of {count} values")
        return plain(memoryview(body), 0, chunk.leaf.physical, count, self._damaged_at(pos))

    def _values(
        self,
        chunk: Chunk,
        header: Struct,
        body: bytes | memoryview,
        dictionary: list[Value] | None | Callable[[], list[Value] | None],
        pos: int,
    ) -> list[Value | None]:
        damaged = self._damaged_at(pos)
        leaf, data = chunk.leaf, memoryview(body)
        v2 = header[1] == DATA_PAGE_V2
        info = header.get(8 if v2 else 5) or {}
        count, encoding = info.get(1, 0), info.get(4 if v2 else 2)
        if not 0 <= count <= MAX_ROWS:
            raise damaged(f"{count} values in one page")
        at, levels = 0, [leaf.max_def] * count
        if leaf.max_def:
            if v2:
                end = info.get(6, 0) + info.get(5, 0)
                at = info.get(6, 0)
            else:
                if info.get(3, RLE) != RLE:
                    raise self._unsupported(chunk, "BIT_PACKED definition levels (deprecated)")
                end = 4 + int.from_bytes(data[0:4], "little")
                at = 4
            levels = hybrid(data, at, end, leaf.max_def.bit_length(), count, damaged)
            at = end
        present = sum(1 for level in levels if level == leaf.max_def)
        if encoding == PLAIN:
            found = plain(data, at, leaf.physical, present, damaged)
        elif encoding in (PLAIN_DICTIONARY, RLE_DICTIONARY):
            if callable(dictionary):  # read only for a page that needs it (not a PLAIN fallback)
                dictionary = dictionary()
            if dictionary is None:
                raise damaged("dictionary-encoded page without a dictionary")
            if at >= len(data):
                indices: list[int] = []
            else:
                indices = hybrid(data, at + 1, len(data), data[at], present, damaged)
            if any(i >= len(dictionary) for i in indices):
                raise damaged("a dictionary index past the dictionary")
            found = [dictionary[i] for i in indices]
        elif encoding == DELTA_BINARY_PACKED and leaf.physical in (INT32, INT64):
            found = delta_binary_packed(data, at, leaf.physical, present, damaged)[0]
        elif encoding in (DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY) and leaf.physical == BYTE_ARRAY:
            found = delta_byte_arrays(data, at, present, encoding == DELTA_BYTE_ARRAY, damaged)
        else:
            raise self._unsupported(chunk, f"values encoded as {_encoding(encoding)}")
        if len(found) != present:
            raise damaged(f"{len(found)} values for {present} rows")
        values = iter(found)
        return [next(values) if level == leaf.max_def else None for level in levels]

    def _damaged(self, pos: int, why: str) -> DataError:
        return DataError(f"{self.path}: parquet damaged at byte {pos} ({why[:200]}); re-write the file")

    def _damaged_at(self, pos: int) -> Any:
        return lambda why: self._damaged(pos, why)

    def _unsupported(self, chunk: Chunk, what: str) -> DataError:
        return DataError(
            f"{self.path}: column {'.'.join(chunk.leaf.path)} has {what}, which this reader does not "
            "decode; re-write the parquet with pyarrow's defaults (dictionary or PLAIN encoding)"
        )


# the integer fields read from a page header's data, dictionary and v2 headers
_HEADER_INTS = {5: (1, 2, 3, 4), 7: (1, 2), 8: (1, 2, 3, 4, 5, 6, 7)}


def _checked(header: Struct) -> None:
    """A page header whose fields have the types this reader uses (a damaged file has any)."""
    if 4 in header:
        integer(header[4])
    for field, ints in _HEADER_INTS.items():
        if field in header:
            sub = header[field]
            if not isinstance(sub, dict):
                raise ValueError("a page header's sub-header is not a struct")
            for key in ints:
                if key in sub:
                    integer(sub[key])


def _encoding(code: Any) -> str:
    return ENCODINGS.get(code, f"encoding {code}") if isinstance(code, int) else "no encoding"


class _Stored:
    """A page's stored bytes read from the file as a decoder asks for them, CRC-32 taken on the way."""

    def __init__(self, path: str, start: int, size: int) -> None:
        self.file = open(path, "rb")  # noqa: SIM115 - closed by __exit__
        self.file.seek(start)
        self.left, self.crc = size, 0

    def __enter__(self) -> _Stored:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def read(self, n: int) -> bytes:
        data = self.file.read(max(0, min(n, self.left)))
        self.left -= len(data)
        self.crc = zlib.crc32(data, self.crc)
        return data

    def drain(self) -> int:
        """Read what the decoder left (for the checksum); the count of bytes it left."""
        left = self.left
        while self.left > 0 and self.read(BLOCK):
            pass
        return left

    def checksum_holds(self, crc: Any) -> bool:
        return crc is None or self.crc == crc & 0xFFFFFFFF
