"""The images whose top-5 list changed between two classification runs, each with its largest score gap.

Top-1 flips say where an answer crossed; a conversion (ONNX or PyTorch → ``.tflite``) that is right
moves no top-5 list at all, and one that is slightly off reorders the tail first. So ``report diff``
lists every paired image whose ranked top-5 (order included) differs, with the largest
``|score A - score B|`` over the classes both records score (a record keeps its top-K, K ≥ 5 by
default, so a class that left one side's top-K has no score there and is not in the gap) and the class
it is on. Sorted by that gap, largest first: the images to look at.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

TOP = 5


def score_gap(a: dict[str, Any], b: dict[str, Any], key: str) -> tuple[float | None, Any]:
    """(largest |score A - score B| over the classes both records score, that class); None: no pair."""
    scores_b = dict(zip(b.get(key) or [], b.get("scores") or [], strict=False))
    best: tuple[float | None, Any] = (None, None)
    for cls, sa in zip(a.get(key) or [], a.get("scores") or [], strict=False):
        sb = scores_b.get(cls)
        if sa is None or sb is None:
            continue
        gap = abs(float(sa) - float(sb))
        if best[0] is None or gap > best[0]:
            best = (gap, cls)
    return best


def topk_changes(pairs: Iterable[tuple[dict[str, Any], dict[str, Any]]], key: str) -> list[dict[str, Any]]:
    """Each paired image whose top-5 list differs (``key``: ``topk`` or ``topk_labels``), largest gap
    first: ``{"id", "a_top5", "b_top5", "a_top5_labels", "b_top5_labels", "max_score_gap",
    "gap_class", "gap_label"}``."""
    changed = []
    for a, b in pairs:
        if a[key][:TOP] == b[key][:TOP]:
            continue
        gap, cls = score_gap(a, b, key)
        labels = dict(zip(a[key], a.get("topk_labels") or [], strict=False))
        changed.append({
            "id": a["id"],
            "a_top5": list(a[key][:TOP]),
            "b_top5": list(b[key][:TOP]),
            "a_top5_labels": list((a.get("topk_labels") or [])[:TOP]),
            "b_top5_labels": list((b.get("topk_labels") or [])[:TOP]),
            "max_score_gap": gap,
            "gap_class": cls,
            "gap_label": labels.get(cls),
        })  # fmt: skip
    return sorted(changed, key=lambda c: (-(c["max_score_gap"] or 0.0), c["id"]))
