"""Decoded answers compared, not only raw tensors: a classifier's classes, a detector's boxes.

A raw error hides what changed: a detector's class output moving from 10 to 20 is an error of 10
and means nothing numerically, and a softmax error of 0.01 may or may not flip the top-1 class. So
for outputs a decoder understands, one comparison of a reference answer with a test answer:

- classifier (one score vector): top-1 agreement, overlap of the two top-5 sets, and the score change
  of the reference's top-1 class (test minus reference; an argmax tie goes to the lowest index);
- detector (rows ``[class, score, x, y, w, h]``): the reference's boxes with score >= ``min_score``
  are matched greedily (highest score first) to the test box of highest IoU >= ``iou`` of *any*
  class, using :func:`evalharness.stats.boxes.match_detections`; a matched pair whose classes
  differ is a class disagreement (same-class matching would count it as one box lost and one new,
  hiding that the box stayed). Test boxes are matched whatever their score, so a box scored 0.31 by
  the reference and 0.29 by the test is a score change, not a lost box; a test box is *new* only
  when unmatched with score >= ``min_score``.

Used by ``task=inference_diff`` (per run, aggregated by :class:`DecodedScorer`) and by ``explain``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

import numpy as np

from evalharness.core.ranking import stable_topk
from evalharness.stats.boxes import match_detections

NO_DECODER = "no decoder: raw tensors only"
TOP_K = 5


class Spread(TypedDict):
    """Mean, min and max of some values; None without values."""

    mean: float | None
    min: float | None
    max: float | None


class DetectorSettings(TypedDict, total=False):
    """How a detector's answers were compared (recorded with the result; none for a classifier)."""

    min_score: float
    iou_threshold: float
    match: str  # "any class"
    min_agreement: float


class NoDecoderSummary(TypedDict):
    """metrics.json ``decoded`` of an inference_diff run whose outputs no decoder reads."""

    kind: str  # "none"
    note: str


class ClassifierSummary(DetectorSettings):
    """metrics.json ``decoded`` of a classifier's inference_diff run (:meth:`DecodedScorer.result`)."""

    kind: str  # "classifier"
    runs: int
    top1_agree: int
    top1_agreement: float | None
    top5_overlap: Spread
    abs_score_change: Spread
    changed_runs: list[str]  # the first run ids whose decoded answer changed


class DetectorSummary(DetectorSettings):
    """metrics.json ``decoded`` of a detector's inference_diff run (:meth:`DecodedScorer.result`)."""

    kind: str  # "detector"
    runs: int
    runs_with_ref_boxes: int
    ref_boxes: int
    test_boxes: int
    matched: int
    lost: int
    new: int
    iou: Spread
    class_agreement: float | None
    box_agreement: float | None  # the boxes that stayed (matched, same class) among every box
    abs_score_change: Spread
    changed_runs: list[str]


DecodedSummary = NoDecoderSummary | ClassifierSummary | DetectorSummary


def top_classes(scores: np.ndarray, k: int = TOP_K) -> list[int]:
    """The k highest-scoring class indices, highest first (ties: lowest index first, as argmax;
    NaN last): :func:`evalharness.core.ranking.stable_topk`."""
    top: list[int] = stable_topk(np.asarray(scores).ravel(), k).tolist()
    return top


def compare_classes(ref: np.ndarray, test: np.ndarray, k: int = TOP_K) -> dict[str, Any]:
    """One classifier answer against the reference's (real-valued score vectors of equal size)."""
    ref, test = np.asarray(ref, np.float64).ravel(), np.asarray(test, np.float64).ravel()
    k = min(k, ref.size)
    top_ref, top_test = top_classes(ref, k), top_classes(test, k)
    return {
        "ref_top1": top_ref[0],
        "test_top1": top_test[0],
        "test_top1_score": float(test[top_test[0]]),
        "agree": top_ref[0] == top_test[0],
        "topk_overlap": len(set(top_ref) & set(top_test)) / k,
        "ref_score": float(ref[top_ref[0]]),
        "test_score": float(test[top_ref[0]]),  # the test's score of the reference's top class
        "score_change": float(test[top_ref[0]] - ref[top_ref[0]]),
    }


def compare_boxes(ref: list[Any], test: list[Any], min_score: float, iou: float = 0.5) -> dict[str, Any]:
    """One detector answer against the reference's: rows ``[class, score, x, y, w, h]``."""
    anyclass_ref = [[0, r[1], *r[2:6], r[0]] for r in ref if r[1] >= min_score]
    anyclass_test = [[0, r[1], *r[2:6], r[0]] for r in test]
    pairs, lost, _ = match_detections(anyclass_ref, anyclass_test, iou)
    taken = {id(p[1]) for p in pairs}
    return {
        "ref_boxes": len(anyclass_ref),
        "test_boxes": sum(1 for r in anyclass_test if r[1] >= min_score),
        "matched": len(pairs),
        "lost": lost,
        "new": sum(1 for r in anyclass_test if r[1] >= min_score and id(r) not in taken),
        "ious": [float(p[2]) for p in pairs],
        "same_class": sum(1 for a, b, _ in pairs if a[6] == b[6]),
        "score_changes": [float(b[1] - a[1]) for a, b, _ in pairs],
    }


def _stats(values: list[float]) -> Spread:
    if not values:
        return {"mean": None, "min": None, "max": None}
    arr = np.asarray(values, dtype=np.float64)
    return {"mean": float(arr.mean()), "min": float(arr.min()), "max": float(arr.max())}


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


