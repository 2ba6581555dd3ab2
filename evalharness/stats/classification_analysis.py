"""Which classes, and which confusions, a classifier gets right or wrong, for one run and between
two runs on the same images.

Top-1 over 50,000 images hides a class that lost a third of its images; a per-class table shows it,
with the Wilson interval of each class's top-1 (the same interval as the run's top-1) so that a class
of 50 images is not read like the whole set. Between two runs each class gets the paired tests of
``report diff`` (McNemar's exact p, Newcombe's interval: :mod:`evalharness.stats.paired`,
:mod:`evalharness.stats.intervals`), and since a thousand classes are a thousand tests, the p-values
are adjusted by Holm's step-down method over the classes present before a class is called changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, TypedDict

from evalharness.stats.intervals import paired_difference, wilson
from evalharness.stats.paired import PerClassChanges, holm, mcnemar_exact, pair_by_id

CONFUSIONS_KEPT = 20  # most frequent (truth -> top-1) confusions a run records


class PerClassResult(TypedDict):
    """A classification run's per-class table and its commonest confusions (:class:`PerClassCounter`)."""

    per_class: list[dict[str, Any]]  # label, images, correct, top1, interval; worst top-1 first
    classes_present: int
    confusions: list[dict[str, Any]]  # truth, predicted, count; the CONFUSIONS_KEPT commonest
    confusions_total: int


def _correct(record: Mapping[str, Any]) -> bool:
    return record.get("rank") == 0


def _top1(record: Mapping[str, Any]) -> Any:
    labels = record.get("topk_labels") or []
    return labels[0] if labels else None


class PerClassCounter:
    """Per true label: images and top-1 hits; per (truth, top-1) the wrong answers."""

    def __init__(self) -> None:
        self.images: Counter[Any] = Counter()
        self.hits: Counter[Any] = Counter()
        self.confusions: Counter[Any] = Counter()

    def add(self, record: Mapping[str, Any]) -> None:
        label = record.get("label")
        if label is None:
            return
        self.images[label] += 1
        if _correct(record):
            self.hits[label] += 1
        elif _top1(record) is not None:
            self.confusions[(label, _top1(record))] += 1

    def result(self) -> PerClassResult:
        rows = [
            {
                "label": label,
                "images": n,
                "correct": self.hits[label],
                "top1": self.hits[label] / n,
                "interval": wilson(self.hits[label], n),
            }
            for label, n in self.images.items()
        ]
        rows.sort(key=lambda r: (r["top1"], -r["images"], r["label"]))
        top = sorted(self.confusions.items(), key=lambda kv: (-kv[1], kv[0]))[:CONFUSIONS_KEPT]
        return {
            "per_class": rows,
            "classes_present": len(rows),
            "confusions": [{"truth": t, "predicted": p, "count": n} for (t, p), n in top],
            "confusions_total": sum(self.confusions.values()),
        }


def per_class_changes(
    preds_a: list[dict[str, Any]], preds_b: list[dict[str, Any]], alpha: float
) -> PerClassChanges:
    """Per true label on the paired images: both runs' top-1, Δ with Newcombe's paired interval,
    McNemar's exact p and Holm's adjusted p (over every class present); ``significant``: the classes
    whose adjusted p is below ``alpha``, largest |Δ| first."""
    pairs, _, _ = pair_by_id(preds_a, preds_b)
    cells: dict[str, list[int]] = {}  # label -> [both, a_only, b_only, neither]
    for a, b in pairs:
        label = a.get("label")
        if label is None:
            continue
        cell = cells.setdefault(label, [0, 0, 0, 0])
        ra, rb = _correct(a), _correct(b)
        cell[0 if ra and rb else 1 if ra else 2 if rb else 3] += 1
    rows: list[dict[str, Any]] = []
    for label, (both, a_only, b_only, neither) in cells.items():
        n = both + a_only + b_only + neither
        rows.append(
            {
                "label": label,
                "images": n,
                "a_top1": (both + a_only) / n,
                "b_top1": (both + b_only) / n,
                "delta": (b_only - a_only) / n,
                "a_only": a_only,
                "b_only": b_only,
                "interval": paired_difference(both, a_only, b_only, neither),
                "p": mcnemar_exact(a_only, b_only),
            }
        )
    for row, adjusted in zip(rows, holm([r["p"] for r in rows]), strict=True):
        row["p_holm"] = adjusted
    rows.sort(key=lambda r: (r["p_holm"], -abs(r["delta"]), r["label"]))
    changed = [r for r in rows if r["a_only"] or r["b_only"]]
    return {
        "correction": "holm",
        "alpha": alpha,
        "classes_tested": len(rows),
        "changed": changed,
        "significant": [r for r in changed if r["p_holm"] < alpha],
    }


def confusion_changes(preds_a: list[dict[str, Any]], preds_b: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """(truth -> top-1) wrong-answer counts of A and B on the paired images, the changed ones with the
    largest |B − A| first ("Siamese cat -> Egyptian cat: +3")."""
    pairs, _, _ = pair_by_id(preds_a, preds_b)
    counts: tuple[Counter[Any], Counter[Any]] = (Counter(), Counter())
    for pair in pairs:
        for side, record in zip(counts, pair, strict=True):
            if record.get("label") is not None and not _correct(record) and _top1(record) is not None:
                side[(record["label"], _top1(record))] += 1
    rows = [
        {
            "truth": t,
            "predicted": p,
            "a": counts[0][(t, p)],
            "b": counts[1][(t, p)],
            "delta": counts[1][(t, p)] - counts[0][(t, p)],
        }
        for t, p in set(counts[0]) | set(counts[1])
        if counts[0][(t, p)] != counts[1][(t, p)]
    ]
    rows.sort(key=lambda r: (-abs(r["delta"]), r["truth"], r["predicted"]))
    return rows
