"""COCO box AP as TFLite's ``coco_object_detection`` evaluation tool computes it, in numpy.

Numbers published with TFLite models (and that tool's README) come from this definition, not from
pycocotools, so a harness that reproduces them must score the same way. Read from the tool's sources
(tensorflow/lite/tools/evaluation): stages/utils/image_metrics.cc (matching, 101-point AP),
stages/object_detection_average_precision_stage.cc (thresholds, class mean) and
tasks/coco_object_detection/preprocess_coco_minival.py (which ground truth it sees).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, TypedDict

import numpy as np

from evalharness.data.coco_annotations import check_annotations
from evalharness.stats.boxes import iou_matrix
from evalharness.stats.coco_eval import evaluated_subset


class ToolClassAP(TypedDict):
    """One category of the tool's ``per_class``: AP and AP50, None for a category with neither
    ground truth nor detections."""

    name: str
    AP: float | None
    AP50: float | None
    num_gt: int
    num_detections: int


class ToolAP(TypedDict):
    """A detection run's ``metrics.tflite_tool``: AP as the TFLite tool defines it."""

    mode: str  # "tflite_tool"
    AP: float | None
    AP_per_iou: dict[str, float | None]  # "0.50".."0.95"
    per_class: dict[str, ToolClassAP]  # by category id
    num_detections: int
    num_images: int


IOU_THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))  # the tool's default 0.5:0.05:0.95
NUM_RECALL_POINTS = 100  # ObjectDetectionAveragePrecisionParams.num_recall_points default: 101 levels


def tflite_tool_ap(
    gt: dict[str, Any],
    detections: list[dict[str, Any]],
    image_ids: list[int] | None = None,
    *,
    drop_out_of_image: bool = True,
) -> ToolAP:
    """AP over IoU 0.50:0.95 as the TFLite tool defines it; differs from pycocotools as follows.

    - Crowd boxes are ordinary ground truth: the preprocessing script never reads ``iscrowd``, so a
      crowd box must be matched (IoU >= t) like any other, counts in recall, and a detection inside a
      crowd region is a false positive instead of being ignored.
    - Ground-truth boxes reaching past the image's width/height are dropped (that script skips
      them); ``drop_out_of_image=False`` keeps them.
    - No area ranges and no maxDets cap: every detection on a scored image counts.
    - The class mean covers every category with ground truth OR detections on the scored images; a
      category with detections but no ground truth counts as AP 0 (pycocotools leaves it out). A
      category with neither is skipped (``per_class`` AP None).
    - A PR point per detection, precision = TP/detections exactly (no epsilon); the 101 recall levels
      r = 0, .01, ..., 1 take the best precision at recall >= r, compared in exact integers (the tool
      avoids floats for r for the same reason; pycocotools' float levels drop e.g. r=.57 at 57/100).
    - A detection takes the unmatched ground truth of its class and image with the highest IoU (first
      one on ties) and is a true positive if that IoU >= t. Equal scores keep input order (the tool's
      std::sort leaves ties unspecified). IoU in float64 pixels, not the tool's float32 normalized
      boxes, which changes nothing but rounding at a threshold.

    ``AP_per_iou`` maps "0.50".."0.95" to the class mean at that IoU; ``AP`` is their mean; both are
    None when no category is scored.
    """
    check_annotations(gt)
    ids, dets = evaluated_subset(gt, detections, image_ids)
    chosen = set(ids)
    images = {image["id"]: image for image in gt["images"]}
    kept = (ann for ann in gt["annotations"] if ann["image_id"] in chosen)  # one dict at a time
    if drop_out_of_image:
        kept = (ann for ann in kept if not _outside(ann["bbox"], images[ann["image_id"]]))
    gt_boxes: dict[str, Any] = defaultdict(list)  # category -> [(image_id, xyxy)]
    for ann in kept:
        gt_boxes[ann["category_id"]].append((ann["image_id"], _xyxy(ann["bbox"])))
    det_boxes: dict[str, Any] = defaultdict(list)  # category -> [(image_id, score, xyxy)]
    for det in dets:
        det_boxes[det["category_id"]].append((det["image_id"], float(det["score"]), _xyxy(det["bbox"])))

    thresholds = np.asarray(IOU_THRESHOLDS)
    per_class: dict[str, ToolClassAP] = {}
    counted = []
    for category in sorted(gt["categories"], key=lambda c: c["id"]):
        cat_id = category["id"]
        truths, preds = gt_boxes.get(cat_id, []), det_boxes.get(cat_id, [])
        ap = _class_ap(truths, preds, thresholds) if truths or preds else None
        if ap is not None:
            counted.append(ap)
        per_class[str(cat_id)] = {
            "name": category["name"],
            "AP": None if ap is None else float(ap.mean()),
            "AP50": None if ap is None else float(ap[0]),
            "num_gt": len(truths),
            "num_detections": len(preds),
        }
    per_iou: Any = np.mean(counted, axis=0) if counted else [None] * len(thresholds)
    return {
        "mode": "tflite_tool",
        "AP": float(np.mean(per_iou)) if counted else None,
        "AP_per_iou": {
            f"{t:.2f}": None if v is None else float(v) for t, v in zip(IOU_THRESHOLDS, per_iou, strict=True)
        },
        "per_class": per_class,
        "num_detections": len(dets),
        "num_images": len(ids),
    }


