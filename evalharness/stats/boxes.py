"""Detection runs compared box by box and class by class.

AP summarises thousands of boxes in one number; when a delegate changes it, the question is which
boxes moved. Per image and category, A's detections (highest score first) are matched greedily to
the unmatched B detection of highest IoU, kept when IoU >= ``iou``. Unmatched boxes and the IoU of
matched ones show whether B lost, gained or shifted detections. A seg or pose run's detections are
matched the same way by what they are (:data:`BOX` here, mask IoU and OKS in
:mod:`evalharness.stats.shape_overlap`): one matching, its measure given.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypedDict

import numpy as np

from evalharness.core.numbers import delta
from evalharness.stats.paired import pair_by_id


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU matrix [len(a), len(b)] of x1, y1, x2, y2 boxes: the one IoU of evalharness (NMS, box
    matching, the TFLite tool's AP). A box with x2 < x1 or y2 < y1 has no area; an empty union gives
    0, as the tool's Box2D::IoU does. Computed in place, column blocks at a time by the callers that
    need bounded memory (NMS)."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    ax1, ay1, ax2, ay2 = (np.ascontiguousarray(a[:, k])[:, None] for k in range(4))
    bx1, by1, bx2, by2 = (np.ascontiguousarray(b[:, k])[None, :] for k in range(4))
    inter = np.minimum(ax2, bx2)
    inter -= np.maximum(ax1, bx1)
    np.maximum(inter, 0, out=inter)
    ih = np.minimum(ay2, by2)
    ih -= np.maximum(ay1, by1)
    np.maximum(ih, 0, out=ih)
    inter *= ih
    area_a = np.maximum(ax2 - ax1, 0) * np.maximum(ay2 - ay1, 0)
    area_b = np.maximum(bx2 - bx1, 0) * np.maximum(by2 - by1, 0)
    union = area_a + area_b
    union -= inter
    empty = union <= 0
    union[empty] = 1
    inter /= union
    inter[empty] = 0
    return inter


def xyxy(boxes_xywh: Any) -> np.ndarray:
    """COCO x, y, w, h boxes as x1, y1, x2, y2 (float64)."""
    boxes = np.asarray(boxes_xywh, dtype=np.float64).reshape(-1, 4)
    return np.concatenate([boxes[:, :2], boxes[:, :2] + boxes[:, 2:]], axis=1)


def iou_xywh(a: list[float], b: list[float]) -> float:
    return float(iou_matrix(xyxy([a]), xyxy([b]))[0, 0])


class Overlap(NamedTuple):
    """What two runs' detections of one object are compared by: their boxes, or the shape a seg /
    pose record keeps per detection (``field``: ``masks``, ``keypoints``), and how."""

    field: str | None  # the record field of one shape per detection; None: the box itself
    measure: str  # its name in tables: "IoU", "mask IoU", "OKS"
    things: str  # what is matched, in tables: "boxes", "masks", "poses"
    # (A's row, B's free rows of its category) -> their overlaps; a row is [category_id, score, x, y,
    # w, h] and, with a ``field``, its shape as :attr:`shape` made it
    between: Callable[[list[Any], list[list[Any]]], list[float]]
    # (record, its i-th shape) -> what :attr:`between` reads (a mask's RLE needs the record's size)
    shape: Callable[[Mapping[str, Any], Any], Any] = lambda record, value: value

    def rows(self, record: Mapping[str, Any], min_score: float) -> list[list[Any]]:
        """The record's detections scored ``min_score`` or more, each with its shape appended."""
        detections = record.get("detections") or []
        if self.field is None:
            return [d for d in detections if d[1] >= min_score]
        shapes = record.get(self.field) or []
        paired = zip(detections, shapes, strict=True)
        return [[*d, self.shape(record, s)] for d, s in paired if d[1] >= min_score]


def _box_ious(row: list[Any], candidates: list[list[Any]]) -> list[float]:
    ious: list[float] = iou_matrix(xyxy([row[2:6]]), xyxy([c[2:6] for c in candidates]))[0].tolist()
    return ious


BOX = Overlap(None, "IoU", "boxes", _box_ious)


