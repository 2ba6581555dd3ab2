"""A seg run's masks reduced to areas and IoUs as they come (MaskOverlaps) score exactly as
pycocotools scores the RLEs themselves: the same stats, precision, recall and per-image matching,
on random masks with polygon and crowd ground truth, tied scores, a category past maxDets in one
image, an image added twice, unscored images and images without ground truth."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from evalharness.stats.coco_eval import EVALUATORS
from evalharness.stats.coco_mask_overlaps import MaskOverlaps, score_overlaps

SIZE = 64


def _rle(mask: np.ndarray) -> dict:
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [SIZE, SIZE], "counts": rle["counts"].decode()}


def _box_mask(rng: np.random.Generator, x: float, y: float, w: float, h: float) -> np.ndarray:
    mask = np.zeros((SIZE, SIZE), dtype=bool)
    x0, y0 = int(max(0, x + rng.normal(0, 2))), int(max(0, y + rng.normal(0, 2)))
    mask[y0 : y0 + max(1, int(h)), x0 : x0 + max(1, int(w))] = True
    mask &= rng.random((SIZE, SIZE)) < 0.95  # ragged, so IoUs are not box IoUs
    return mask


def _case(seed: int) -> tuple[dict, list[tuple[int, list[dict]]]]:
    """Ground truth (polygons, crowd RLEs) and records: (image id, [{category_id, score, mask}])."""
    rng = np.random.default_rng(seed)
    images = [{"id": i, "width": SIZE, "height": SIZE} for i in range(1, 7)]
    annotations, records = [], []
    for image in images[:-1]:  # the last image has no ground truth
        objects = []
        for _ in range(rng.integers(0, 5)):
            x, y = rng.uniform(0, 40, 2)
            w, h = rng.uniform(3, 44, 2)  # small and medium
            cat, crowd = int(rng.integers(1, 4)), int(rng.random() < 0.2)
            if crowd:  # uncompressed RLE: columns x .. x + w, whole height
                before, inside = int(x) * SIZE, int(w) * SIZE
                segmentation = {
                    "size": [SIZE, SIZE],
                    "counts": [before, inside, SIZE * SIZE - before - inside],
                }
                area = float(mask_utils.area(mask_utils.frPyObjects(segmentation, SIZE, SIZE)))
            else:
                segmentation = [[x, y, x + w, y, x + w, y + h, x, y + h]]
                area = w * h
            annotations.append(
                {"id": len(annotations) + 1, "image_id": image["id"], "category_id": cat,
                 "segmentation": segmentation, "area": area, "bbox": [x, y, w, h], "iscrowd": crowd}
            )  # fmt: skip
            objects.append((cat, x, y, w, h))
        detections = []
        for cat, x, y, w, h in objects:
            for _ in range(rng.integers(0, 4)):  # near-duplicates of the object, some of another class
                detections.append(
                    (cat if rng.random() < 0.7 else int(rng.integers(1, 4)), _box_mask(rng, x, y, w, h))
                )
        many = 105 if image["id"] == 2 else int(rng.integers(0, 4))  # past maxDets in one category
        for _ in range(many):
            detections.append((1, _box_mask(rng, *rng.uniform(0, 40, 2), *rng.uniform(2, 20, 2))))
        records.append(
            (image["id"], [{"category_id": cat, "score": float(rng.choice([0.5, 0.25, rng.random()])),
                            "mask": _rle(mask)} for cat, mask in detections])
        )  # fmt: skip
    lone = {"category_id": 2, "score": 0.75, "mask": _rle(_box_mask(rng, 5, 5, 9, 9))}
    records.append((images[-1]["id"], [lone]))
    records.append((1, records[0][1][:2]))  # an image added twice: pycocotools pools its detections
    categories = [{"id": c, "name": str(c)} for c in (1, 2, 3)]
    return {"images": images, "annotations": annotations, "categories": categories}, records


@pytest.mark.parametrize("seed", range(4))
def test_scored_as_pycocotools_scores_the_masks(seed):
    gt, records = _case(seed)
    overlaps = MaskOverlaps(gt)
    results = []
    for image_id, dets in records:
        categories, scores = [d["category_id"] for d in dets], [d["score"] for d in dets]
        overlaps.add(image_id, categories, scores, [d["mask"] for d in dets])
        results += [
            {"image_id": image_id, "category_id": d["category_id"], "score": d["score"],
             "segmentation": d["mask"]}
            for d in dets
        ]  # fmt: skip
    assert len(overlaps) == len(results)
    ids = [1, 2, 3, 4, 6] if seed % 2 else [1, 2, 3, 4, 5, 6]  # an unscored image too
    theirs = EVALUATORS.get("pycocotools")(gt, results, ids, True, iou_type="segm")
    ours = score_overlaps(gt, overlaps, ids, keep_matching=True)
    assert list(ours[0]) == list(theirs[0]) and max(theirs[0]) > 0.1  # some masks matched
    for got, expected in ((ours[1], theirs[1]), (ours[4], theirs[4])):
        assert np.array_equal(got, expected)
    assert ours[2] == theirs[2]
    for field in dataclasses.fields(theirs[3]):
        got, expected = getattr(ours[3], field.name), getattr(theirs[3], field.name)
        assert np.array_equal(got, expected), field.name
    only = score_overlaps(gt, overlaps, ids, evaluate_only=True)
    reference = EVALUATORS.get("pycocotools")(gt, results, ids, evaluate_only=True, iou_type="segm")
    assert all(
        np.array_equal(getattr(only, f.name), getattr(reference, f.name))
        for f in dataclasses.fields(reference)
    )
