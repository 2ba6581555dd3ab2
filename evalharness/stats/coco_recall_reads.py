"""How many of pycocotools' recall thresholds a point of a resampled precision-recall curve reaches
(``np.searchsorted(recThrs, tp / npig, "right")``), found without a binary search per point and
resample: the bootstrap (:mod:`evalharness.stats.coco_bootstrap`) asks it for every true positive
of every resample, so the search was its largest single step.

Both counts are whole numbers (weighted by whole resampling weights), so the answers for every
``tp <= npig`` of every ``npig`` the resamples draw are computed once, by the same division and
the same search, and looked up (:class:`ReachedTable`); where that table would be too large the
thresholds are found by arithmetic (:func:`thresholds_reached`). Both give the search's answers.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_MAX_TABLE = 1 << 24  # entries of a ReachedTable (128 MiB); above it, the arithmetic


class ReachedTable:
    """``searchsorted(rec_thrs, t / n, "right")`` for each ``n`` in ``drawn`` and each whole ``t``
    from 0 to ``n`` (0 / 0: NaN, all thresholds, as the search puts NaN last)."""

    def __init__(self, drawn: np.ndarray, rec_thrs: np.ndarray) -> None:
        self.rec_thrs = rec_thrs
        self.values = np.unique(drawn)  # whole numbers as floats
        sizes = self.values.astype(np.int64) + 1
        self.starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)
        self.fits = int(sizes.sum()) <= _MAX_TABLE
        if self.fits:
            counts = np.arange(int(sizes.sum())) - np.repeat(self.starts, sizes)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratios = counts / np.repeat(self.values, sizes)  # the division the AP makes
            self.reached = np.searchsorted(rec_thrs, ratios, "right")

    def reader(self, npig: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """For ``npig`` (K, rows): a function of (category per point, tp per point and row) giving
        the thresholds each point reaches; ``tp`` never exceeds its ``npig`` (a true positive is
        matched to a distinct non-ignored ground truth of its image)."""
        if not self.fits:
            return lambda cat, tp: thresholds_reached(self.rec_thrs, tp / npig[cat])
        start = self.starts[np.searchsorted(self.values, npig)]  # (K, rows)
        return lambda cat, tp: self.reached[start[cat] + tp.astype(np.intp)]


def thresholds_reached(rec_thrs: np.ndarray, rc: np.ndarray) -> np.ndarray:
    """``np.searchsorted(rec_thrs, rc, "right")`` (how many recall thresholds are <= each recall;
    NaN: all) for pycocotools' thresholds 0, 0.01, ..., 1, found by arithmetic instead of a binary
    search: floor(100 rc) is the answer's index give or take one (the thresholds are 0.01 apart, the
    rounding 1e-16), settled by comparing with the two thresholds there. Other thresholds: the search."""
    n = rec_thrs.size
    if n != 101 or rec_thrs[0] != 0.0 or rec_thrs[-1] != 1.0:
        return np.searchsorted(rec_thrs, rc, "right")
    with np.errstate(invalid="ignore"):
        near = np.floor(np.clip(rc * (n - 1), 0, n - 1))
    near = np.where(np.isnan(near), n - 1, near).astype(np.intp)
    padded = np.append(rec_thrs, np.nan)  # past the last threshold: nothing more reached
    reached: np.ndarray = near + (padded[near] <= rc) + (padded[near + 1] <= rc)
    reached[np.isnan(rc)] = n
    return reached
