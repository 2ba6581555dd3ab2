"""Where a detector's AP went, for one run: per-class AP/recall, PR curves, the F1-optimal score
threshold and a confusion matrix with a background row and column.

AP is one number over thousands of boxes; a deployment ships one score threshold and cares which
classes and which confusions cost it. Everything here is read from what pycocotools computed for
the run's own AP (``eval["precision"]``, ``eval["recall"]`` and the per-image matching of
``evaluate()``), so the table cannot disagree with the 12 stats beside it. The confusion matrix is
the one figure pycocotools has no notion of (it matches within a class only); it is made here, at
the same IoU threshold and the F1-optimal score threshold, both recorded.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from evalharness.data.annotation_table import rows_by_image, rows_of
from evalharness.stats.boxes import iou_matrix, xyxy
from evalharness.stats.tide import TideBreakdown

if TYPE_CHECKING:
    from evalharness.stats.coco_eval import ScoredBoxes

IOU = 0.5  # the IoU of the F1 threshold, the confusion matrix and TIDE (index 0 of 0.50:0.05:0.95)
BACKGROUND = 0  # the confusion matrix's background "category" (no COCO category has id 0)
TIDE_OFF = "turned off (task.tide=false)"

# The all-class precision at the 101 recall thresholds, at IoU .50 and averaged over .50:.95.
PRCurves = TypedDict("PRCurves", {"recall": str, "IoU=0.50": list[float], "IoU=0.50:0.95": list[float]})
# One category's precision at the 101 recall thresholds (``pr_curves.json``).
ClassCurve = TypedDict("ClassCurve", {"name": str, "IoU=0.50": list[float], "IoU=0.50:0.95": list[float]})


class ClassCurves(TypedDict):
    """``pr_curves.json`` of a run: the recall thresholds and, by category id, its curves."""

    recall: list[float]
    classes: dict[str, ClassCurve]


class F1Threshold(TypedDict):
    """The F1-optimal score threshold at IoU .50 and P, R there (None without detections or truth)."""

    iou: float
    num_gt: int
    score_threshold: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    detections_kept: int


class Confusion(TypedDict):
    """(truth category, detected category, count) cells, ``background`` standing for no object."""

    iou: float
    score_threshold: float | None
    background: int
    cells: list[list[int]]
    ignored_on_crowds: int


class _DetectionAnalysisKeys(TypedDict):
    iou_threshold: float
    per_class: list[dict[str, Any]]
    pr_curves: PRCurves
    f1: F1Threshold
    confusion: Confusion
    tide: TideBreakdown


class DetectionAnalysis(_DetectionAnalysisKeys, total=False):
    """``metrics.analysis`` of a detection run (:func:`analyse`); a seg model's also has
    ``tide_segm``, TIDE's breakdown of its masks (by mask IoU)."""

    tide_segm: TideBreakdown


def per_class_table(
    per_class: dict[Any, Any], recall: np.ndarray, cat_ids: list[Any], matching: Any
) -> list[dict[str, Any]]:
    """One row per category with ground truth: AP, AP50 (the run's ``per_class``, read from
    pycocotools' precision array), recall at maxDets=100 (mean over IoU .50:.95, and at .50, from
    ``eval["recall"]``), the annotation and detection counts; highest AP first."""
    detections = Counter(int(cat_ids[k]) for k in matching.det_cat.tolist())
    rows = []
    for k, cat in enumerate(cat_ids):
        entry = per_class.get(str(int(cat))) or {}
        if entry.get("AP") is None:
            continue  # no non-crowd ground truth on the scored images: pycocotools' -1
        curve = recall[:, k, 0, -1]
        valid = curve[curve > -1]
        rows.append(
            {
                "category_id": int(cat),
                "name": entry["name"],
                "AP": entry["AP"],
                "AP50": entry["AP50"],
                "recall": float(valid.mean()) if valid.size else None,
                "recall50": float(curve[0]) if curve[0] > -1 else None,
                "num_gt": entry["num_gt"],
                "num_detections": detections[int(cat)],
            }
        )
    rows.sort(key=lambda r: (-r["AP"], r["category_id"]))
    return rows