class DecodedScorer:
    """Aggregates per-run decoded comparisons; ``kind``: 'classifier', 'detector' or None (no decoder)."""

    LISTED = 10  # run ids whose decoded answer changed, listed in the metrics

    def __init__(self, kind: str | None, settings: DetectorSettings | None = None) -> None:
        self.kind = kind
        self.settings: DetectorSettings = {**(settings or {})}
        self.records: list[tuple[str, dict[str, Any]]] = []

    def add(self, run_id: str, record: dict[str, Any]) -> None:
        self.records.append((run_id, record))

    def result(self) -> DecodedSummary:
        if self.kind is None:
            return {"kind": "none", "note": NO_DECODER}
        rows = [r for _, r in self.records]
        if self.kind == "classifier":
            changed = [i for i, r in self.records if not r["agree"]]
            return {
                "kind": "classifier",
                "runs": len(rows),
                "top1_agree": len(rows) - len(changed),
                "top1_agreement": _rate(len(rows) - len(changed), len(rows)),
                "top5_overlap": _stats([r["topk_overlap"] for r in rows]),
                "abs_score_change": _stats([abs(r["score_change"]) for r in rows]),
                "changed_runs": changed[: self.LISTED],
                **self.settings,
            }
        ious = [v for r in rows for v in r["ious"]]
        matched = sum(r["matched"] for r in rows)
        changed = [i for i, r in self.records if r["lost"] or r["new"] or r["same_class"] < r["matched"]]
        same_class, new = sum(r["same_class"] for r in rows), sum(r["new"] for r in rows)
        return {
            "kind": "detector",
            "runs": len(rows),
            "runs_with_ref_boxes": sum(1 for r in rows if r["ref_boxes"]),
            "ref_boxes": sum(r["ref_boxes"] for r in rows),
            "test_boxes": sum(r["test_boxes"] for r in rows),
            "matched": matched,
            "lost": sum(r["lost"] for r in rows),
            "new": new,
            "iou": _stats(ious),
            "class_agreement": _rate(same_class, matched),
            # the boxes that stayed (matched, same class) among every box either side has
            "box_agreement": _rate(same_class, sum(r["ref_boxes"] for r in rows) + new),
            "abs_score_change": _stats([abs(v) for r in rows for v in r["score_changes"]]),
            "changed_runs": changed[: self.LISTED],
            **self.settings,
        }


def failed_checks(decoded: Mapping[str, Any], min_agreement: float) -> list[str]:
    """A detector's decoded check: fewer than ``min_agreement`` of the boxes stayed (same box, same
    class). A classifier's decoded answers inform only: on random inputs near-tied scores flip top-1
    classes that a cosine check on the score vector judges better."""
    agreement = decoded.get("box_agreement")
    if decoded.get("kind") != "detector" or agreement is None or agreement >= min_agreement:
        return []
    return [f"decoded: box agreement {agreement:.1%} < {min_agreement:.0%}"]


def _fmt(value: Any, spec: str = ".3g") -> str:
    return "n/a" if value is None else format(value, spec)


def summary(decoded: dict[str, Any] | None) -> str:
    """One line for results.txt and report diff: what the decoded comparison found."""
    if not decoded:
        return "Decoded: not recorded (run made before decoded comparison)"
    kind = decoded["kind"]
    if kind == "classifier":
        return (
            f"Decoded (classifier): top-1 agreement {decoded['top1_agree']}/{decoded['runs']} "
            f"({_fmt(decoded['top1_agreement'], '.1%')}), top-5 overlap mean "
            f"{_fmt(decoded['top5_overlap']['mean'])} min {_fmt(decoded['top5_overlap']['min'])}, "
            f"|score change| of the reference's top-1 mean {_fmt(decoded['abs_score_change']['mean'])} "
            f"max {_fmt(decoded['abs_score_change']['max'])}"
        )
    if kind == "detector":
        return (
            f"Decoded (detector, reference boxes with score >= {decoded.get('min_score')}, any-class "
            f"IoU >= {decoded.get('iou_threshold')}): {decoded['ref_boxes']} reference boxes in "
            f"{decoded['runs_with_ref_boxes']} of {decoded['runs']} runs, {decoded['matched']} matched "
            f"(IoU mean {_fmt(decoded['iou']['mean'])} min {_fmt(decoded['iou']['min'])}), "
            f"{decoded['lost']} lost, {decoded['new']} new, box agreement "
            f"{_fmt(decoded.get('box_agreement'), '.1%')}, class agreement "
            f"{_fmt(decoded['class_agreement'], '.1%')}, |score change| mean "
            f"{_fmt(decoded['abs_score_change']['mean'])} max {_fmt(decoded['abs_score_change']['max'])}"
        )
    return f"Decoded: {decoded.get('note', NO_DECODER)}"


def boxes_agree(ref: list[Any], test: list[Any], min_score: float, iou: float = 0.5) -> bool:
    """Whether two detectors' answers are the same the way ``report diff`` counts an unchanged image:
    every detection with score >= ``min_score`` matched one-to-one to a same-class one at IoU >= ``iou``."""
    kept_ref = [r for r in ref if r[1] >= min_score]
    kept_test = [r for r in test if r[1] >= min_score]
    _, lost, new = match_detections(kept_ref, kept_test, iou)
    return not lost and not new
