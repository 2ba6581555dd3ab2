"""The error analysis on hand-made cases: Holm's adjustment, the confusion matrix's background row
and column, TIDE's absence said (never silent) and its global matplotlib styling undone."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from evalharness.stats.detection_analysis import BACKGROUND, confusion
from evalharness.stats.paired import holm
from evalharness.stats.tide import tide_breakdown, tide_line

GT = {
    "images": [{"id": 1, "width": 100, "height": 100, "file_name": "a.jpg"}],
    "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 2, "bbox": [50, 50, 10, 10], "area": 100, "iscrowd": 0},
        {"id": 3, "image_id": 1, "category_id": 1, "bbox": [80, 0, 10, 10], "area": 100, "iscrowd": 0},
    ],
}
# a dog on the cat (confusion), a cat on the dog (confusion), a cat on nothing (background), a
# low-score dog under the threshold; the second cat is missed
DETECTIONS = np.array(
    [[2, 0.9, 0, 0, 10, 10], [1, 0.8, 50, 50, 10, 10], [1, 0.7, 30, 30, 5, 5], [2, 0.1, 80, 0, 10, 10]]
)


def test_holm_step_down_is_monotone_and_skips_untested():
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert holm([]) == [] and holm([0.5]) == [0.5]


def test_confusion_has_background_row_and_column():
    cells = confusion(GT, lambda: iter([(1, DETECTIONS)]), [1], 0.5)["cells"]
    assert cells == [[BACKGROUND, 1, 1], [1, BACKGROUND, 1], [1, 2, 1], [2, 1, 1]]


def test_tidecv_absent_is_recorded_and_printed(monkeypatch):
    monkeypatch.setitem(sys.modules, "tidecv", None)  # import tidecv now raises ImportError
    tide = tide_breakdown(GT, lambda: iter([(1, DETECTIONS)]), [1])
    assert tide["available"] is False and "pip install 'evalharness[analysis]'" in tide["reason"]
    assert tide_line(tide).startswith("TIDE: not computed: tidecv is not installed")


def test_tide_leaves_matplotlib_style_alone():
    matplotlib = pytest.importorskip("matplotlib")
    pytest.importorskip("tidecv")
    before = dict(matplotlib.rcParams)
    tide = tide_breakdown(GT, lambda: iter([(1, DETECTIONS)]), [1])
    assert tide["available"] and tide["counts"]["Cls"] == 3  # the low-score dog too: TIDE keeps every score
    assert {k for k, v in matplotlib.rcParams.items() if before[k] != v} == set()


def test_tide_on_masks_types_the_errors_by_mask_iou():
    """Two objects found with their exact boxes: box TIDE sees no error; the second mask covers a
    quarter of its object, so mask TIDE types it a localisation error (and the object missed)."""
    pytest.importorskip("tidecv")
    from pycocotools import mask as mask_utils

    from evalharness.stats.tide import breakdown, mask_detections

    def square(x, y, size):  # a polygon, and the mask a model would give for it
        grid = np.zeros((100, 100), np.uint8, order="F")
        grid[y : y + size, x : x + size] = 1
        rle = mask_utils.encode(grid)
        polygon = [[x, y, x + size, y, x + size, y + size, x, y + size]]
        return polygon, {**rle, "counts": rle["counts"].decode()}

    (first, first_mask), (second, _) = square(0, 0, 20), square(50, 50, 20)
    gt = {**GT, "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 20, 20], "segmentation": first,
         "area": 400, "iscrowd": 0},
        {"id": 2, "image_id": 1, "category_id": 1, "bbox": [50, 50, 20, 20], "segmentation": second,
         "area": 400, "iscrowd": 0},
    ]}  # fmt: skip
    boxes = np.array([[1, 0.9, 0, 0, 20, 20], [1, 0.8, 50, 50, 20, 20]])
    assert sum(tide_breakdown(gt, lambda: iter([(1, boxes)]), [1])["counts"].values()) == 0
    results = [
        {"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": first_mask},
        {"image_id": 1, "category_id": 1, "score": 0.8, "segmentation": square(50, 50, 10)[1]},
    ]
    masks = breakdown(gt, mask_detections(results), [1], "mask")
    assert masks["available"] and masks["counts"]["Loc"] == 1
    assert masks["AP50"] == pytest.approx(0.5, abs=0.01)
    assert tide_line(masks, "masks").startswith("TIDE (masks) dAP in AP50 points (tidecv")