def pr_curves(precision: np.ndarray) -> PRCurves:
    """The all-class precision at the 101 recall thresholds (area all, maxDets 100), at IoU .50 and
    averaged over .50:.95: the mean over the categories pycocotools averages for AP (those with
    ground truth), so the mean of each curve is AP50 and AP."""

    def curve(curves: np.ndarray) -> list[float]:
        values = curves[:, :, :, 0, -1]  # (T, R, K)
        valid = (values > -1).all(axis=(0, 1))
        return [round(float(v), 6) for v in values[:, :, valid].mean(axis=(0, 2))] if valid.any() else []

    return {
        "recall": "0.00:0.01:1.00 (pycocotools' 101 recall thresholds)",
        "IoU=0.50": curve(precision[0:1]),
        "IoU=0.50:0.95": curve(precision),
    }


def per_class_curves(precision: np.ndarray, cat_ids: list[Any], names: dict[int, str]) -> ClassCurves:
    """Each category's precision at the 101 recall thresholds, at IoU .50 and averaged over
    .50:.95 (``pr_curves.json`` of a run; categories without ground truth left out)."""
    classes: dict[str, ClassCurve] = {}
    for k, cat in enumerate(cat_ids):
        values = precision[:, :, k, 0, -1]  # (T, R)
        if (values <= -1).any():
            continue
        classes[str(int(cat))] = {
            "name": names[int(cat)],
            "IoU=0.50": [round(float(v), 6) for v in values[0]],
            "IoU=0.50:0.95": [round(float(v), 6) for v in values.mean(axis=0)],
        }
    return {"recall": [round(r / 100, 2) for r in range(101)], "classes": classes}


def f1_threshold(matching: Any) -> F1Threshold:
    """The score threshold that maximises F1 over all classes at IoU .50, with P and R there.

    pycocotools matches greedily in score order, so the matches of the detections scoring >= s do
    not depend on the lower ones: the precision and recall of "keep score >= s" are read off the
    run's own matching (area all, maxDets 100 per image and category; detections matched to a crowd
    box are neither true nor false positives)."""
    counted = ~matching.ignored[0]
    scores = matching.det_score[counted]
    hit = matching.matched[0][counted]
    num_gt = int(matching.gt_count.sum())
    out: F1Threshold = {
        "iou": IOU,
        "num_gt": num_gt,
        "score_threshold": None,
        "precision": None,
        "recall": None,
        "f1": None,
        "detections_kept": 0,
    }
    if scores.size == 0 or num_gt == 0:
        return out
    order = np.argsort(-scores, kind="mergesort")
    scores, hit = scores[order], hit[order]
    tp = np.cumsum(hit)
    kept = np.arange(1, scores.size + 1)
    last = np.flatnonzero(np.append(scores[1:] != scores[:-1], True))  # end of each tie group
    precision, recall = tp[last] / kept[last], tp[last] / num_gt
    f1 = np.where(tp[last] > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-300), 0.0)
    best = int(np.argmax(f1))  # the highest threshold on ties (scores descend)
    at = last[best]
    out.update(
        {
            "score_threshold": float(scores[at]),
            "precision": float(precision[best]),
            "recall": float(recall[best]),
            "f1": float(f1[best]),
            "detections_kept": int(kept[at]),
        }
    )
    return out


def confusion(
    gt: dict[str, Any], blocks: Any, image_ids: list[int], score_threshold: float | None
) -> Confusion:
    """Counts of (ground-truth category, detected category) at IoU >= .50 among the detections
    scoring >= ``score_threshold``, with ``BACKGROUND`` (0) for a detection on no object (row) and an
    object no detection found (column).

    Per image, detections in descending score take a free non-crowd box: one of their own class
    first (highest IoU >= .50; the diagonal), else the free box of any class with the highest IoU
    >= .50 (a confusion). Left over, a detection covering a crowd box (IoU as pycocotools computes it
    for crowds: over the detection's area) >= .50 is ignored, as COCO ignores it; any other is
    background. ``blocks()``: (image_id, (n, 6) array of category, score, x, y, w, h) per image."""
    annotations = gt["annotations"]
    by_image = rows_by_image(annotations)  # row numbers: an image's dicts made as it is counted
    detections = dict(blocks())
    cells: Counter[Any] = Counter()
    ignored = 0
    threshold = -np.inf if score_threshold is None else score_threshold
    for image_id in sorted(set(image_ids)):
        rows = np.asarray(detections.get(image_id, ()), dtype=np.float64).reshape(-1, 6)
        rows = rows[np.argsort(-rows[:, 1], kind="mergesort")]
        rows = rows[rows[:, 1] >= threshold]
        anns = rows_of(annotations, by_image.get(image_id, ()))
        objects = [a for a in anns if not a.get("iscrowd")]
        crowds = [a for a in anns if a.get("iscrowd")]
        gt_cat = np.array([a["category_id"] for a in objects], dtype=np.int64)
        free = np.ones(len(objects), dtype=bool)
        iou = iou_matrix(xyxy(rows[:, 2:6]), xyxy([a["bbox"] for a in objects])) if objects else None
        crowd_cover = _crowd_cover(rows[:, 2:6], crowds)
        for d, row in enumerate(rows):
            det_cat = int(row[0])
            match = _best(iou, d, free & (gt_cat == det_cat)) if iou is not None else None
            if match is None and iou is not None:
                match = _best(iou, d, free)
            if match is not None:
                free[match] = False
                cells[(int(gt_cat[match]), det_cat)] += 1
            elif crowd_cover is not None and crowd_cover[d] >= IOU:
                ignored += 1
            else:
                cells[(BACKGROUND, det_cat)] += 1
        for k in np.flatnonzero(free):
            cells[(int(gt_cat[k]), BACKGROUND)] += 1
    return {
        "iou": IOU,
        "score_threshold": score_threshold,
        "background": BACKGROUND,
        "cells": [[g, p, n] for (g, p), n in sorted(cells.items())],
        "ignored_on_crowds": ignored,
    }


