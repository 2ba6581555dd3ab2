"""A rescore of a run on a YOLO layout of segment lines made before their polygons were kept: its
recorded identity is its boxes' (the conversion then), still accepted; any other is refused."""

from __future__ import annotations

import pytest
import yaml
from PIL import Image

from evalharness.core.errors import EvalHarnessError
from evalharness.data.yolo_labels import yolo_ground_truth
from evalharness.rundir.reader import Run
from evalharness.tasks.coco.scorer import load_ground_truth


def _run(root, sha256: str) -> Run:
    dataset = {"format": "yolo", "ground_truth": str(root), "ground_truth_sha256": sha256}
    doc = {"task": "coco", "status": "complete", "provenance": {"dataset": dataset}}
    return Run("old", str(root / "run"), doc)


def test_a_run_recorded_with_its_boxes_identity_is_rescored(tmp_path):
    (tmp_path / "images/val").mkdir(parents=True)
    (tmp_path / "labels/val").mkdir(parents=True)
    Image.new("RGB", (8, 6)).save(tmp_path / "images/val/1.png")
    (tmp_path / "labels/val/1.txt").write_text("0 0.25 0.5 0.75 0.5 0.5 1.0\n")
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({"path": ".", "val": "images/val", "names": ["cat"]}))
    truth = yolo_ground_truth(tmp_path)[1]
    for recorded in (truth.sha256, truth.boxes_only_sha256):
        (ann,) = load_ground_truth(_run(tmp_path, recorded))["annotations"]
        assert "segmentation" in ann
    with pytest.raises(EvalHarnessError, match="changed since the run"):
        load_ground_truth(_run(tmp_path, "0" * 64))
