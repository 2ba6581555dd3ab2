"""The COCO bootstrap: re-accumulating pycocotools' matching with resampling weights equals
pycocotools run from scratch on the resampled images (each drawn image duplicated), to 1e-9."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ASSETS

from evalharness.stats.coco_eval import evaluate_bbox
from evalharness.stats.coco_intervals import bootstrap_intervals, paired_ap_bootstrap
from evalharness.stats.intervals import resample_weights
from evalharness.tasks.coco.definition import CocoScorer

VAL25 = ASSETS / "coco"


@pytest.fixture(scope="module")
def val25():
    """SSD MobileNet v1 quant detections on val25: quantized scores, so one image often holds two
    detections of one class with the same score (the case where copy order matters)."""
    gt = json.loads((VAL25 / "instances_val25.json").read_text())
    dets = json.loads((VAL25 / "fixture_val25/ssd_mobilenet_v1_results.json").read_text())
    tied = {(d["image_id"], d["category_id"], d["score"]) for d in dets}
    assert len(tied) < len(dets)  # the fixture exercises tied scores
    return gt, dets, evaluate_bbox(gt, dets, keep_matching=True)


def _duplicated(gt: dict, dets: list, image_ids: list, weights: np.ndarray) -> tuple[dict, list]:
    """The resample as a COCO dataset: image i's w copies adjacent, in image order, fresh ids."""
    anns, by_image = {}, {}
    for a in gt["annotations"]:
        anns.setdefault(a["image_id"], []).append(a)
    for d in dets:
        by_image.setdefault(d["image_id"], []).append(d)
    images_by_id = {im["id"]: im for im in gt["images"]}
    images, annotations, results = [], [], []
    for image_id, count in zip(image_ids, weights, strict=True):
        for _ in range(int(count)):
            new = len(images) + 1
            images.append({**images_by_id[image_id], "id": new})
            for a in anns.get(image_id, []):
                annotations.append({**a, "id": len(annotations) + 1, "image_id": new})
            results += [{**d, "image_id": new} for d in by_image.get(image_id, [])]
    return {**gt, "images": images, "annotations": annotations}, results


def test_unit_weights_reproduce_pycocotools(val25):
    _, _, scored = val25
    m = scored["matching"]
    once = m.resampled(np.ones((1, len(m.img_ids))))
    for name in ("AP", "AP50", "AP75"):
        assert once[name][0] == pytest.approx(scored["stats"][name], abs=1e-12)
    for k, cat in enumerate(m.cat_ids):
        expected = scored["per_class"][str(cat)]["AP"]
        assert (np.isnan(once["per_class"][0, k]) and expected is None) or once["per_class"][0, k] == (
            pytest.approx(expected, abs=1e-12)
        )


def test_fast_bootstrap_equals_pycocotools_on_duplicated_images(val25):
    gt, dets, scored = val25
    m = scored["matching"]
    weights = resample_weights(len(m.img_ids), 8, seed=11)
    fast = m.resampled(weights)
    for b, w in enumerate(weights):
        slow = evaluate_bbox(*_duplicated(gt, dets, m.img_ids, w))
        for name in ("AP", "AP50", "AP75"):
            assert abs(fast[name][b] - slow["stats"][name]) < 1e-9, (b, name)
        for k, cat in enumerate(m.cat_ids):
            expected = slow["per_class"][str(cat)]["AP"]
            got = fast["per_class"][b, k]
            assert (expected is None and np.isnan(got)) or abs(got - expected) < 1e-9, (b, cat)


def test_intervals_are_seeded_and_bracket_the_estimate(val25):
    _, _, scored = val25
    one = bootstrap_intervals(scored["matching"], 200, 0, 0.95)
    assert one == bootstrap_intervals(scored["matching"], 200, 0, 0.95)
    assert one != bootstrap_intervals(scored["matching"], 200, 1, 0.95)
    low, high = one["AP"]
    assert low < scored["stats"]["AP"] < high and high - low > 0.02  # 25 images: a wide interval
    assert set(one["per_class_AP"]) == {str(c) for c in scored["matching"].cat_ids}


def test_paired_bootstrap_of_a_run_with_itself_is_zero(val25):
    m = val25[2]["matching"]
    same = paired_ap_bootstrap(m, m, 100, 0, 0.95)
    assert same["AP"] == {"interval": [0.0, 0.0], "p": 1.0}


def test_scorer_writes_intervals_and_zero_resamples_turns_them_off(val25):
    gt, dets, _ = val25
    records = {}
    for d in dets:
        records.setdefault(d["image_id"], []).append([d["category_id"], d["score"], *d["bbox"]])
    ids = sorted(im["id"] for im in gt["images"])
    rows = [{"image_id": i, "detections": records.get(i, [])} for i in ids]
    metrics = CocoScorer(gt, "pycocotools", False, 300, 5).add_all(rows).result()
    assert metrics["intervals"]["resamples"] == 300 and metrics["intervals"]["seed"] == 5
    assert "intervals" not in CocoScorer(gt, "pycocotools", False, 0).add_all(rows).result()
