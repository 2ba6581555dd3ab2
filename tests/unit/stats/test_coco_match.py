"""MatchingCOCOeval's per-image matching against pycocotools' own, value for value and dtype for
dtype, on random boxes with crowd regions, tied scores, every area range and duplicates."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from evalharness.stats import coco_match
from evalharness.stats.coco_match import MatchingCOCOeval


def _dataset(seed: int) -> tuple[dict, list]:
    rng = np.random.default_rng(seed)
    images = [{"id": i, "width": 200, "height": 200} for i in range(1, 9)]
    annotations, results = [], []
    for image in images:
        for _ in range(rng.integers(0, 6)):
            x, y = rng.uniform(0, 150, 2)
            w, h = rng.choice([5.0, 20.0, 60.0, 120.0]) * rng.uniform(0.5, 1.5, 2)
            annotations.append(
                {"id": len(annotations) + 1, "image_id": image["id"], "category_id": int(rng.integers(1, 4)),
                 "bbox": [x, y, w, h], "area": w * h, "iscrowd": int(rng.random() < 0.15)}
            )  # fmt: skip
            for _ in range(rng.integers(0, 4)):  # near-duplicates of the object, some of another class
                jitter = rng.normal(0, 0.15 * min(w, h), 4)
                results.append(
                    {"image_id": image["id"], "category_id": int(rng.integers(1, 4)),
                     "bbox": [x + jitter[0], y + jitter[1], abs(w + jitter[2]), abs(h + jitter[3])],
                     "score": float(rng.choice([0.5, 0.25, rng.random()]))}
                )  # fmt: skip
        for _ in range(rng.integers(0, 3)):  # background detections
            results.append(
                {"image_id": image["id"], "category_id": int(rng.integers(1, 4)),
                 "bbox": [*rng.uniform(0, 150, 2), *rng.uniform(1, 50, 2)], "score": 0.25}
            )  # fmt: skip
    gt = {"images": images, "annotations": annotations, "categories": [{"id": c} for c in (1, 2, 3)]}
    return gt, results


def _evaluated(cls: type, gt: dict, results: list, max_dets: list[int]) -> COCOeval:
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = {**gt, "annotations": [dict(a) for a in gt["annotations"]]}
        coco_gt.createIndex()
        evaluator = cls(coco_gt, coco_gt.loadRes([dict(r) for r in results]), "bbox")
        evaluator.params.maxDets = max_dets
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator


@pytest.mark.parametrize("seed", range(6))
def test_the_matching_is_pycocotools_own(seed):
    gt, results = _dataset(seed)
    max_dets = [1, 10, 100] if seed % 2 else [1, 2, 3]  # maxDets cutting the detections too
    ours, theirs = (
        _evaluated(MatchingCOCOeval, gt, results, max_dets),
        _evaluated(COCOeval, gt, results, max_dets),
    )
    assert list(ours.stats) == list(theirs.stats)
    for key in ("precision", "recall", "scores"):  # accumulate() on whole arrays: the same bits
        assert np.array_equal(ours.eval[key], theirs.eval[key]), key
    assert ours.ious.keys() == theirs.ious.keys()  # evaluate() skips the empty pairs, the same IoUs
    for pair, value in theirs.ious.items():
        assert np.array_equal(ours.ious[pair], value), pair
    for mine, reference in zip(ours.evalImgs, theirs.evalImgs, strict=True):
        assert (mine is None) == (reference is None)
        if reference is None:
            continue
        assert mine.keys() == reference.keys()
        for key, value in reference.items():
            if isinstance(value, np.ndarray):
                got = mine[key]
                assert got.dtype == value.dtype and got.shape == value.shape and np.array_equal(got, value), (
                    key
                )
            else:
                assert mine[key] == value, key


@pytest.mark.parametrize("block", [1, 20, 45])
@pytest.mark.parametrize("seed", [0, 1])
def test_accumulate_a_block_of_thresholds_at_a_time_gives_the_same_bits(monkeypatch, seed, block):
    """accumulate() on a few IoU-threshold rows at a time (forced: a category's detections times the
    thresholds above the block; one row, several, a last shorter block) equals pycocotools'."""
    monkeypatch.setattr(coco_match, "ROW_BLOCK_VALUES", block)
    gt, results = _dataset(seed)
    max_dets = [1, 10, 100] if seed % 2 else [1, 2, 3]
    ours, theirs = (
        _evaluated(MatchingCOCOeval, gt, results, max_dets),
        _evaluated(COCOeval, gt, results, max_dets),
    )
    assert list(ours.stats) == list(theirs.stats)
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(ours.eval[key], theirs.eval[key]), key
