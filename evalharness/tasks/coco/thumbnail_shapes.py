"""A seg / pose run's masks and skeletons for the thumbnails of ``report diff``'s changed images:
run A's and run B's, of the detections the diff counts (score at least its ``min_score``).

Masks are the records' RLE decoded at the image's size (a handful of images, so a full-size boolean
each); a skeleton joins the keypoints a model calls visible (visibility score >= 0.5, Ultralytics'
own drawing rule) by COCO's person skeleton when there are its 17 keypoints, and is only points
otherwise. A box model's records give nothing to draw: its thumbnails stay the images.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from evalharness.tasks.view import Shapes

# COCO's person category (person_keypoints_*.json "skeleton"): 1-based keypoint pairs
COCO_SKELETON = (
    (16, 14), (14, 12), (17, 15), (15, 13), (12, 13), (6, 12), (7, 13), (6, 7), (6, 8), (7, 9),
    (8, 10), (9, 11), (2, 3), (1, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 7),
)  # fmt: skip
VISIBLE = 0.5  # a keypoint drawn: its visibility score at least this


def thumbnail_shapes(
    record_a: Mapping[str, Any], record_b: Mapping[str, Any], min_score: float
) -> Shapes | None:
    """Both runs' masks and skeletons of the detections scored ``min_score`` or more; None when
    neither record has masks or keypoints to draw."""
    shapes: Shapes = {"masks": [], "lines": [], "points": []}
    for side, record in (("a", record_a), ("b", record_b)):
        kept = [i for i, det in enumerate(record.get("detections") or []) if det[1] >= min_score]
        if "masks" in record:
            shapes["masks"] += [(side, _decoded(record["masks"][i], record["mask_size"])) for i in kept]
        for i in kept if "keypoints" in record else ():
            _skeleton(shapes, side, record["keypoints"][i])
    return shapes if any(shapes.values()) else None


def _decoded(counts: str, size: list[int]) -> np.ndarray:
    from pycocotools import mask as mask_utils

    decoded: np.ndarray = mask_utils.decode({"size": size, "counts": counts.encode()})
    return decoded.astype(bool)


def _skeleton(shapes: Shapes, side: str, values: list[float]) -> None:
    points = [(values[k], values[k + 1], values[k + 2]) for k in range(0, len(values), 3)]
    shown = [p[2] >= VISIBLE for p in points]
    shapes["points"] += [(side, (x, y)) for (x, y, _), ok in zip(points, shown, strict=True) if ok]
    if len(points) == 17:
        shapes["lines"] += [
            (side, (*points[i - 1][:2], *points[j - 1][:2]))
            for i, j in COCO_SKELETON
            if shown[i - 1] and shown[j - 1]
        ]
