"""Detection ground truth is read by one reader per layout, picked by name from one registry, by the
run and by a rescore alike (no ``format == "yolo"`` switch in either)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import ConfigError
from evalharness.tasks.coco.ground_truth_readers import DETECTION_TRUTH, DetectionTruthReader

INSTANCES = {
    "images": [{"id": 1, "file_name": "a.jpg", "width": 4, "height": 3}],
    "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2], "area": 4, "iscrowd": 0}
    ],
    "categories": [{"id": 1, "name": "person"}],
}


def test_each_layout_is_one_registered_reader():
    assert DETECTION_TRUTH.names() == ["coco", "yolo"]
    assert all(issubclass(DETECTION_TRUTH.get(n), DetectionTruthReader) for n in DETECTION_TRUTH.names())


def test_an_instances_json_is_read_and_read_again_by_its_reader(tmp_path):
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(INSTANCES))
    (tmp_path / "a.jpg").write_bytes(b"")
    dataset = SimpleNamespace(root=str(tmp_path), annotations=str(path), split="auto")
    reader = DETECTION_TRUTH.get("coco")()
    truth = reader.read(dataset, [])
    assert truth.format == "coco" and truth.root == str(tmp_path) and truth.sha256 == sha256_file(str(path))
    again, digest = reader.read_again(str(path), None, truth.sha256)
    assert again["images"] == INSTANCES["images"] and digest == truth.sha256
    with pytest.raises(ConfigError, match="dataset.split=val chooses a split of a YOLO layout"):
        reader.read(SimpleNamespace(**{**vars(dataset), "split": "val"}), [])
    with pytest.raises(ConfigError, match="dataset.annotations=.* is set too"):
        DETECTION_TRUTH.get("yolo")().read(dataset, [])
