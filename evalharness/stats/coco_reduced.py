"""A chunk's ``evalImgs`` reduced at once to what ``accumulate()`` and the bootstrap's
:class:`~evalharness.stats.coco_bootstrap.Matching` read of it, held compactly for the whole scoring.

Per category and area range (:class:`Reduced`): each kept detection's score and image, and its
matched / ignored flags per IoU threshold; each image's non-ignored ground-truth count. Three things
keep it small (a 2,500-image COCO run: ~19 MiB of many small arrays before, ~4 MiB now):

- a category's detections are the same in every area range (pycocotools' ``evaluateImg`` sorts and
  cuts an image's detections of a category before it reads the range, which only marks some
  ignored), so the area ranges of a category share one copy of the scores, the images holding an
  entry and each image's detection count (:class:`Detections`); an image's rank, for the maxDets
  cuts, is its position after its image's start. A block whose detections ever differ from the
  shared ones (no evaluator here does that) takes its own copy from then on;
- the flags are bits, packed along the thresholds (np.packbits: 2 bytes for COCO's 10 thresholds
  instead of 10 booleans), unpacked when read;
- every column is one array grown by half again when full (:class:`Growing`), not an array per
  chunk: a numpy array costs ~100 bytes and a malloc block before its values, and joining the parts
  when first read held two copies of them for a moment.

Exactness: the values read back are the ones added, in the order added (a category's detections of
each image in ``evaluateImg``'s order, the images in chunk order), bit for bit
(``tests/unit/stats/test_coco_chunks.py``, ``tests/unit/stats/test_coco_reduced.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalharness.core.spill_file import SpilledArray, SpillFile

SPILL_ROWS_BYTES = 2**16  # a column's rows held in memory before they are written to the file


class Growing:
    """A numpy array grown along its first axis by appends; its capacity grows by half again when
    full (a few copies in all), so the unused tail is at most a third of it. Rows past
    :data:`SPILL_ROWS_BYTES` are written, a segment at a time, to an unlinked temporary file
    (``core/spill_file.py``) and read back when asked: ``accumulate()`` reads a category's columns
    whole, one category after another, so the whole run's matching need not stay in memory.
    ``spill``: the file, shared by every column of one scoring (a long run's ~1,200 columns each
    with its own would hold as many open files); None: one made at the first spilled segment."""

    def __init__(self, dtype: Any, width: tuple[int, ...] = (), spill: SpillFile | None = None) -> None:
        self._data = np.empty((0, *width), dtype=dtype)  # the rows not yet spilled, and room
        self._size = 0
        self._segments: list[SpilledArray] = []  # the spilled rows, flattened, in order
        self._spilled = 0  # rows spilled
        self._file = spill  # opens its file at its first write: a scoring that spills nothing opens none

    def __len__(self) -> int:
        return self._spilled + self._size

    def extend(self, values: np.ndarray) -> None:
        """``values`` (rows of this array's width) appended."""
        need = self._size + len(values)
        if need > len(self._data):
            capacity = max(need, len(self._data) * 3 // 2, 64)
            grown = np.empty((capacity, *self._data.shape[1:]), self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[self._size : need] = values
        self._size = need
        if self._data[: self._size].nbytes >= SPILL_ROWS_BYTES:
            self._file = self._file or SpillFile()
            self._segments.append(SpilledArray(self._file, self._data[: self._size].reshape(-1)))
            self._spilled += self._size
            self._data, self._size = np.empty((0, *self._data.shape[1:]), self._data.dtype), 0

    def values(self, count: int | None = None) -> np.ndarray:
        """The first ``count`` rows appended (None: all): a view where none was spilled, else a new
        array read back."""
        count = len(self) if count is None else count
        if not self._segments:
            return self._data[:count]
        width = self._data.shape[1:]
        parts = [segment.whole().reshape(-1, *width) for segment in self._segments]
        return np.concatenate([*parts, self._data[: self._size]])[:count]

    def between(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start`` to ``stop`` (of the rows appended; past the end: fewer), read back only
        from the spilled segments they lie in (a column read whole for each chunk would cost the
        square of a long run's rows)."""
        stop = min(stop, len(self))
        if start >= self._spilled:
            return self._data[start - self._spilled : stop - self._spilled]
        width, rows, parts, first = self._data.shape[1:], max(1, int(np.prod(self._data.shape[1:]))), [], 0
        for segment in self._segments:
            count = len(segment) // rows
            low, high = max(start, first), min(stop, first + count)
            if low < high:
                parts.append(segment[(low - first) * rows : (high - first) * rows].reshape(-1, *width))
            first += count
        parts.append(self._data[max(0, start - self._spilled) : max(0, stop - self._spilled)])
        return np.concatenate(parts)

    def head(self, count: int) -> Growing:
        """A new array of the first ``count`` rows."""
        copy = Growing(self._data.dtype, self._data.shape[1:], self._file)
        copy.extend(self.values(count))
        return copy


class Detections:
    """One category's detections as the area ranges share them: the images holding an entry (int32
    image index), each one's detection count and every detection's score, in the order added."""

    def __init__(self, spill: SpillFile | None = None) -> None:
        self.spill = spill
        self.images = Growing(np.int32, spill=spill)
        self.counts = Growing(np.int32, spill=spill)
        self.scores = Growing(np.float64, spill=spill)

    @staticmethod
    def columns(images: list[int], entries: list[dict[str, Any]]) -> tuple[np.ndarray, ...]:
        """(images, detection counts, scores) of a chunk's entries."""
        counts = np.array([len(e["dtScores"]) for e in entries], dtype=np.int32)
        scores = np.array([s for e in entries for s in e["dtScores"]], dtype=np.float64)
        return np.asarray(images, dtype=np.int32), counts, scores

    def extend(self, columns: tuple[np.ndarray, ...]) -> None:
        for column, values in zip((self.images, self.counts, self.scores), columns, strict=True):
            column.extend(values)

    def holds(self, n_img: int, n_det: int, columns: tuple[np.ndarray, ...]) -> bool:
        """Whether ``columns`` are what this holds after its first ``n_img`` images (``n_det``
        detections): the part another area range of the same chunk just added."""
        images, counts, scores = columns
        return (
            np.array_equal(self.images.between(n_img, n_img + len(images)), images)
            and np.array_equal(self.counts.between(n_img, n_img + len(counts)), counts)
            and np.array_equal(self.scores.between(n_det, n_det + len(scores)), scores)
        )

    def head(self, n_img: int, n_det: int) -> Detections:
        """A copy of the first ``n_img`` images and their ``n_det`` detections."""
        copy = Detections(self.spill)
        copy.images, copy.counts = self.images.head(n_img), self.counts.head(n_img)
        copy.scores = self.scores.head(n_det)
        return copy


def _packed(flags: list[np.ndarray], n_thr: int) -> np.ndarray:
    """(D, ceil(T / 8)) uint8: per detection, its flags at the T thresholds as bits."""
    joined = np.concatenate([np.asarray(f).reshape(n_thr, -1) for f in flags], axis=1) != 0
    packed: np.ndarray = np.packbits(joined, axis=0).T
    return packed


def _unpacked(packed: np.ndarray, n_thr: int) -> np.ndarray:
    """(T, D) bool of :func:`_packed`'s rows."""
    return np.ascontiguousarray(np.unpackbits(packed, axis=1, count=n_thr).view(bool).T)


class Reduced:
    """One category and area range of ``evalImgs``, reduced (see the module docstring): the
    detections of every image in image order, each image's in ``evaluateImg``'s order."""

    def __init__(self, n_thr: int, shared: Detections | None = None, spill: SpillFile | None = None) -> None:
        self.n_thr = n_thr
        self._detections = Detections(spill) if shared is None else shared
        self._owner = shared is None  # add() appends to the detections; else checks they are alike
        width = ((n_thr + 7) // 8,)
        self._matched, self._ignored = Growing(np.uint8, width, spill), Growing(np.uint8, width, spill)
        # per image with an entry: its non-ignored ground truth
        self._gt_counts = Growing(np.int32, spill=spill)

    @property
    def shared(self) -> Detections:
        """The detections, for another area range of the category to share."""
        return self._detections

    def add(self, images: list[int], entries: list[dict[str, Any]]) -> None:
        """A chunk's ``evaluateImg`` results (not None) of this category and area range, by image."""
        n_img, n_det = len(self._gt_counts), len(self._matched)
        columns = Detections.columns(images, entries)
        if not self._owner and not self._detections.holds(n_img, n_det, columns):
            self._detections, self._owner = self._detections.head(n_img, n_det), True
        if self._owner:
            self._detections.extend(columns)
        self._gt_counts.extend(
            np.array([np.count_nonzero(np.asarray(e["gtIgnore"]) == 0) for e in entries], dtype=np.int32)
        )
        if len(columns[2]):
            self._matched.extend(_packed([e["dtMatches"] for e in entries], self.n_thr))
            self._ignored.extend(_packed([e["dtIgnore"] for e in entries], self.n_thr))

    def detections(
        self, images: np.ndarray | None = None, max_det: int | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(scores, image indices, matched, ignored) in accumulate's concatenation order (before its
        sort), of ``images`` only (None: all) and each image's first ``max_det`` (None: all)."""
        n_img, n_det = len(self._gt_counts), len(self._matched)
        held = self._detections.images.values(n_img)
        counts = self._detections.counts.values(n_img)
        scores = self._detections.scores.values(n_det)
        imgs = np.repeat(held, counts)
        keep = None
        if max_det is not None and n_det and int(counts.max()) > max_det:
            starts = np.repeat(np.cumsum(counts) - counts, counts)
            keep = (np.arange(n_det) - starts) < max_det  # each detection's rank in its image
        if images is not None:
            chosen = np.repeat(np.isin(held, images), counts)
            keep = chosen if keep is None else keep & chosen
        matched = _unpacked(self._matched.values(), self.n_thr)
        ignored = _unpacked(self._ignored.values(), self.n_thr)
        if keep is None or keep.all():
            return scores, imgs, matched, ignored
        return scores[keep], imgs[keep], matched[:, keep], ignored[:, keep]

    def ground_truth(self) -> tuple[np.ndarray, np.ndarray]:
        """(image indices, their non-ignored ground truth) of the images with an entry."""
        n_img = len(self._gt_counts)
        return self._detections.images.values(n_img), self._gt_counts.values().astype(np.int64)

    def gt_count(self, images: np.ndarray | None = None) -> int:
        """Non-ignored ground truth of ``images`` (None: all), as accumulate's ``npig``."""
        imgs, counts = self.ground_truth()
        if images is not None:
            counts = counts[np.isin(imgs, images)]
        return int(counts.sum())


def reduce_eval_imgs(
    eval_imgs: list[Any], n_cat: int, n_area: int, first_image: int, n_thr: int,
    reduced: dict[tuple[int, int], Reduced] | None = None, spill: SpillFile | None = None,
) -> dict[tuple[int, int], Reduced]:  # fmt: skip
    """``evalImgs`` of a chunk (pycocotools' layout: category, then area range, then image) added
    to ``reduced`` by (category index, area index), its images numbered from ``first_image``; a
    category's area ranges after the first share its detections. ``spill``: the one file every
    column writes to (None: one made here for the blocks this call adds)."""
    reduced = {} if reduced is None else reduced
    spill = SpillFile() if spill is None else spill
    n_img = len(eval_imgs) // max(1, n_cat * n_area)
    for k in range(n_cat):
        for a in range(n_area):
            base = (k * n_area + a) * n_img
            held = [i for i in range(n_img) if eval_imgs[base + i] is not None]
            if held:
                block = reduced.get((k, a))
                if block is None:
                    first = reduced.get((k, 0)) if a else None
                    block = reduced[k, a] = Reduced(n_thr, None if first is None else first.shared, spill)
                block.add([first_image + i for i in held], [eval_imgs[base + i] for i in held])
    return reduced
