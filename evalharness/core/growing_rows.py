"""Rows appended a group at a time, held in a few large numpy arrays, not an array per group.

What a run keeps of each image until it is scored (its detections, its masks' areas and IoUs) is a
few dozen numbers: as small arrays per image (a Python object and a heap block each, scattered among
the loop's short-lived blocks) a 2,500-image seg run's heap grew ~7 KB an image. Here they are
written into chunks of up to :data:`CHUNK_BYTES`, never copied: one array that doubled and copied
itself left each outgrown array's pages resident in the heap, twice the rows' size in all.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import numpy as np

FIRST_ROWS = 256  # the first chunk's rows; each next one twice the last, up to CHUNK_BYTES
CHUNK_BYTES = 2**20


class GrowingRows:
    """Rows of ``width`` values of one dtype (``width`` None: single values), appended a group at a
    time; a group is never split between chunks, so :meth:`view` reads it back without a copy. The
    position :meth:`extend` returns counts a chunk's unused end (left when the next group did not
    fit) as rows: keep it, do not derive it from :meth:`__len__`. Rows once written never change."""

    def __init__(self, width: int | None, dtype: Any = np.float64) -> None:
        self._tail: tuple[int, ...] = () if width is None else (width,)
        self._dtype = np.dtype(dtype)
        self._most = max(FIRST_ROWS, CHUNK_BYTES // (self._dtype.itemsize * (width or 1)))
        self._chunks: list[np.ndarray] = []
        self._starts: list[int] = []  # each chunk's first position
        self._filled: list[int] = []  # the rows written in each chunk
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def extend(self, rows: Any) -> int:
        """Append ``rows`` (anything ``np.asarray`` reads as n rows of the width), kept together;
        the position of the first (for :meth:`view`)."""
        given = np.asarray(rows, dtype=self._dtype).reshape(-1, *self._tail)
        n = len(given)
        if not self._chunks or self._filled[-1] + n > len(self._chunks[-1]):
            last = self._chunks[-1] if self._chunks else None
            size = FIRST_ROWS if last is None else min(2 * len(last), self._most)
            self._starts.append(0 if last is None else self._starts[-1] + len(last))
            self._chunks.append(np.empty((max(n, size), *self._tail), dtype=self._dtype))
            self._filled.append(0)
        start = self._filled[-1]
        self._chunks[-1][start : start + n] = given
        self._filled[-1] += n
        self._count += n
        return self._starts[-1] + start

    def view(self, start: int, end: int) -> np.ndarray:
        """The rows from position ``start`` to ``end`` of one group (or of several in one chunk),
        not copied."""
        if start == end:
            return np.empty((0, *self._tail), dtype=self._dtype)
        k = bisect_right(self._starts, start) - 1
        first = start - self._starts[k]
        return self._chunks[k][first : first + end - start]

    def all(self) -> np.ndarray:
        """Every row in the order appended, as one new array."""
        filled = [chunk[:n] for chunk, n in zip(self._chunks, self._filled, strict=True)]
        return np.concatenate(filled) if filled else np.empty((0, *self._tail), dtype=self._dtype)


class ImageSpans:
    """Per added image, in the order added: its id and where its rows lie in a :class:`GrowingRows`
    (start and end position), three int64s an image; and, made when first read after an add, each
    image id's positions among the added images (an image may be added more than once: a merged
    or resumed run's records)."""

    def __init__(self) -> None:
        self._spans = GrowingRows(3, np.int64)
        self._index: tuple[list[list[int]], dict[int, list[int]]] | None = None

    def __len__(self) -> int:
        return len(self._spans)

    def add(self, image_id: int, start: int, end: int) -> int:
        """Record one image's rows; its position among the added images."""
        position = len(self._spans)
        self._spans.extend([(image_id, start, end)])
        self._index = None
        return position

    def index(self) -> tuple[list[list[int]], dict[int, list[int]]]:
        """([image_id, start, end] per added image, image id -> its positions among them)."""
        if self._index is None:
            added: list[list[int]] = self._spans.all().tolist()
            positions: dict[int, list[int]] = {}
            for n, (image_id, _, _) in enumerate(added):
                positions.setdefault(image_id, []).append(n)
            self._index = (added, positions)
        return self._index

    def of(self, image_id: int) -> list[tuple[int, int, int]]:
        """(position among the added images, start, end) each time ``image_id`` was added."""
        added, positions = self.index()
        return [(n, added[n][1], added[n][2]) for n in positions.get(image_id, ())]

    def added(self) -> list[list[int]]:
        """[image_id, start, end] per added image, in the order added."""
        return self.index()[0]
