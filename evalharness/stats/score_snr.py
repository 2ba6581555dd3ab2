"""Signal-to-noise ratio of one run's output scores against another's, from their records alone.

A classifier's record keeps its top-K output indices and their scores (``topk``, ``scores``), not the
whole output, so the SNR a chain step reports is over the scores both records carry: for each image,
the classes in both top-K lists, pooled over the images: ``10 log10(Σ a² / Σ (a - b)²)`` in dB, with
``a`` the earlier step's score. Infinite when every shared score is equal; None when the records
carry no scores to pair (a detector's, a run of another task). It measures how far the numbers moved,
which the answers alone (top-1 flips) hide until they cross.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any


def topk_snr_db(
    records_a: Iterable[Mapping[str, Any]], records_b: Iterable[Mapping[str, Any]]
) -> tuple[float | None, int]:
    """(SNR in dB of B's scores against A's over the scores both carry, how many were paired)."""
    by_id = {r.get("id"): r for r in records_b}
    signal = noise = 0.0
    pairs = 0
    for ra in records_a:
        rb = by_id.get(ra.get("id"))
        if rb is None or not ra.get("topk") or not rb.get("topk"):
            continue
        scores_b = dict(zip(rb["topk"], rb.get("scores") or [], strict=False))
        for cls, a in zip(ra["topk"], ra.get("scores") or [], strict=False):
            if cls in scores_b and a is not None and scores_b[cls] is not None:
                signal += float(a) ** 2
                noise += (float(a) - float(scores_b[cls])) ** 2
                pairs += 1
    if not pairs or signal == 0:
        return None, pairs
    return (math.inf if noise == 0 else 10 * math.log10(signal / noise)), pairs
