"""The one ranking of scores: top-k indices, ties to the lower index, NaN last, for every dtype a
model emits. Classification records, decoded comparisons and explain all rank with it, so a run and
its explanation can never disagree about which class came first."""

from __future__ import annotations

import numpy as np


def stable_topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first; equal scores rank the lower index first.

    Quantized models emit many equal uint8 scores, so tie order decides top-1 and must not depend
    on the sort algorithm. The array is never negated (uint8 would wrap): a stable ascending sort of
    the reversed array, read backwards, is the stable descending order. NaN ranks last.
    """
    x = np.asarray(scores)
    if x.ndim != 1:
        raise ValueError(f"stable_topk needs a 1-D array, got shape {x.shape}")
    if x.dtype.kind not in "biuf":
        raise ValueError(f"stable_topk needs real numeric scores, got dtype {x.dtype}")
    if k < 0:
        raise ValueError(f"stable_topk needs k >= 0, got {k}")
    if x.dtype.kind == "f":
        # Floats negate safely: lexsort (stable) by NaN-ness, then descending score, then index, so
        # NaN ranks after every number, -inf included.
        nan = np.isnan(x)
        return np.lexsort((-np.where(nan, 0, x), nan))[:k].astype(np.int64, copy=False)
    # only the k first positions of the reversed order are turned back into indices
    first: np.ndarray = (x.shape[0] - 1) - np.argsort(x[::-1], kind="stable")[::-1][:k]
    return first.astype(np.int64, copy=False)
