"""Two runs' masks or keypoints of one object compared by what they are, for ``report diff``'s
matching (:func:`evalharness.stats.boxes.detection_diff`): a seg run's images whose masks changed
most are judged by mask IoU, a pose run's by OKS, not by the boxes around them.

- **Masks**: pycocotools' IoU of the two compressed RLEs (``mask.iou``), at the image's size, as the
  records keep them.
- **Keypoints**: OKS with COCO's 17 sigmas, run A's keypoints in the place of ground truth, as
  pycocotools would score B's were A's the annotation: its scale is A's keypoints' extent (the area
  pycocotools' ``loadRes`` gives a keypoint result, which has no mask), its labelled keypoints those
  A's model calls visible (score >= 0.5, the thumbnails' drawing rule; all of them when it calls
  none). Not symmetric: A is the baseline, B is measured against it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from evalharness.stats.boxes import BOX, Overlap

VISIBLE = 0.5  # a keypoint counted in OKS: A's visibility score at least this


def _mask_ious(row: list[Any], candidates: list[list[Any]]) -> list[float]:
    from pycocotools import mask as mask_utils

    ious = mask_utils.iou([row[6]], [c[6] for c in candidates], [0] * len(candidates))
    return [float(v) for v in np.asarray(ious, dtype=np.float64).reshape(-1)]


def _rle(record: Mapping[str, Any], counts: str) -> dict[str, Any]:
    return {"size": record["mask_size"], "counts": counts}


@functools.cache
def _sigmas() -> np.ndarray:  # COCO's 17 keypoint sigmas, read once from pycocotools
    from pycocotools.cocoeval import Params

    return np.asarray(Params(iouType="keypoints").kpt_oks_sigmas, dtype=np.float64)


def _oks(row: list[Any], candidates: list[list[Any]]) -> list[float]:
    reference = np.asarray(row[6], dtype=np.float64).reshape(-1, 3)
    sigmas = _sigmas()
    if len(reference) != len(sigmas):  # the scorer refuses any other count before a run is made
        raise ValueError(f"OKS has COCO's {len(sigmas)} sigmas; these keypoints are {len(reference)}")
    x, y = reference[:, 0], reference[:, 1]
    area = (x.max() - x.min()) * (y.max() - y.min())
    counted = reference[:, 2] >= VISIBLE
    if not counted.any():
        counted[:] = True
    scale = (2 * sigmas) ** 2 * (area + np.spacing(1)) * 2  # pycocotools' computeOks
    out = []
    for candidate in candidates:
        other = np.asarray(candidate[6], dtype=np.float64).reshape(-1, 3)
        e = ((other[:, 0] - x) ** 2 + (other[:, 1] - y) ** 2) / scale
        out.append(float(np.exp(-e)[counted].mean()))
    return out


MASK = Overlap("masks", "mask IoU", "masks", _mask_ious, _rle)
KEYPOINTS = Overlap("keypoints", "OKS", "poses", _oks)
OVERLAPS = {"bbox": BOX, "segm": MASK, "keypoints": KEYPOINTS}  # by pycocotools' iouType
