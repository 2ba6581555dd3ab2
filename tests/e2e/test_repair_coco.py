"""``quant.max_drop`` on COCO: the layer search of pruning bounds a YOLO-seg export's mask AP
(``segm_AP``, chosen from the model's head), with the paired image bootstrap of ``report diff``,
on val5 (3 images searched, 2 held out).

The real small model is the shared assets' ``yolov8n_seg_int8_256`` (AGPL, test use only). It is
pruned, not quantized: ``quant=int8`` needs a float source, and the only float-input seg export
(640) costs half a minute to quantize and search, so the repair's own path is covered by the unit
tests of its parts (tests/unit/tasks/test_repair_metric.py) and this search shares them (the split,
the candidates' scoring, the metric, the paired comparison). One weight tensor qualifies
(``min_elements``), so the search is a handful of passes over 5 images.
"""

from __future__ import annotations

import re

import pytest
from conftest import ASSETS, run_inprocess

from evalharness.core.errors import ConfigError, DataError

COCO_DIR = ASSETS / "coco"
SEG_256 = ASSETS / "yolo" / "yolov8n_seg_int8_256.tflite"
COMMON = [
    "task=coco",
    "model=file",
    f"model.path={SEG_256}",
    f"dataset.root={COCO_DIR / 'val5'}",
    f"dataset.annotations={COCO_DIR / 'instances_val5.json'}",
    "task.tflite_tool_ap=false",
    "task.analysis=false",
    "task.bootstrap_resamples=100",
    "quant=prune",
    "quant.weights.min_elements=250000",  # the one 3x3x128x256 convolution
]


def test_the_layer_search_bounds_the_seg_model_s_mask_ap_with_report_diff_s_paired_interval(tmp_path):
    cache = f"paths.cache_dir={tmp_path / 'cache'}"
    doc = run_inprocess([*COMMON, "quant.max_drop=0.05", cache], tmp_path / "r")
    found = doc["provenance"]["model"]["quant"]["weights"]["search"]
    assert found["metric"] == "segm_AP"
    assert found["metric_source"] == "the model's head (model.decoder.name=yolo_seg) gives masks"
    assert found["split"]["search"] == 3 and [layer["op_index"] for layer in found["layers"]] == [79]
    layer = found["layers"][0]
    assert 0 <= layer["metric"] <= 1 and layer["interval"][0] <= layer["delta"] <= layer["interval"][1]
    held = found["held_out"]
    assert held["images"] == 2 and held["drop"] == held["float"] - held["metric"]
    assert held["interval"] is not None  # the paired bootstrap over the 2 held-out images
    assert doc["metrics"]["num_scored"] == 2 and "segm_AP" in doc["metrics"]


def test_a_metric_the_seg_head_does_not_give_is_refused_before_anything_runs(tmp_path):
    said = (
        "quant.metric=keypoints_AP: the model's head (model.decoder.name=yolo_seg) gives no keypoints; "
        "its metrics: AP, AP50, AP75, segm_AP, segm_AP50, segm_AP75"
    )
    with pytest.raises(ConfigError, match=f"^{re.escape(said)}$"):
        run_inprocess([*COMMON, "quant.max_drop=0.05", "quant.metric=keypoints_AP"], tmp_path / "r")
    assert not (tmp_path / "r" / "metrics.json").exists()


def test_a_held_out_part_with_nothing_the_metric_scores_is_refused_before_the_search(tmp_path):
    """val5's two held-out images hold no annotated keypoints: keypoints_AP is pycocotools' -1
    there, never a silent drop of 0; refused before any candidate is made."""
    pose = [
        "task=coco",
        "model=file",
        f"model.path={ASSETS / 'yolo' / 'yolov8n_pose_uint8_256.tflite'}",
        f"dataset.root={COCO_DIR / 'val5'}",
        f"dataset.annotations={COCO_DIR / 'person_keypoints_val5.json'}",
        "task.analysis=false",
        "quant=prune",
        "quant.max_drop=0.05",
    ]
    said = "keypoints_AP of .*yolov8n_pose_uint8_256.tflite on the held-out part \\(2 images\\) is -1.0"
    with pytest.raises(DataError, match=said):
        run_inprocess(pose, tmp_path / "r")
    assert not (tmp_path / "r" / "metrics.json").exists()
