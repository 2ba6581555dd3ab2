"""The YOLO layout read as COCO ground truth (data/yolo_layout.py, data/yolo_labels.py): the arithmetic,
the category ids, the image ids, and each bad input as one error naming the file and the line."""

from __future__ import annotations

import os

import pytest
import yaml
from PIL import Image

from evalharness.core.errors import DataError
from evalharness.data.yolo_labels import coco_categories, convert, yolo_ground_truth
from evalharness.data.yolo_layout import find_layout, read_layout

W, H = 8, 6


def layout(root, labels: dict[str, str], names=("cat", "dog"), images=("1.png", "2.png"), **extra):
    (root / "images/val").mkdir(parents=True)
    (root / "labels/val").mkdir(parents=True)
    for name in images:
        Image.new("RGB", (W, H)).save(root / "images/val" / name)
    for stem, text in labels.items():
        (root / "labels/val" / f"{stem}.txt").write_text(text)
    data = {"path": ".", "val": "images/val", "names": list(names), **extra}
    (root / "data.yaml").write_text(yaml.safe_dump(data))
    return root


def test_boxes_in_pixels_by_the_exact_arithmetic(tmp_path):
    layout(tmp_path, {"1": "1 0.5 0.5 0.25 0.5\n\n0 0.125 0.25 0.25 0.5\n"})
    layout_, truth = yolo_ground_truth(tmp_path)
    doc = truth.annotations
    assert [(a["category_id"], a["bbox"], a["area"], a["iscrowd"]) for a in doc["annotations"]] == [
        (2, [(0.5 - 0.125) * W, (0.5 - 0.25) * H, 0.25 * W, 0.5 * H], 0.25 * W * 0.5 * H, 0),
        (1, [0.0, 0.0, 2.0, 3.0], 6.0, 0),
    ]
    assert [(i["id"], i["file_name"], i["width"], i["height"]) for i in doc["images"]] == [
        (1, "1.png", W, H),
        (2, "2.png", W, H),
    ]
    assert truth.unlabeled == 1 and truth.image_ids == "the file names' numbers"
    assert doc["categories"] == [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}]
    assert layout_.labels == (tmp_path / "labels/val").resolve()


def test_a_segment_line_is_read_as_its_bounding_box(tmp_path):
    """Ultralytics' COCO labels are segments by default; its detection validation boxes them."""
    layout(tmp_path, {"1": "1 0.25 0.5 0.75 0.5 0.5 1.0\n"})
    (ann,) = yolo_ground_truth(tmp_path)[1].annotations["annotations"]
    assert ann["bbox"] == [0.25 * W, 0.5 * H, 0.5 * W, 0.5 * H] and ann["area"] == 0.5 * W * 0.5 * H


def test_coco_names_take_the_standard_80_to_91_ids(tmp_path):
    coco = coco_categories()
    assert len(coco) == 80 and coco[11] == (13, "stop sign") and coco[-1] == (90, "toothbrush")
    layout(tmp_path, {"1": "11 0.5 0.5 0.1 0.1\n79 0.5 0.5 0.1 0.1\n"}, names=[n for _, n in coco])
    truth = convert(read_layout(tmp_path))
    assert [a["category_id"] for a in truth.annotations["annotations"]] == [13, 90]
    assert truth.category_ids.startswith("COCO's 80 names")


def test_names_as_a_mapping_and_ids_by_position(tmp_path):
    layout(tmp_path, {"b": "1 0.5 0.5 0.1 0.1\n"}, names=(), images=("b.png", "a.png"))
    data = yaml.safe_load((tmp_path / "data.yaml").read_text())
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({**data, "names": {0: "cat", 1: "dog"}}))
    truth = convert(read_layout(tmp_path))
    assert [(i["id"], i["file_name"]) for i in truth.annotations["images"]] == [(1, "a.png"), (2, "b.png")]
    assert truth.annotations["annotations"][0]["image_id"] == 2
    assert truth.image_ids.startswith("positions")


def test_found_from_the_yaml_the_folder_or_the_image_folder(tmp_path):
    layout(tmp_path, {})
    assert find_layout(tmp_path) == tmp_path / "data.yaml"
    assert find_layout(tmp_path / "data.yaml") == tmp_path / "data.yaml"
    assert find_layout(tmp_path / "images/val") == tmp_path / "data.yaml"
    assert read_layout(tmp_path / "images/val").images == (tmp_path / "images/val").resolve()
    assert find_layout(tmp_path / "labels") is None