def _best(iou: np.ndarray, d: int, allowed: np.ndarray) -> int | None:
    if not allowed.any():
        return None
    values = np.where(allowed, iou[d], -1.0)
    k = int(np.argmax(values))
    return k if values[k] >= IOU else None


def _crowd_cover(boxes: np.ndarray, crowds: list[dict[str, Any]]) -> np.ndarray | None:
    """Per detection, the largest share of its area inside a crowd box (pycocotools' crowd IoU)."""
    if not crowds or boxes.size == 0:
        return None
    det = xyxy(boxes)
    crowd = xyxy([c["bbox"] for c in crowds])
    w = np.clip(
        np.minimum(det[:, None, 2], crowd[None, :, 2]) - np.maximum(det[:, None, 0], crowd[None, :, 0]),
        0,
        None,
    )
    h = np.clip(
        np.minimum(det[:, None, 3], crowd[None, :, 3]) - np.maximum(det[:, None, 1], crowd[None, :, 1]),
        0,
        None,
    )
    area = np.maximum(boxes[:, 2] * boxes[:, 3], 1e-300)
    cover: np.ndarray = (w * h / area[:, None]).max(axis=1)
    return cover


def confusion_pairs(
    cells: list[Any], names: dict[int, str], limit: int | None = None
) -> list[dict[str, Any]]:
    """Off-diagonal cells, largest first: what was taken for what (background included)."""
    rows = [
        {
            "truth": g,
            "predicted": p,
            "truth_name": names.get(g, "background"),
            "predicted_name": names.get(p, "background"),
            "count": n,
        }
        for g, p, n in cells
        if g != p
    ]
    rows.sort(key=lambda r: (-r["count"], r["truth"], r["predicted"]))
    return rows[:limit] if limit else rows


def _tide(tide: Any, gt: dict[str, Any], blocks: Any, image_ids: list[int]) -> TideBreakdown:
    from evalharness.stats.tide import absent, tide_breakdown

    if callable(tide):
        done: TideBreakdown = tide()
        return done
    return tide_breakdown(gt, blocks, image_ids) if tide else absent(TIDE_OFF)


def analyse(
    gt: dict[str, Any], scored: ScoredBoxes, blocks: Any, image_ids: list[int], tide: Any = True
) -> DetectionAnalysis:
    """The whole per-run analysis (``metrics.analysis`` of a detection run) from ``evaluate_bbox(...,
    analysis=True)``'s result and ``blocks()``, the run's per-image detections (see :func:`confusion`).
    ``tide``: compute TIDE here (True), not at all (False), or the function that waits for the
    breakdown started beside the scoring (:func:`evalharness.stats.tide.tide_in_background`)."""
    acc = scored["accumulated"]
    f1 = f1_threshold(acc["matching"])
    return {
        "iou_threshold": IOU,
        "per_class": per_class_table(scored["per_class"], acc["recall"], acc["cat_ids"], acc["matching"]),
        "pr_curves": pr_curves(acc["precision"]),
        "f1": f1,
        "confusion": confusion(gt, blocks, image_ids, f1["score_threshold"]),
        "tide": _tide(tide, gt, blocks, image_ids),
    }
