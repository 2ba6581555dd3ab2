"""TIDE's AP50 beside pycocotools': tidecv averages a class detected but absent from the images as
AP 0, pycocotools leaves it out (issue 43: 39.5 vs 56.9 on 50 images). The record counts those
classes and gives TIDE's AP50 over the classes with ground truth, and the table says so."""

from __future__ import annotations

import numpy as np
import pytest

from evalharness.stats.tide import tide_breakdown
from evalharness.tasks.coco.run_analysis import _tide_ap_cause

GT = {
    "images": [{"id": 1, "file_name": "a.jpg", "width": 100, "height": 100}],
    "categories": [{"id": 1, "name": "person"}, {"id": 2, "name": "bicycle"}],
    "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 30, 30], "iscrowd": 0}],
}


def test_a_class_detected_but_absent_counts_zero_in_tides_ap50():
    pytest.importorskip("tidecv", reason="tidecv is an optional extra (pip install 'evalharness[analysis]')")
    rows = np.array([[1, 0.9, 10, 10, 30, 30], [2, 0.8, 60, 60, 20, 20]], dtype=np.float64)
    tide = tide_breakdown(GT, lambda: iter([(1, rows)]), [1])
    assert tide["available"], tide["reason"]
    assert tide["AP50"] == pytest.approx(0.5)  # (100 + 0) / 2: the bicycle no image holds
    assert (tide["classes_averaged"], tide["classes_without_truth"]) == (2, 1)
    assert tide["AP50_classes_with_truth"] == pytest.approx(1.0)  # what pycocotools averages
    cause = _tide_ap_cause(tide)
    assert "1 of them detected but absent from these images" in cause and "ground truth 100.00" in cause


def test_no_cause_when_every_class_has_truth_or_the_run_predates_the_count():
    assert _tide_ap_cause({"classes_averaged": 2, "classes_without_truth": 0}) == ""
    assert _tide_ap_cause({"AP50": 0.4}) == ""
