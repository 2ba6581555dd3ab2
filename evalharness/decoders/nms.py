"""Greedy non-maximum suppression in pure numpy, exact and deterministic.

Detection mAP depends on which box survives among near-duplicates, so the order is pinned down
(:func:`score_order`): candidates are visited by descending score and, among EQUAL scores, the
higher candidate (anchor) index first, as numpy's ``scores.argsort()[::-1]`` visits them in the
classic numpy NMS (Fast R-CNN's ``py_cpu_nms``) that most reference decodings copy, but made
deterministic (numpy's default sort is not stable: its order of ties depends on the array and the
CPU's sort kernel). A quantized head's scores take a few values only, so equal scores of
overlapping boxes are common there and this order decides which one is kept: with the lower index
first, the uint8 YOLOv8n-pose export's keypoint AP on COCO val25 is 0.196, with this order 0.241,
the independent reference's 0.238 (docs/tasks/coco-masks-keypoints.md). Neither order is more
right; such decisions are counted (:attr:`Kept.ties`), so a run says when ties decided its result.
A box is suppressed by an already-kept box when their IoU is strictly greater than
``iou_threshold`` (as torchvision.ops.nms). Class-aware suppression compares class ids explicitly
instead of the usual coordinate-offset trick, so IoUs are computed on the original coordinates and
are not perturbed by float rounding of large offsets.

Speed without changing the result: the best-scored live candidates are taken a block at a time;
greedy selection inside a block uses one block x block IoU matrix (a cheap boolean row per kept
box), then the block's kept boxes suppress the rest in one matrix pass. With ``max_keep`` (e.g. 300
of 8400 YOLO anchors) the first block usually finishes the job.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from evalharness.stats.boxes import iou_matrix

__all__ = ["Kept", "nms", "nms_counting_ties", "score_order"]

_MIN_BLOCK, _MAX_BLOCK = 256, 1024  # candidates resolved per block
_CHUNK = 4096  # columns per suppression pass, bounding temporaries to ~1024 x 4096


def score_order(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Positions by descending score, equal scores the higher position first (``argsort()[::-1]``
    of a stable sort; NaN last): one stable sort of the reversed scores, so it stays one argsort."""
    last = scores.size - 1
    order: npt.NDArray[np.int64] = last - np.argsort(-scores[::-1], kind="stable")
    return order


class Kept(NamedTuple):
    """What NMS kept and how often equal scores decided it."""

    indices: npt.NDArray[np.int64]  # the kept boxes, by :func:`score_order`
    # suppressions of a box by a kept box of exactly its score: with equal scores visited in the
    # other order, that pair's other box would have been kept
    ties: int


class _Suppression:
    """Boxes, scores and classes in score order; which positions suppress which."""

    def __init__(
        self, boxes: np.ndarray, scores: np.ndarray, classes: np.ndarray | None, threshold: float
    ) -> None:
        self.boxes, self.scores, self.classes, self.threshold = boxes, scores, classes, threshold
        self.ties = 0

    def matrix(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        hit = iou_matrix(self.boxes[rows], self.boxes[cols]) > self.threshold
        if self.classes is not None:
            hit &= self.classes[rows][:, None] == self.classes[cols][None, :]
        return hit

    def greedy(self, block: np.ndarray, room: int) -> np.ndarray:
        """Greedy keep inside ``block`` (score order), stopping after ``room`` kept; then counts, in
        one pass, the suppressed positions whose first suppressor (the earliest kept box that hits
        it: the one that removed it) has exactly their score."""
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
        # the last one kept suppressed nothing when it filled the room
        suppressors = np.asarray(kept[:-1] if len(kept) == room else kept, dtype=np.int64)
        removed[kept] = False  # a kept box's own mark (IoU with itself)
        gone = np.flatnonzero(removed)
        if gone.size:
            first = suppressors[np.argmax(hit[np.ix_(suppressors, gone)], axis=0)]
            scores = self.scores[block]
            self.ties += int(np.count_nonzero(scores[first] == scores[gone]))
        return block[kept]

    def survivors(self, kept: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """``rest`` without the positions that a box in ``kept`` suppresses (counting those whose
        first suppressor has their score: only the last kept score can equal a later one)."""
        alive = np.ones(rest.size, dtype=bool)
        lowest = self.scores[kept[-1]]
        for start in range(0, rest.size, _CHUNK):
            cols = rest[start : start + _CHUNK]
            hit = self.matrix(kept, cols)
            alive[start : start + _CHUNK] = ~hit.any(axis=0)
            tied = np.flatnonzero((self.scores[cols] == lowest) & ~alive[start : start + _CHUNK])
            if tied.size:
                first = np.argmax(hit[:, tied], axis=0)  # the first kept box that suppresses each
                self.ties += int(np.count_nonzero(self.scores[kept[first]] == lowest))
        return rest[alive]


def nms(
    boxes_xyxy: np.ndarray,
    scores: np.ndarray,
    iou_threshold: float,
    classes: np.ndarray | None = None,
    max_keep: int | None = None,
) -> np.ndarray:
    """Indices of the boxes kept by greedy NMS, by descending score (ties: higher index first).

    ``classes`` given: a box only suppresses boxes of its own class (class-aware NMS); None:
    every box competes with every other (class-agnostic). ``max_keep`` stops once that many are
    kept, which gives the same first ``max_keep`` indices as running to the end, only faster.
    """
    return nms_counting_ties(boxes_xyxy, scores, iou_threshold, classes, max_keep).indices


def nms_counting_ties(
    boxes_xyxy: np.ndarray,
    scores: np.ndarray,
    iou_threshold: float,
    classes: np.ndarray | None = None,
    max_keep: int | None = None,
) -> Kept:
    """:func:`nms`, and how many of its suppressions were between boxes of exactly equal score."""
    boxes = np.asarray(boxes_xyxy, dtype=np.float64).reshape(-1, 4)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if boxes.shape[0] != scores.shape[0]:
        raise ValueError(f"nms: {boxes.shape[0]} boxes but {scores.shape[0]} scores")
    limit = boxes.shape[0] if max_keep is None else max(int(max_keep), 0)
    order = score_order(scores)
    cls = None if classes is None else np.asarray(classes).reshape(-1)[order]
    sup = _Suppression(boxes[order], scores[order], cls, float(iou_threshold))
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
    indices = order[np.concatenate(kept)] if kept else np.zeros(0, dtype=np.int64)
    return Kept(indices, sup.ties)