def test_a_moved_dataset_is_found_beside_its_yaml_and_said(tmp_path):
    layout(tmp_path, {}, path="/nowhere/datasets/coco")
    found = read_layout(tmp_path)
    assert found.images == (tmp_path / "images/val").resolve()
    assert "has no images/val" in found.notes[0]


def _error(tmp_path, labels=None, **kwargs) -> str:
    layout(tmp_path, labels or {}, **kwargs)
    with pytest.raises(DataError) as info:
        yolo_ground_truth(tmp_path)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("0 0.5 0.5 0.25", "4 numbers; a detection label line is 'class cx cy w h'"),
        ("0 0.1 0.1 0.2 0.2 0.3", "6 numbers"),
        ("0 0.1 0.1 1.5 0.2 0.3 0.3", "x 1.5 is outside [0, 1]"),
        ("2 0.5 0.5 0.25 0.25", "class 2 is not in data.yaml names (0..1)"),
        ("-1 0.5 0.5 0.25 0.25", "class -1 is not in data.yaml names"),
        ("0.5 0.5 0.5 0.25 0.25", "class 0.5 is not in data.yaml names"),
        ("0 1.2 0.5 0.25 0.25", "cx 1.2 is outside [0, 1] (tolerance 1e-06)"),
        ("0 0.5 0.5 -0.01 0.25", "w -0.01 is outside [0, 1]"),
        ("0 nan 0.5 0.25 0.25", "'nan' is not a finite number"),
        ("0 0.5 x 0.25 0.25", "'x' is not a finite number"),
        ("0 0.5 0.5 0.2_5 0.25", "'0.2_5' is not a finite number"),  # Python's float() reads it
        ("0 0.5 0.5 0.25 -inf", "'-inf' is not a finite number"),
    ],
)
def test_a_bad_line_is_one_error_naming_file_and_line(tmp_path, line, says):
    message = _error(tmp_path, {"1": f"0 0.5 0.5 0.1 0.1\n{line}\n"})
    assert f"{os.path.join('labels', 'val', '1.txt')}:2: " in message and says in message


def test_a_coordinate_within_the_tolerance_is_read(tmp_path):
    layout(tmp_path, {"1": "0 1.0000004 0.5 0.1 0.1\n"})
    assert len(yolo_ground_truth(tmp_path)[1].annotations["annotations"]) == 1


@pytest.mark.parametrize(
    ("names", "says"),
    [(None, "has no names"), ([], "has no names"), ({1: "a"}, "not the class indices 0..n-1")],
)
def test_data_yaml_without_names_is_one_error(tmp_path, names, says):
    layout(tmp_path, {})
    data = yaml.safe_load((tmp_path / "data.yaml").read_text())
    (tmp_path / "data.yaml").write_text(yaml.safe_dump({**data, "names": names}))
    with pytest.raises(DataError, match=says):
        read_layout(tmp_path)


def test_data_yaml_is_untrusted_yaml(tmp_path):
    layout(tmp_path, {})
    (tmp_path / "data.yaml").write_text("names: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(DataError, match="data.yaml"):
        read_layout(tmp_path)


def test_no_box_at_all_is_refused(tmp_path):
    assert "holds no box to score against" in _error(tmp_path, {"1": "\n"})


def test_images_and_labels_without_data_yaml_is_one_error(tmp_path):
    layout(tmp_path, {})
    (tmp_path / "data.yaml").unlink()
    assert find_layout(tmp_path) == tmp_path / "data.yaml"
    with pytest.raises(DataError, match=r"data.yaml not found \(YOLO layout at .*\); write data.yaml"):
        read_layout(tmp_path)


def test_a_label_that_is_no_regular_file_is_refused_not_skipped(tmp_path):
    layout(tmp_path, {"1": "0 0.5 0.5 0.1 0.1\n"})
    os.mkfifo(tmp_path / "labels/val/2.txt")
    with pytest.raises(DataError, match="2.txt"):
        yolo_ground_truth(tmp_path)
