"""COCO masks checked before pycocotools' C reads them (data/coco_rle.py)."""

from __future__ import annotations

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from evalharness.data.coco_rle import (
    compressed_counts,
    mask_record_problem,
    rle_problem,
    segmentations_problem,
    texts_problem,
)


def _runs(mask: np.ndarray) -> list[int]:
    """COCO's runs of a mask, column by column, zeros first (the reference, in plain Python)."""
    runs, value, length = [], 0, 0
    for pixel in mask.flatten(order="F").tolist():
        if pixel == value:
            length += 1
        else:
            runs.append(length)
            value, length = pixel, 1
    return [*runs, length]


def _text(mask: np.ndarray) -> str:
    return mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))["counts"].decode()


def test_the_runs_decoded_are_pycocotools_on_random_masks():
    rng = np.random.default_rng(0)
    for case in range(200):
        h, w = (int(v) for v in rng.integers(1, 50, 2))
        mask = rng.random((h, w)) < rng.random()
        mask[:] = mask if case % 5 else case % 10 == 0  # whole-empty and whole-full masks too
        text = _text(mask)
        assert compressed_counts(text).tolist() == _runs(mask)
        assert rle_problem(text, [h, w]) is None


def test_an_image_of_masks_is_checked_in_one_pass_naming_the_first_bad_one():
    rng = np.random.default_rng(1)
    texts = [_text(rng.random((9, 13)) < p) for p in (0.0, 0.3, 0.9, 1.0, 0.5)]
    assert texts_problem(texts, 9 * 13) is None
    for k in (0, 2, 4):
        for bad in (texts[k] + "P", texts[k][:-1] + "oooo3", "", texts[k] + "1", texts[k] + "é"):
            found = texts_problem([*texts[:k], bad, *texts[k + 1 :]], 9 * 13)
            assert found is not None and found[0] == k, (k, bad, found)
    assert texts_problem([], 4) is None


@pytest.mark.parametrize(
    "counts, size, problem",
    [
        ("0P", [2, 2], "ends inside a run"),  # pycocotools would read past the text
        ("0" + "o" * 8 + "0", [2, 2], "ends inside a run"),  # a count of more than 7 characters
        ("14", [2, 2], "add up to 5 pixels, not 4"),
        ("05", [2, 2], "longer than the whole mask"),
        ("03", [2, 2], "add up to 3 pixels, not 4"),
        ("0?", [2, 2], "negative"),  # "?" is -1 in COCO's sign bit
        ([1, 3], [2, 2], None),
        ([1, -1, 4], [2, 2], "negative"),
        ([2, 3], [2, 2], "add up to 5"),
        ([1.0, 3], [2, 2], "neither RLE text nor a list of integers"),
        ("04", [2, 0], "not [height, width]"),
        ("04", [1 << 15, 1 << 15], "more than any image"),
    ],
)
def test_a_run_length_code_that_pycocotools_would_misread_is_named(counts, size, problem):
    found = rle_problem(counts, size)
    assert found is None if problem is None else problem in found


def test_a_record_s_mask_size_is_its_image_s():
    record = {"masks": ["0<"], "mask_size": [3, 4]}
    assert mask_record_problem(record, {"height": 3, "width": 4}) is None
    assert "but the image is 4 x 3" in mask_record_problem(record, {"height": 4, "width": 3})
    assert mask_record_problem(record, None) is None  # no ground truth says otherwise


def _ground_truth(segmentation: object) -> dict:
    return {
        "images": [{"id": 1, "height": 10, "width": 20}],
        "annotations": [
            {"id": 5, "image_id": 1, "segmentation": [[1, 1, 5, 1, 5, 5]]},
            {"id": 6, "image_id": 1, "segmentation": segmentation},
        ],
    }


@pytest.mark.parametrize(
    "segmentation, problem",
    [
        ([[0, 0, 19.5, 0, 19.5, 9.5, -3, 12]], None),  # a little outside the image: clipped by pycocotools
        ({"size": [10, 20], "counts": [200]}, None),
        ({"size": [10, 20], "counts": _text(np.ones((10, 20)))}, None),
        ([[0, 0, 1e12, 0, 5, 5]], "more than one image size outside"),  # terabytes to rasterise
        ([[0, 0, float("nan"), 0, 5, 5]], "not finite"),
        ([[0, 0, 5, 0, 5]], "x, y pairs of at least 3 points"),
        ([[0, 0, "5", 0, 5, 5]], "other than numbers"),
        ([[0, 0, True, 0, 5, 5]], "other than numbers"),  # pycocotools would draw it as 1
        ([], "neither a list of polygons nor an RLE"),
        ({"size": [10, 21], "counts": [210]}, "an RLE of size [10, 21] on an image of 10 x 20"),
        ({"size": [10, 20], "counts": [199]}, "add up to 199 pixels"),
        ({"size": [10, 20], "counts": "0P"}, "ends inside a run"),
    ],
)
def test_ground_truth_outlines_pycocotools_cannot_read_are_named(segmentation, problem):
    found = segmentations_problem(_ground_truth(segmentation))
    if problem is None:
        assert found is None
    else:
        assert found is not None and found[0] == 1 and problem in found[1], found