def _xyxy(bbox: Any) -> np.ndarray:
    x, y, w, h = (float(v) for v in bbox)
    return np.array([x, y, x + w, y + h])


def _outside(bbox: Any, image: dict[str, Any]) -> bool:
    """preprocess_coco_minival.py's test: a box edge beyond the image's width or height."""
    width, height = image.get("width"), image.get("height")
    if width is None or height is None:
        return False
    x, y, w, h = bbox
    return bool(y > height or x > width or y + h > height or x + w > width)


def _class_ap(truths: list[Any], preds: list[Any], thresholds: np.ndarray) -> np.ndarray:
    """AP of one category at each threshold; 0 where it has no ground truth (the tool's NaN -> 0)."""
    if not truths:
        return np.zeros(len(thresholds))
    order = np.argsort([-score for _, score, _ in preds], kind="stable")
    preds = [preds[i] for i in order]
    truth_by_image: dict[str, Any] = defaultdict(list)
    for image_id, box in truths:
        truth_by_image[image_id].append(box)
    pred_by_image: dict[str, Any] = defaultdict(list)  # image -> ranks, in score order
    for rank, (image_id, _, _) in enumerate(preds):
        pred_by_image[image_id].append(rank)
    hits = np.zeros((len(thresholds), len(preds)), dtype=bool)
    for image_id, ranks in pred_by_image.items():
        if image_id in truth_by_image:  # images match independently; score order within each is kept
            ious = iou_matrix(np.array([preds[r][2] for r in ranks]), np.array(truth_by_image[image_id]))
            hits[:, ranks] = _greedy_match(ious, thresholds)
    correct = np.cumsum(hits, axis=1)
    precision = correct / np.arange(1, len(preds) + 1)
    envelope = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]  # best precision at recall >= r
    levels = np.arange(NUM_RECALL_POINTS + 1) * len(truths)
    ap = np.zeros(len(thresholds))
    for t in range(len(thresholds)):
        first = np.searchsorted(correct[t] * NUM_RECALL_POINTS, levels, side="left")  # recall >= level
        reached = first < len(preds)
        ap[t] = envelope[t, first[reached]].sum() / len(levels)
    return ap


def _greedy_match(ious: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """[T, D] true-positive flags: each detection, best first, takes its best still-free truth."""
    free = np.ones((len(thresholds), ious.shape[1]), dtype=bool)
    hits = np.zeros((len(thresholds), ious.shape[0]), dtype=bool)
    rows = np.arange(len(thresholds))
    for d, row in enumerate(ious):
        candidates = np.where(free, row[None, :], -np.inf)
        best = np.argmax(candidates, axis=1)
        hit = candidates[rows, best] >= thresholds
        hits[:, d] = hit
        free[rows[hit], best[hit]] = False
    return hits
