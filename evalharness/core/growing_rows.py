"""Rows appended a group at a time, held in a few large numpy arrays, not an array per group; the
full ones kept in an unlinked temporary file, read back when asked.

What a run keeps of each image until it is scored (its detections, its masks' areas and IoUs) is a
few dozen numbers: as small arrays per image (a Python object and a heap block each, scattered among
the loop's short-lived blocks) a 2,500-image seg run's heap grew ~7 KB an image. Here they are
written into chunks of up to :data:`CHUNK_BYTES`, never copied: one array that doubled and copied
itself left each outgrown array's pages resident in the heap, twice the rows' size in all.

Even as chunks the numbers grew with the run (~3 KB an image for a seg run, 9 MiB at 2,500 images)
and the scoring reads them a chunk of images at a time, mostly in the order added. So a chunk of at
least ``spill_file.SPILL_BYTES``, once the next one is started, is written to an unlinked temporary file
(``core/spill_file.py``: nothing is left behind, even after a kill) and dropped;
:meth:`GrowingRows.view` reads a spilled chunk back whole and keeps the last :data:`KEPT_READS`
read. What the process holds is then the chunk being filled and those read.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import numpy as np

from evalharness.core.spill_file import SpilledArray, SpillFile, spilled

FIRST_ROWS = 256  # the first chunk's rows; each next one twice the last, up to CHUNK_BYTES
CHUNK_BYTES = 2**17  # a scoring chunk's images (25: ~1,000 boxes, 48 KB) lie in one or two chunks
KEPT_READS = 2  # spilled chunks kept once read (the scoring reads them mostly in order)


class GrowingRows:
    """Rows of ``width`` values of one dtype (``width`` None: single values), appended a group at a
    time; a group is never split between chunks, so :meth:`view` reads it back without a copy (of a
    spilled chunk: from the chunk as read back). The position :meth:`extend` returns counts a
    chunk's unused end (left when the next group did not fit) as rows: keep it, do not derive it
    from :meth:`__len__`. Rows once written never change; a spilled chunk's rows are read back
    read-only. ``spill=False``: every chunk stays in memory."""

    def __init__(self, width: int | None, dtype: Any = np.float64, spill: bool = True) -> None:
        self._tail: tuple[int, ...] = () if width is None else (width,)
        self._dtype = np.dtype(dtype)
        self._most = max(FIRST_ROWS, CHUNK_BYTES // (self._dtype.itemsize * (width or 1)))
        self._chunks: list[np.ndarray | SpilledArray] = []  # a spilled one: its written rows, flattened
        self._sizes: list[int] = []  # each chunk's rows, used or not
        self._starts: list[int] = []  # each chunk's first position
        self._filled: list[int] = []  # the rows written in each chunk
        self._file = SpillFile() if spill else None
        self._read: dict[int, np.ndarray] = {}  # spilled chunks read back, the latest last
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def extend(self, rows: Any) -> int:
        """Append ``rows`` (anything ``np.asarray`` reads as n rows of the width), kept together;
        the position of the first (for :meth:`view`)."""
        given = np.asarray(rows, dtype=self._dtype).reshape(-1, *self._tail)
        n = len(given)
        if not self._chunks or self._filled[-1] + n > self._sizes[-1]:
            if self._chunks:
                self._spill_last()
            size = FIRST_ROWS if not self._sizes else min(2 * self._sizes[-1], self._most)
            self._starts.append(0 if not self._sizes else self._starts[-1] + self._sizes[-1])
            self._sizes.append(max(n, size))
            self._chunks.append(np.empty((self._sizes[-1], *self._tail), dtype=self._dtype))
            self._filled.append(0)
        start = self._filled[-1]
        last = self._chunks[-1]
        assert isinstance(last, np.ndarray), "the chunk being filled is never spilled"
        last[start : start + n] = given
        self._filled[-1] += n
        self._count += n
        return self._starts[-1] + start

    def _spill_last(self) -> None:
        """Write the last chunk (its rows written) to the file and drop it, if it is worth it."""
        k = len(self._chunks) - 1
        chunk = self._chunks[k]
        if isinstance(chunk, np.ndarray):
            flat = spilled(chunk[: self._filled[k]].reshape(-1), self._file)
            if isinstance(flat, SpilledArray):
                self._chunks[k] = flat

    def _chunk(self, k: int) -> np.ndarray:
        """Chunk ``k``'s rows (a spilled one read back: only its written rows)."""
        chunk = self._chunks[k]
        if isinstance(chunk, np.ndarray):
            return chunk
        kept = self._read.pop(k, None)
        if kept is None:
            kept = chunk.whole().reshape(-1, *self._tail)
        self._read[k] = kept  # the latest read last
        while len(self._read) > KEPT_READS:
            del self._read[next(iter(self._read))]
        return kept

    def view(self, start: int, end: int) -> np.ndarray:
        """The rows from position ``start`` to ``end`` of one group (or of several in one chunk),
        not copied."""
        if start == end:
            return np.empty((0, *self._tail), dtype=self._dtype)
        k = bisect_right(self._starts, start) - 1
        first = start - self._starts[k]
        return self._chunk(k)[first : first + end - start]

    def all(self) -> np.ndarray:
        """Every row in the order appended, as one new array."""
        filled = [self._chunk(k)[:n] for k, n in enumerate(self._filled)]
        return np.concatenate(filled) if filled else np.empty((0, *self._tail), dtype=self._dtype)


class ImageSpans:
    """Per added image, in the order added: its id and where its rows lie in a :class:`GrowingRows`
    (start and end position), three int64s an image; and, made when first read after an add, the
    added images' positions sorted by id (an image may be added more than once: a merged or resumed
    run's records), found by binary search: arrays, not a list and a dict entry per image (~0.3 KB
    an image of Python objects, held through the scoring)."""

    def __init__(self) -> None:
        self._spans = GrowingRows(3, np.int64)
        self._index: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self._spans)

    def add(self, image_id: int, start: int, end: int) -> int:
        """Record one image's rows; its position among the added images."""
        position = len(self._spans)
        self._spans.extend([(image_id, start, end)])
        self._index = None
        return position

    def index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(every added image's [image_id, start, end], the positions in id order (stable), the ids in
        that order)."""
        if self._index is None:
            added = self._spans.all()
            order = np.argsort(added[:, 0], kind="stable")
            self._index = (added, order, np.ascontiguousarray(added[order, 0]))
        return self._index

    def of(self, image_id: int) -> list[tuple[int, int, int]]:
        """(position among the added images, start, end) each time ``image_id`` was added."""
        added, order, ids = self.index()
        low, high = np.searchsorted(ids, image_id, "left"), np.searchsorted(ids, image_id, "right")
        positions = order[low:high].tolist()
        return [
            (n, start, end) for n, (_, start, end) in zip(positions, added[positions].tolist(), strict=True)
        ]

    def added(self) -> list[list[int]]:
        """[image_id, start, end] per added image, in the order added (a new list)."""
        spans: list[list[int]] = self.index()[0].tolist()
        return spans
