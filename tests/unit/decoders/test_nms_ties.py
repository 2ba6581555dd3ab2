"""NMS's order of equal scores (numpy's ``argsort()[::-1]``: the higher index first) and the count
of the suppressions it decided, from the NMS through a YOLO head's decoder to the run's summary."""

from __future__ import annotations

import numpy as np
import pytest

from evalharness.core.tensors import TensorInfo
from evalharness.decoders.base import build_decoder
from evalharness.decoders.nms import nms, nms_counting_ties, score_order
from evalharness.report.summary import summary_block
from evalharness.rundir.metrics_file import parse_document

SIZE, ANCHORS = 64, 200  # more anchors than attributes: the head is read channels-first


def test_equal_scores_are_visited_as_argsort_reversed_visits_them():
    scores = np.round(np.random.default_rng(0).uniform(0, 1, 500), 1)  # ~11 values: many ties
    np.testing.assert_array_equal(score_order(scores), np.argsort(scores, kind="stable")[::-1])
    assert score_order(np.array([0.5, np.nan, 0.5])).tolist() == [2, 0, 1]  # NaN last, as before
    assert score_order(np.zeros(0)).shape == (0,)


def textbook(boxes, scores, threshold, classes=None, max_keep=None) -> tuple[list[int], int]:
    """One kept box at a time in ``argsort()[::-1]`` order, counting the boxes each kept box removes
    whose score equals its own: the oracle for the blocked implementation's order and count."""
    keep, ties, alive = [], 0, np.argsort(scores, kind="stable")[::-1]
    area = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)
    while alive.size and (max_keep is None or len(keep) < max_keep):
        first, alive = alive[0], alive[1:]
        keep.append(first)
        if max_keep is not None and len(keep) == max_keep:
            break
        lo = np.maximum(boxes[first, :2], boxes[alive, :2])
        hi = np.minimum(boxes[first, 2:], boxes[alive, 2:])
        inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
        gone = inter / (area[first] + area[alive] - inter) > threshold
        if classes is not None:
            gone &= classes[alive] == classes[first]
        ties += int(np.count_nonzero(gone & (scores[alive] == scores[first])))
        alive = alive[~gone]
    return keep, ties


@pytest.mark.parametrize("n, max_keep, classes", [(40, None, False), (700, 300, True), (1400, None, False)])
def test_the_blocked_nms_keeps_and_counts_as_the_textbook_loop(n, max_keep, classes):
    rng = np.random.default_rng(n)
    xy = rng.uniform(0, 200, (n, 2))
    boxes = np.c_[xy, xy + rng.uniform(5, 60, (n, 2))]
    scores = np.round(rng.uniform(0, 1, n), 1)  # ties within and across the 256-1024 blocks
    cls = rng.integers(0, 2, n) if classes else None
    kept, ties = nms_counting_ties(boxes, scores, 0.5, cls, max_keep)
    want, want_ties = textbook(boxes, scores, 0.5, cls, max_keep)
    np.testing.assert_array_equal(kept, want)
    assert ties == want_ties > 0
    np.testing.assert_array_equal(nms(boxes, scores, 0.5, cls, max_keep), want)


def pose_head(scores: list[float]) -> np.ndarray:
    """[1, 56, ANCHORS] rows of a pose head: anchors 0 and 1 two overlapping persons (IoU 0.78),
    anchor 2 one apart, each with ``scores``; the other anchors below the confidence threshold."""
    rows = np.zeros((1, 56, ANCHORS), np.float32)
    rows[0, :4, :3] = np.array([[20, 22, 48], [20, 20, 40], [16, 16, 12], [24, 24, 20]])
    rows[0, 4, :3] = scores
    rows[0, 5, :3] = [1.0, 2.0, 3.0]  # the first keypoint's x tells the anchors apart
    return rows


def decoded(rows: np.ndarray):
    decoder = build_decoder("yolo_pose", {})
    decoder.bind([TensorInfo("out", 0, rows.shape, "float32")], (SIZE, SIZE), "pose.tflite")
    return decoder.decode([rows])


def test_of_two_overlapping_persons_of_equal_score_the_higher_anchor_is_kept_and_counted():
    dets = decoded(pose_head([0.6, 0.6, 0.6]))
    assert (dets.keypoints[:, 0, 0] * SIZE).tolist() == [3.0, 2.0]  # anchor 2, then anchor 1
    assert dets.nms_ties == 1
    dets = decoded(pose_head([0.6, 0.5, 0.6]))  # unequal: the score decides, not the order
    assert (dets.keypoints[:, 0, 0] * SIZE).tolist() == [3.0, 1.0] and dets.nms_ties == 0


def test_the_scorer_counts_the_images_and_the_summary_says_it_once():
    from evalharness.tasks.coco.scorer import CocoScorer

    truth = {
        "images": [{"id": i, "width": 64, "height": 64, "file_name": f"{i}.jpg"} for i in (1, 2, 3)],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "bbox": [4, 4, 20, 20], "area": 400, "iscrowd": 0}
        ],  # fmt: skip
        "categories": [{"id": 1, "name": "person"}],
    }
    records = [
        {
            "id": f"{i}.jpg",
            "image_id": i,
            "detections": [[1, 0.9, 4, 4, 20, 20]],
            "unmapped": 0,
            "nms_ties": t,
        }
        for i, t in ((1, 0), (2, 3), (3, 1))
    ]
    scorer = CocoScorer(truth, "pycocotools", False)
    for record in records:
        scorer.add(record)
    metrics = scorer.result()
    assert metrics["nms_ties"] == {"images": 2, "suppressions": 4}
    doc = {"task": "coco", "status": "complete", "metrics": metrics}
    said = [line for line in summary_block(parse_document(doc)) if "NMS ties" in line]
    assert said == [
        "  NMS ties: 2 of 3 images kept one of two overlapping detections of equal score (4 times; a "
        "quantized score); the other order of equal scores would keep the other one"
    ]
    quiet = {**metrics, "nms_ties": {"images": 0, "suppressions": 0}}
    assert not [line for line in summary_block(parse_document({**doc, "metrics": quiet})) if "NMS" in line]
    without = CocoScorer(truth, "pycocotools", False)  # a model's own NMS: no count, no key
    for record in records:
        without.add({k: v for k, v in record.items() if k != "nms_ties"})
    assert "nms_ties" not in without.result()
