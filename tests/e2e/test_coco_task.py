"""task=coco end to end on real COCO val2017 images with the real SSD model and pycocotools."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ASSETS, EXPECTED, MODELS, run_inprocess, task_lines

from evalharness.core.errors import ConfigError, ModelMismatchError
from evalharness.data.coco_annotations import load_annotations
from evalharness.data.detection_input import detection_geometry
from evalharness.data.preprocess import InputSpec, PreprocessSpec
from evalharness.stats.coco_eval import COCO_STAT_NAMES, evaluate_bbox

SSD = "ssd_mobilenet_v1_coco_quant_postprocess"
COCO = ["task=coco", f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}"]


@pytest.fixture(scope="module")
def val25(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("coco25")
    return run_inprocess([*COCO, "dataset=coco_val25"], run_dir), run_dir


def test_ssd_val25_equals_reference_stats(val25):
    doc, run_dir = val25
    expected = EXPECTED["coco_val25"][SSD]
    assert doc["status"] == "complete" and doc["metrics"]["num_scored"] == 25
    for name in COCO_STAT_NAMES:
        assert doc["metrics"][name] == pytest.approx(expected[name], abs=5e-7), name
    assert doc["metrics"]["num_detections"] == EXPECTED["detections_count"]["coco_val25"][SSD] == 250


def test_results_file_is_standard_and_rescorable(val25):
    doc, run_dir = val25
    results = json.loads((run_dir / "coco_results.json").read_text())
    assert set(results[0]) == {"image_id", "category_id", "bbox", "score"}
    assert [r["image_id"] for r in results] == sorted(r["image_id"] for r in results)
    gt = load_annotations(ASSETS / "coco/instances_val25.json")
    rescored = evaluate_bbox(gt, results)
    assert rescored["stats"] == {n: doc["metrics"][n] for n in COCO_STAT_NAMES}
    assert doc["artifacts"] == ["coco_results.json", "pr_curves.json"]  # the second: per-class PR curves


def test_streamed_results_file_matches_per_image_records(val25):
    """coco_results.json is streamed from the compact store: same rows as the per-image records."""
    _, run_dir = val25
    text = (run_dir / "coco_results.json").read_text()
    results = json.loads(text)
    assert text == json.dumps(results, separators=(",", ":")) + "\n"  # byte-identical to one dumps
    preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    from_records = [
        {"image_id": p["image_id"], "category_id": cat, "bbox": bbox, "score": score}
        for p in preds
        for cat, score, *bbox in p["detections"]
    ]
    assert results == from_records and len(results) == 250


def test_per_image_predictions_and_empty_image(val25):
    _, run_dir = val25
    preds = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    assert [p["image_id"] for p in preds] == sorted(p["image_id"] for p in preds)
    empty = next(p for p in preds if p["image_id"] == 58636)  # no annotation in val2017
    assert len(empty["detections"]) == 10  # the model still reports its 10 boxes: false positives


def test_ssd_val5_equals_reference_stats(tmp_path):
    doc = run_inprocess([*COCO, "dataset=coco_val5"], tmp_path)
    for name in COCO_STAT_NAMES:
        assert doc["metrics"][name] == pytest.approx(EXPECTED["coco_val5"][SSD][name], abs=5e-7), name


def test_zero_detection_images_are_scored(tmp_path):
    from pycocotools.coco import COCO as CocoGroundTruth
    from pycocotools.cocoeval import COCOeval

    # at 0.7, four of the five images have no box left, three of them with objects (misses)
    doc = run_inprocess([*COCO, "dataset=coco_val5", "model.decoder.score_threshold=0.7"], tmp_path)
    preds = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert any(not p["detections"] for p in preds) and doc["metrics"]["num_scored"] == 5
    # pycocotools itself on the run's results file over all 5 images: an image without detections
    # still counts, its objects as misses
    gt = CocoGroundTruth(str(ASSETS / "coco/instances_val5.json"))
    coco_eval = COCOeval(gt, gt.loadRes(str(tmp_path / "coco_results.json")), "bbox")
    coco_eval.params.imgIds = sorted(gt.getImgIds())
    coco_eval.evaluate()
    coco_eval.accumulate()
    coco_eval.summarize()
    assert len(coco_eval.params.imgIds) == 5 and coco_eval.stats[0] > 0
    assert doc["metrics"]["AP"] == pytest.approx(coco_eval.stats[0], abs=5e-7)


def test_default_coco_run_uses_bundled_sample(tmp_path):
    doc = run_inprocess(["task=coco", f"paths.models_dir={MODELS}"], tmp_path)
    assert doc["provenance"]["dataset"]["name"] == "coco_sample" and doc["metrics"]["num_scored"] == 4
    assert doc["provenance"]["model"]["name"] == SSD
    assert task_lines(tmp_path)[0].startswith(" Average Precision  (AP) @[ IoU=0.50:0.95")


def test_classifier_to_coco_is_rejected_before_any_image(tmp_path, monkeypatch):
    import evalharness.data.preprocess as pre

    monkeypatch.setattr(pre, "decode_rgb", lambda *a: pytest.fail("an image was read"))
    with pytest.raises(ConfigError, match="has no output decoder.*use task=imagenet"):
        run_inprocess([*COCO, "model=mobilenet_v1_0.25_128_quant"], tmp_path)
    with pytest.raises(ModelMismatchError, match="ssd_postprocess"):
        run_inprocess(
            [*COCO, "model=mobilenet_v1_0.25_128_quant", "+model.decoder={name: ssd_postprocess}"],
            tmp_path / "b",
        )
    assert not list(tmp_path.rglob("predictions.jsonl"))


@pytest.mark.parametrize(("w", "h"), [(640, 480), (427, 640), (300, 300)])
def test_letterbox_geometry_inverts_forward_mapping(w, h):
    spec = PreprocessSpec(crop="none", letterbox=True)
    g = detection_geometry(w, h, spec, InputSpec(320, 320, 3, "float32"))
    box = np.array([[10.0, 20.0, w - 5.0, h - 7.0]])
    in_px = box * g.scale + np.array([g.pad_x, g.pad_y, g.pad_x, g.pad_y])
    assert np.allclose(g.to_original(in_px / 320.0), box)
    assert max(g.new_w, g.new_h) == 320 and g.pad_x * g.pad_y == 0


def test_stretch_geometry_is_plain_multiplication():
    g = detection_geometry(427, 640, PreprocessSpec(crop="none"), InputSpec(300, 300, 3, "uint8"))
    norm = np.array([[0.25, 0.5, 1.2, 0.75]], dtype=np.float32)
    assert g.to_original(norm).tolist() == [[0.25 * 427, 0.5 * 640, 427.0, 0.75 * 640]]  # clipped to width
