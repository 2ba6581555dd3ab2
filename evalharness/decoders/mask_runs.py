"""COCO's run-length code of the masks of one image, from the patch each detection's box covers.

A mask is 0 outside its box, so it is coded from the box's patch alone: COCO's RLE runs down the
columns (column-major), so a patch's runs are its columns' runs of ones, placed at their offsets in
the image, with the zeros between them. All of an image's patches are coded in one pass: each
thresholded patch is written, transposed, into one flat buffer (sized from the boxes up front) with
a zero border above and below every column; one comparison of neighbours finds every start and end
of a run of ones in every column of every patch, in image order; a run that ends on a column's last
image row and goes on at the next column's first row is joined; the lengths between the edges are
the counts. The result is the same text as ``pycocotools.mask.encode`` of each whole image-sized
mask (tested), without ever holding one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


class MaskPatches:
    """The masks of one image, one patch per detection: ``x`` / ``y`` are each patch's [first, end)
    pixel columns / rows ([N, 2]; an empty span is an empty mask). :meth:`fill` writes a patch's
    thresholded values, :meth:`rles` codes them all."""

    def __init__(self, x: npt.NDArray[np.int64], y: npt.NDArray[np.int64], height: int, width: int) -> None:
        self.height, self.width = height, width
        self.x0, self.y0 = x[:, 0], y[:, 0]
        w, h = np.maximum(x[:, 1] - x[:, 0], 0), np.maximum(y[:, 1] - y[:, 0], 0)
        self.bordered = np.where(w * h > 0, h + 2, 1)  # a column's length with its two zeros
        sizes = np.where(w * h > 0, w * self.bordered, 0)
        self.starts = np.concatenate([[0], np.cumsum(sizes)])
        self._flat = np.zeros(int(self.starts[-1]), dtype=bool)
        self._shapes = list(zip(w.tolist(), self.bordered.tolist(), strict=True))

    def fill(self, k: int, probability: npt.NDArray[Any], threshold: float) -> None:
        """Patch ``k`` is ``probability > threshold`` (shaped [rows, columns] of its span)."""
        w, bordered = self._shapes[k]
        columns = self._flat[self.starts[k] : self.starts[k + 1]].reshape(w, bordered)
        np.greater(probability.T, threshold, out=columns[:, 1:-1])

    def counts(self) -> tuple[npt.NDArray[Any], list[int]]:
        """COCO's uncompressed counts of every mask (runs of zeros and ones alternating, zeros first)
        in one array, and where each mask's begin in it (N + 1 offsets)."""
        total, flat, starts, n = self.height * self.width, self._flat, self.starts, len(self.x0)
        # every position whose value differs from the one before: a run of ones starts or ends there
        position = np.flatnonzero(flat[1:] != flat[:-1]) + 1
        owner = np.searchsorted(starts, position, side="right") - 1
        column, row = np.divmod(position - starts[owner], self.bordered[owner])
        edges = (column + self.x0[owner]) * self.height + (row - 1 + self.y0[owner])
        # a run that ends at the image's bottom and goes on at the next column's top is one run
        joined = np.flatnonzero((edges[1:-1:2] == edges[2::2]) & (owner[1:-1:2] == owner[2::2]))
        if joined.size:
            keep = np.ones(edges.size, dtype=bool)
            keep[2 * joined + 1] = keep[2 * joined + 2] = False
            edges, owner = edges[keep], owner[keep]
        first = np.searchsorted(owner, np.arange(n + 1))
        lengths = np.diff(edges, prepend=0)
        some = first[:-1] < first[1:]
        lengths[first[:-1][some]] = edges[first[:-1][some]]  # the zeros before a mask's first ones
        last = np.zeros(n, dtype=np.int64)
        last[some] = edges[first[1:][some] - 1]
        tails = total - last  # each mask's last run of zeros: none where its ones reach the last pixel
        counts = np.insert(lengths, first[1:], tails)
        begin = first + np.arange(n + 1)
        if (tails == 0).any():
            counts = np.delete(counts, (first[1:] + np.arange(n))[tails == 0])
            begin -= np.concatenate([[0], np.cumsum(tails == 0)])
        return counts, begin.tolist()

    def rles(self) -> list[str]:
        """COCO's compressed RLE ``counts`` text of each mask (``pycocotools.mask.encode``'s); each
        mask's counts go to pycocotools as a slice of the one array, not as a list of ints."""
        from pycocotools import mask as mask_utils

        if not len(self.x0):
            return []
        counts, begin = self.counts()
        size = [self.height, self.width]
        runs = [{"size": size, "counts": counts[a:b]} for a, b in zip(begin[:-1], begin[1:], strict=True)]
        return [str(rle["counts"].decode("ascii")) for rle in mask_utils.frPyObjects(runs, *size)]
