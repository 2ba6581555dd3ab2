"""COCO instance-mask and person-keypoint metrics, scored by pycocotools (``iouType='segm'`` and
``'keypoints'``), beside the box stats every seg / pose model also has.

``segm``: the 12 stats of :data:`~evalharness.stats.coco_eval.COCO_STAT_NAMES` prefixed ``segm_``,
against the instances JSON's polygons and crowd RLEs (pycocotools converts them with each image's
size). ``keypoints``: the 10 stats COCO defines for them (``maxDets=20``, no small area), prefixed
``keypoints_``, by OKS with COCO's per-keypoint sigmas and each ground-truth annotation's ``area``.
``task.backend=faster_coco_eval`` scores them too (the same stats). Results carry only the shape
(``segmentation`` or ``keypoints``), not the box: pycocotools' loadRes then takes a detection's area
from its mask, or from its keypoints' extent, as COCO's own results files do. Per-class AP and the
image bootstrap reuse the box machinery unchanged: pycocotools' ``evalImgs`` has the same layout
whatever the iouType (:mod:`evalharness.stats.coco_bootstrap`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalharness.core.errors import DataError
from evalharness.data.coco_annotations import finite_keypoints
from evalharness.data.coco_rle import segmentations_problem
from evalharness.stats.coco_eval import (
    COCO_STAT_NAMES,
    EVALUATORS,
    _per_class,
    format_summary,
    resolved_backend,
)

if TYPE_CHECKING:  # pycocotools is imported when something is scored
    from evalharness.stats.coco_chunks import HeldRows
    from evalharness.stats.coco_mask_overlaps import MaskOverlaps

KEYPOINT_STATS = ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")
_KEYPOINT_ROWS = tuple(
    (kind, iou, area, 20)
    for kind in ("AP", "AR")
    for iou, area in (("0.50:0.95", "all"), ("0.50", "all"), ("0.75", "all"), ("0.50:0.95", "medium"),
                      ("0.50:0.95", "large"))
)  # fmt: skip
STAT_NAMES = {"segm": COCO_STAT_NAMES, "keypoints": KEYPOINT_STATS}
PREFIX = {"segm": "segm_", "keypoints": "keypoints_"}


COCO_KEYPOINTS = 17  # pycocotools' OKS has a sigma for each of COCO's 17 person keypoints, no other


def check_keypoint_ground_truth(gt: dict[str, Any], source: str) -> None:
    """A pose model is scored against a ``person_keypoints_*.json``: refuse ground truth whose
    annotations hold no ``keypoints`` (an instances JSON), or another count than COCO's 17 (a YOLO
    layout's ``kpt_shape``: pycocotools would fail after the run), naming ``source``, instead of a
    silent 0."""
    if not any("keypoints" in ann for ann in gt["annotations"]):
        raise DataError(
            f"{source} has no 'keypoints' in its annotations, so a pose model's keypoints cannot be "
            "scored; give dataset.annotations=<person_keypoints_*.json> (COCO's keypoint annotations)"
        )
    counts = (0, 3 * COCO_KEYPOINTS)
    other = next((a for a in gt["annotations"] if len(a.get("keypoints", ())) not in counts), None)
    if other is not None:
        raise DataError(
            f"{source}: annotation {other.get('id')} has {len(other['keypoints']) / 3:g} keypoints; "
            f"pycocotools' OKS scores COCO's {COCO_KEYPOINTS} person keypoints (its sigmas), no other count"
        )
    given = (a for a in gt["annotations"] if "keypoints" in a)
    bad = next((a for a in given if not finite_keypoints(a["keypoints"])), None)
    if bad is not None:  # a NaN would make every OKS with it NaN: a person never matched, silently
        raise DataError(
            f"{source}: annotation {bad.get('id')} has keypoints that are not finite numbers; "
            "fix or drop that annotation"
        )


def check_keypoint_count(count: int, model: str) -> None:
    """A pose model's keypoints are scored by COCO's 17 sigmas: refuse another count before any image."""
    if count != COCO_KEYPOINTS:
        raise DataError(
            f"{model}: its pose head gives {count} keypoints; pycocotools' OKS scores COCO's "
            f"{COCO_KEYPOINTS} person keypoints (its sigmas), no other count"
        )


def check_mask_ground_truth(gt: dict[str, Any], source: str) -> None:
    """A seg model's masks are scored against each annotation's outline: refuse ground truth with an
    annotation that has none (a YOLO layout of box lines, a JSON of boxes), naming ``source``,
    instead of pycocotools failing after the whole run."""
    bare = sum("segmentation" not in ann for ann in gt["annotations"])
    if bare:
        raise DataError(
            f"{source}: {bare} of {len(gt['annotations'])} annotations have no 'segmentation', so a seg "
            "model's masks cannot be scored; give COCO's instances JSON (its polygons), or a YOLO "
            "layout of segment lines ('class x1 y1 x2 y2 ...')"
        )
    found = segmentations_problem(gt)  # pycocotools' C rasterises and decodes them unchecked
    if found:
        index, problem = found
        raise DataError(
            f"{source}: annotation {gt['annotations'][index].get('id')} has a segmentation pycocotools "
            f"cannot read: {problem}; fix or drop that annotation"
        )


def evaluate_shapes(
    gt: dict[str, Any],
    results: list[dict[str, Any]] | MaskOverlaps | HeldRows,
    iou_type: str,
    image_ids: list[int],
    keep_matching: bool,
    backend: str = "pycocotools",
) -> dict[str, Any]:
    """``{stats, per_class, summary, num_detections[, matching]}`` of ``results`` (COCO result dicts
    with ``segmentation`` or ``keypoints``, held in a list or a store giving them a chunk of images
    at a time (:class:`~evalharness.stats.coco_chunks.HeldRows`), or a seg run's
    :class:`MaskOverlaps`: pycocotools' own scoring of the masks it was given) on ``image_ids``,
    scored by ``backend`` (pycocotools, or faster-coco-eval: the same stats; its matching is not
    kept, so pycocotools' ``evaluate()`` makes the bootstrap's, as for boxes)."""
    if iou_type == "keypoints":
        check_keypoint_ground_truth(gt, "the ground truth")
    else:
        check_mask_ground_truth(gt, "the ground truth")
    from evalharness.stats.coco_mask_overlaps import MaskOverlaps, score_overlaps

    ids = sorted(set(image_ids))
    if isinstance(results, MaskOverlaps):  # a seg run's masks as areas and IoUs: pycocotools' scoring
        stats, precision, cat_ids, matching, _ = score_overlaps(gt, results, ids, keep_matching)
    else:
        run = EVALUATORS.get(resolved_backend(backend))
        stats, precision, cat_ids, matching, _ = run(gt, results, ids, keep_matching, iou_type=iou_type)
        if keep_matching and matching is None:  # a backend that keeps none: pycocotools' evaluate() alone
            matching = EVALUATORS.get("pycocotools")(gt, results, ids, evaluate_only=True, iou_type=iou_type)
    names = STAT_NAMES[iou_type]
    rows = _KEYPOINT_ROWS if iou_type == "keypoints" else None
    scored = {
        "stats": {PREFIX[iou_type] + name: float(v) for name, v in zip(names, stats, strict=True)},
        "per_class": _per_class(gt, ids, precision, cat_ids),
        "summary": format_summary(stats, rows) if rows else format_summary(stats),
        "num_detections": len(results),
    }
    if keep_matching:
        scored["matching"] = matching.trimmed()
    return scored
