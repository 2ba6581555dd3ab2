"""Top-1 agreement and McNemar's p of classification runs as array operations, for a sweep's N×N
matrix and the quantization table.

A sweep of 20 runs on 50,000 images has 380 ordered pairs; pairing each pair's records by id in
Python (:func:`evalharness.stats.paired.classification_diff`, which also lists every changed image
for ``report diff``) costs seconds a pair. Here each run's records are read once into columns
aligned by id (:func:`answer_columns`: ids, right or not, the top-1 answer, each id and answer an
integer code shared by the runs compared), and a pair is a few integer-vector comparisons of those
columns: its counts, and from them the same agreement, McNemar p and paired interval as
``classification_diff`` gives (tests/unit/stats/test_agreement.py holds it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from evalharness.stats.intervals import paired_difference
from evalharness.stats.paired import mcnemar_exact

Codes = dict[Any, int]  # ids and answers as small integers, shared by the runs compared together
NO_ANSWER = -1  # the top-1 of a record whose ranked list is empty (``[] == []``: equal to itself only)


@dataclass(frozen=True)
class AnswerColumns:
    """One run's records as integer columns in order of their ids' codes (the last record of an id
    kept, as pairing by id does); the codes are those of every run compared with this one."""

    ids: np.ndarray  # the ids' codes, ascending, unique
    right: np.ndarray  # bool: the true class ranked first (``rank == 0``)
    top1: np.ndarray  # the code of the first output index of the ranked list (``topk``)
    top1_label: np.ndarray  # the code of the first label text (``topk_labels``)


def _codes(values: Iterable[Any], codes: Codes) -> np.ndarray:
    """Each value's code (equal values, as ``==`` says, share one), new values numbered on."""
    return np.fromiter((codes.setdefault(v, len(codes)) for v in values), dtype=np.int64)


def _first_codes(records: list[dict[str, Any]], field: str, codes: Codes) -> np.ndarray:
    """The code of each record's first entry of ``field`` (a ranked list), NO_ANSWER where empty."""
    ranked = (r.get(field) for r in records)
    first = (codes.setdefault(v[0], len(codes)) if v else NO_ANSWER for v in ranked)
    return np.fromiter(first, dtype=np.int64, count=len(records))


def answer_columns(records: list[dict[str, Any]], codes: Codes) -> AnswerColumns:
    """The columns of a run's ``records``, read once for every pair it is in (``codes``: one dict
    for all the runs compared with each other)."""
    by_id = {r["id"]: r for r in records}
    ids = _codes(by_id, codes)
    order = np.argsort(ids, kind="stable")
    kept = list(by_id.values())
    right = np.fromiter((r.get("rank") == 0 for r in kept), dtype=bool, count=len(kept))
    top1, labels = _first_codes(kept, "topk", codes), _first_codes(kept, "topk_labels", codes)
    return AnswerColumns(ids[order], right[order], top1[order], labels[order])


def _aligned(a: AnswerColumns, b: AnswerColumns) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays into ``a`` and ``b`` of the ids both hold."""
    if a.ids.size == b.ids.size and bool((a.ids == b.ids).all()):
        every = np.arange(a.ids.size)
        return every, every
    _, index_a, index_b = np.intersect1d(a.ids, b.ids, assume_unique=True, return_indices=True)
    return index_a, index_b


class TopOneAgreement(TypedDict):
    """What :func:`top1_agreement` gives for one pair: the figures ``classification_diff`` gives."""

    paired_images: int
    top1_agreement: float | None
    mcnemar_p: float
    delta_top1_interval: list[float] | None


def top1_agreement(a: AnswerColumns, b: AnswerColumns, same_label_file: bool) -> TopOneAgreement:
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
