"""Top-1 agreement and McNemar's p of classification runs as array operations, for a sweep's N×N
matrix and the quantization table.

A sweep of 20 runs on 50,000 images has 190 pairs; pairing each pair's records by id in Python
(:func:`evalharness.stats.paired.classification_diff`, which also lists every changed image for
``report diff``) costs a second a pair. Here each run's records are read once into columns aligned
by id (:func:`answer_columns`: sorted ids, right or not, the top-1 answer), and a pair is a few
vector comparisons of those columns: its counts, and from them the same agreement, McNemar p and
paired interval as ``classification_diff`` gives (tests/unit/stats/test_agreement.py holds it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from evalharness.stats.intervals import paired_difference
from evalharness.stats.paired import mcnemar_exact


class _NoAnswer:
    """The top-1 of a record whose ranked list is empty: equal to itself only (``[] == []``)."""

    def __repr__(self) -> str:
        return "no answer"


NO_ANSWER = _NoAnswer()


@dataclass(frozen=True)
class AnswerColumns:
    """One run's records as columns in id order (the last record of an id kept, as pairing by id does)."""

    ids: np.ndarray  # object: the ids, sorted, unique
    right: np.ndarray  # bool: the true class ranked first (``rank == 0``)
    top1: np.ndarray  # object: the first output index of the ranked list (``topk``)
    top1_label: np.ndarray  # object: the first label text (``topk_labels``)


def _object_array(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _first(ranked: list[Any] | None) -> Any:
    return ranked[0] if ranked else NO_ANSWER


def answer_columns(records: list[dict[str, Any]]) -> AnswerColumns:
    """The columns of a run's ``records``, read once for every pair it is in."""
    by_id = {r["id"]: r for r in records}
    ids = sorted(by_id)
    kept = [by_id[i] for i in ids]
    return AnswerColumns(
        ids=_object_array(ids),
        right=np.fromiter((r.get("rank") == 0 for r in kept), dtype=bool, count=len(kept)),
        top1=_object_array([_first(r.get("topk")) for r in kept]),
        top1_label=_object_array([_first(r.get("topk_labels")) for r in kept]),
    )


def _aligned(a: AnswerColumns, b: AnswerColumns) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays into ``a`` and ``b`` of the ids both hold, in id order."""
    if a.ids.size == b.ids.size and bool((a.ids == b.ids).all()):
        every = np.arange(a.ids.size)
        return every, every
    common = sorted(set(a.ids.tolist()) & set(b.ids.tolist()))
    position_a = {v: i for i, v in enumerate(a.ids.tolist())}
    position_b = {v: i for i, v in enumerate(b.ids.tolist())}
    return (
        np.fromiter((position_a[i] for i in common), dtype=np.intp, count=len(common)),
        np.fromiter((position_b[i] for i in common), dtype=np.intp, count=len(common)),
    )


def top1_agreement(a: AnswerColumns, b: AnswerColumns, same_label_file: bool) -> dict[str, Any]:
    """``{"paired_images", "top1_agreement", "mcnemar_p", "delta_top1_interval"}`` of B against A,
    the values ``classification_diff`` gives for the same records (top-1 compared by output index
    when both runs used the same label file, else by label text)."""
    index_a, index_b = _aligned(a, b)
    n = int(index_a.size)
    right_a, right_b = a.right[index_a], b.right[index_b]
    top1_a, top1_b = (a.top1, b.top1) if same_label_file else (a.top1_label, b.top1_label)
    agree = int(np.count_nonzero(top1_a[index_a] == top1_b[index_b])) if n else 0
    both_right = int(np.count_nonzero(right_a & right_b))
    a_only = int(np.count_nonzero(right_a & ~right_b))
    b_only = int(np.count_nonzero(right_b & ~right_a))
    neither = n - both_right - a_only - b_only
    return {
        "paired_images": n,
        "top1_agreement": agree / n if n else None,
        "mcnemar_p": mcnemar_exact(a_only, b_only),
        "delta_top1_interval": paired_difference(both_right, a_only, b_only, neither),
    }