def match_detections(
    dets_a: list[Any], dets_b: list[Any], iou: float = 0.5, overlap: Overlap = BOX
) -> tuple[list[tuple[Any, ...]], int, int]:
    """Greedy same-category matching of ``[category_id, score, x, y, w, h]`` rows.

    Returns ((A row, B row, IoU) pairs, unmatched A count, unmatched B count). A's rows go in
    descending score (stable), each taking the free B row of its category with the highest IoU
    (first on ties); with another ``overlap`` (a seg run's masks, a pose run's keypoints), the
    highest of that measure, kept when at least ``iou``.
    """
    free_b: dict[str, Any] = defaultdict(list)
    for row in dets_b:
        free_b[row[0]].append(row)
    pairs = []
    for row in sorted(dets_a, key=lambda r: -r[1]):
        candidates = free_b[row[0]]
        best, best_iou = None, iou
        if candidates:
            for index, value in enumerate(overlap.between(row, candidates)):
                if value >= best_iou and (best is None or value > best_iou):
                    best, best_iou = index, value
        if best is not None:
            pairs.append((row, candidates.pop(best), best_iou))
    return pairs, len(dets_a) - len(pairs), len(dets_b) - len(pairs)


class DetectionDiff(TypedDict):
    """Two detection runs' boxes matched image by image (:func:`detection_diff`)."""

    paired_images: int
    only_in_a: int
    only_in_b: int
    iou_threshold: float
    min_score: float
    detections: dict[str, int]  # a, b, matched, only_a, only_b: summed over the images
    unmatched: int
    images_changed: int
    mean_iou: float | None
    mean_abs_score_delta: float | None
    changed_images: list[dict[str, Any]]  # the per-image rows with a box only on one side, most first


def detection_diff(
    preds_a: list[dict[str, Any]],
    preds_b: list[dict[str, Any]],
    iou: float = 0.5,
    min_score: float = 0.0,
    overlap: Overlap = BOX,
) -> DetectionDiff:
    """Per-image matched/unmatched counts, mean IoU and score shift of matched detections (by
    ``overlap``: ``mean_iou`` is then the mean mask IoU or OKS)."""
    pairs, only_a, only_b = pair_by_id(preds_a, preds_b)
    images, ious, score_shift = [], [], []
    totals = {"a": 0, "b": 0, "matched": 0, "only_a": 0, "only_b": 0}
    for a, b in pairs:
        da, db = overlap.rows(a, min_score), overlap.rows(b, min_score)
        matched, lost, gained = match_detections(da, db, iou, overlap)
        image_ious = [m[2] for m in matched]
        ious += image_ious
        score_shift += [abs(m[1][1] - m[0][1]) for m in matched]
        row = {
            "id": a["id"],
            "a": len(da),
            "b": len(db),
            "matched": len(matched),
            "only_a": lost,
            "only_b": gained,
            "mean_iou": _mean(image_ious),
        }
        for key in totals:
            totals[key] += row[key]
        images.append(row)
    changed = [r for r in images if r["only_a"] or r["only_b"]]
    changed.sort(key=lambda r: (-(r["only_a"] + r["only_b"]), r["id"]))
    return {
        "paired_images": len(pairs),
        "only_in_a": only_a,
        "only_in_b": only_b,
        "iou_threshold": iou,
        "min_score": min_score,
        "detections": totals,
        "unmatched": totals["only_a"] + totals["only_b"],
        "images_changed": len(changed),
        "mean_iou": _mean(ious),
        "mean_abs_score_delta": _mean(score_shift),
        "changed_images": changed,
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def per_class_deltas(per_class_a: dict[str, Any], per_class_b: dict[str, Any]) -> list[dict[str, Any]]:
    """AP and AP50 per category, largest |ΔAP| first; categories with AP in neither run left out."""
    rows = []
    for cat in set(per_class_a) | set(per_class_b):
        ca, cb = per_class_a.get(cat) or {}, per_class_b.get(cat) or {}
        if ca.get("AP") is None and cb.get("AP") is None:
            continue
        rows.append(
            {
                "category_id": int(cat),
                "name": ca.get("name") or cb.get("name"),
                "a": ca.get("AP"),
                "b": cb.get("AP"),
                "delta": delta(ca.get("AP"), cb.get("AP")),
                "a_AP50": ca.get("AP50"),
                "b_AP50": cb.get("AP50"),
                "num_gt": ca.get("num_gt", cb.get("num_gt")),
            }
        )
    rows.sort(key=lambda r: (r["delta"] is None, -abs(r["delta"] or 0.0), r["category_id"]))
    return rows
