"""Greedy non-maximum suppression in pure numpy, exact and deterministic.

Detection mAP depends on which box survives among near-duplicates, so the order is pinned down:
candidates are visited by descending score with a STABLE sort, i.e. equal scores keep the lower
candidate (anchor) index first, and a box is suppressed by an already-kept box when their IoU is
strictly greater than ``iou_threshold`` (as torchvision.ops.nms). Class-aware suppression compares
class ids explicitly instead of the usual coordinate-offset trick, so IoUs are computed on the
original coordinates and are not perturbed by float rounding of large offsets.

Speed without changing the result: the best-scored live candidates are taken a block at a time;
greedy selection inside a block uses one block x block IoU matrix (a cheap boolean row per kept
box), then the block's kept boxes suppress the rest in one matrix pass. With ``max_keep`` (e.g. 300
of 8400 YOLO anchors) the first block usually finishes the job.
"""

from __future__ import annotations

import numpy as np

from evalharness.stats.boxes import iou_matrix

__all__ = ["nms"]

_MIN_BLOCK, _MAX_BLOCK = 256, 1024  # candidates resolved per block
_CHUNK = 4096  # columns per suppression pass, bounding temporaries to ~1024 x 4096


class _Suppression:
    """Boxes and classes in score order; which positions suppress which."""

    def __init__(self, boxes: np.ndarray, classes: np.ndarray | None, threshold: float) -> None:
        self.boxes, self.classes, self.threshold = boxes, classes, threshold

    def matrix(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        hit = iou_matrix(self.boxes[rows], self.boxes[cols]) > self.threshold
        if self.classes is not None:
            hit &= self.classes[rows][:, None] == self.classes[cols][None, :]
        return hit

    def greedy(self, block: np.ndarray, room: int) -> np.ndarray:
        """Greedy keep inside ``block`` (score order), stopping after ``room`` kept."""
        hit = self.matrix(block, block)
        removed = np.zeros(block.size, dtype=bool)
        kept: list[int] = []
        for j in range(block.size):
            if removed[j]:
                continue
            kept.append(j)
            if len(kept) == room:
                break
            removed |= hit[j]  # marks only matter for later positions; earlier ones are decided
        return block[kept]

    def survivors(self, kept: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """``rest`` without the positions that a box in ``kept`` suppresses."""
        alive = np.ones(rest.size, dtype=bool)
        for start in range(0, rest.size, _CHUNK):
            cols = rest[start : start + _CHUNK]
            alive[start : start + _CHUNK] = ~self.matrix(kept, cols).any(axis=0)
        return rest[alive]


def nms(
    boxes_xyxy: np.ndarray,
    scores: np.ndarray,
    iou_threshold: float,
    classes: np.ndarray | None = None,
    max_keep: int | None = None,
) -> np.ndarray:
    """Indices of the boxes kept by greedy NMS, by descending score (ties: lower index first).

    ``classes`` given: a box only suppresses boxes of its own class (class-aware NMS); None:
    every box competes with every other (class-agnostic). ``max_keep`` stops once that many are
    kept, which gives the same first ``max_keep`` indices as running to the end, only faster.
    """
    boxes = np.asarray(boxes_xyxy, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if boxes.shape[0] != scores.shape[0]:
        raise ValueError(f"nms: {boxes.shape[0]} boxes but {scores.shape[0]} scores")
    limit = boxes.shape[0] if max_keep is None else max(int(max_keep), 0)
    order = np.argsort(-scores, kind="stable")
    cls = None if classes is None else np.asarray(classes).reshape(-1)[order]
    sup = _Suppression(boxes[order], cls, float(iou_threshold))
    alive = np.arange(order.size)  # positions in score order not yet suppressed
    kept: list[np.ndarray] = []
    count = 0
    while alive.size and count < limit:
        size = int(np.clip(2 * (limit - count), _MIN_BLOCK, _MAX_BLOCK))
        block, alive = alive[:size], alive[size:]
        winners = sup.greedy(block, limit - count)
        kept.append(winners)
        count += winners.size
        if alive.size and count < limit:
            alive = sup.survivors(winners, alive)
    return order[np.concatenate(kept)] if kept else np.zeros(0, dtype=np.int64)
