"""``evalharness inspect DATASET``'s facts (data/describe.py): the format each layout is found as, its
samples, classes and first ids, and the run that would score it."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from evalharness.core.errors import DataError
from evalharness.data.describe import DESCRIBERS, describe_dataset
from evalharness.inspect.dataset_view import is_dataset_path, render_dataset


def _images(folder, *names):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        Image.new("RGB", (4, 4)).save(folder / name)


def test_a_yolo_layout(tmp_path):
    _images(tmp_path / "images/val", "b.jpg", "a.jpg")
    (tmp_path / "labels/val").mkdir(parents=True)
    (tmp_path / "labels/val/a.txt").write_text("1 0.5 0.5 0.5 0.5\n")
    (tmp_path / "data.yaml").write_text("val: images/val\nnames: {0: cat, 1: dog}\n")
    for path in (tmp_path, tmp_path / "data.yaml", tmp_path / "images/val"):
        view = describe_dataset(path)
        assert (view.format, view.samples, view.classes, view.class_names) == ("yolo", 2, 2, ["cat", "dog"])
        assert view.first_ids == ["a.jpg", "b.jpg"] and view.run.startswith("task=coco dataset=yolo")
        assert view.details["objects"] == 1 and view.details["images_without_labels"] == 1


@pytest.mark.parametrize(
    "line, yaml_extra, says",
    [
        ("0 0.1 0.1 0.5 0.1 0.3 0.4", "", ("boxes and masks (segment lines)", "mask AP (iouType segm)")),
        ("0 0.5 0.5 0.2 0.2 0.5 0.5 2", "kpt_shape: [1, 3]\n", ("boxes and keypoints", "keypoint AP (OKS)")),
    ],
)
def test_a_yolo_layout_of_segment_or_pose_lines_says_what_else_it_scores(tmp_path, line, yaml_extra, says):
    _images(tmp_path / "images/val", "a.jpg")
    (tmp_path / "labels/val").mkdir(parents=True)
    (tmp_path / "labels/val/a.txt").write_text(line + "\n")
    (tmp_path / "data.yaml").write_text(f"val: images/val\nnames: [person]\n{yaml_extra}")
    view = describe_dataset(tmp_path)
    assert says[0] in view.ground_truth and says[1] in view.scores


def test_a_folder_with_its_csv_class_folders_and_images_alone(tmp_path):
    _images(tmp_path / "csv", "x.png", "y.png")
    (tmp_path / "csv/labels.csv").write_text("filename,label\nx.png,cat\ny.png,\x1b[2Jdog\n")
    view = describe_dataset(tmp_path / "csv")
    assert (view.format, view.samples, view.classes, view.details) == ("csv", 2, 2, {"not_scored": {}})
    assert "\x1b" not in "\n".join(render_dataset(view))  # text from files is escaped where shown
    _images(tmp_path / "folders/cat", "1.png")
    _images(tmp_path / "folders/dog", "2.png", "3.png")
    view = describe_dataset(tmp_path / "folders")
    assert (view.format, view.samples, view.class_names, view.first_ids[0]) == (
        "imagefolder",
        3,
        ["cat", "dog"],
        "cat/1.png",
    )
    _images(tmp_path / "plain", "1.png")
    assert describe_dataset(tmp_path / "plain").format == "images"


def test_a_val_txt_lists_class_indices(tmp_path):
    _images(tmp_path / "val", "a.JPEG", "b.JPEG")
    (tmp_path / "val.txt").write_text("a.JPEG 3\nb.JPEG 7\nc.JPEG 7\n")
    view = describe_dataset(tmp_path / "val")
    assert (view.format, view.samples, view.classes) == ("val_txt", 2, 2)
    assert "dataset.class_names=" in view.run and view.details == {"lines": 3, "images_in_folder": 2}
    (tmp_path / "synset_words.txt").write_text("n01 a\n")  # ILSVRC's class list kept beside: named
    assert f"dataset.synset_words={tmp_path / 'synset_words.txt'}" in describe_dataset(tmp_path / "val").run


def test_a_list_beside_one_image_subfolder_is_described_as_that_pair(tmp_path):
    """ILSVRC's layout: ``val.txt`` beside ``val50/`` (no image beside the list): the pair, said once."""
    _images(tmp_path / "val50", "a.JPEG", "b.JPEG")
    (tmp_path / "val.txt").write_text("a.JPEG 3\nb.JPEG 7\nc.JPEG 7\n")
    view = describe_dataset(tmp_path)
    assert (view.format, view.samples, view.path) == ("val_txt", 2, str(tmp_path / "val50"))
    assert f"dataset.root={tmp_path / 'val50'} dataset.ground_truth={tmp_path / 'val.txt'}" in view.run
    [note] = view.details["notes"]
    said = "described as val50/ (the one subfolder holding images) with val.txt; the run below passes both"
    assert note == f"no images in {tmp_path}: {said}"
    assert f"note: {note}" in render_dataset(view)
    _images(tmp_path / "other", "c.JPEG")  # two image subfolders: which is the user's is not guessed
    with pytest.raises(DataError, match=r"the images are in one of other/, val50/: inspect that folder"):
        describe_dataset(tmp_path)


def test_an_empty_count_by_reason_is_not_printed_and_kept_in_json(tmp_path):
    _images(tmp_path, "x.png")
    (tmp_path / "labels.csv").write_text("filename,label\nx.png,cat\n")
    view = describe_dataset(tmp_path)
    assert view.as_dict()["details"] == {"not_scored": {}}
    assert not any(line.startswith("not_scored") for line in render_dataset(view))
    (tmp_path / "notes.md").write_text("not an image")
    assert "not_scored: {'extension .md not read': 1}" in render_dataset(describe_dataset(tmp_path))


def test_what_is_no_dataset_is_one_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="is no dataset evalharness reads"):
        describe_dataset(tmp_path / "empty")
    with pytest.raises(DataError, match="not found"):
        describe_dataset(tmp_path / "missing")
    assert (
        is_dataset_path(str(tmp_path)) and is_dataset_path("x/data.yaml") and not is_dataset_path("m.tflite")
    )


def test_another_format_plugs_in_with_one_describer():
    assert {"yolo", "coco_json", "folder"} <= set(DESCRIBERS.names())


def test_a_coco_instances_json(tmp_path):
    doc = {
        "images": [{"id": 2, "file_name": "b.jpg"}, {"id": 1, "file_name": "a.jpg"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 3, "bbox": [0, 0, 1, 1], "area": 1, "iscrowd": 0},
            {"id": 2, "image_id": 2, "category_id": 3, "bbox": [0, 0, 1, 1], "area": 1, "iscrowd": 1},
        ],
        "categories": [{"id": 3, "name": "car"}],
    }
    (tmp_path / "instances.json").write_text(json.dumps(doc))
    view = describe_dataset(tmp_path / "instances.json")
    assert (view.format, view.samples, view.class_names, view.first_ids) == (
        "coco_json",
        2,
        ["car"],
        ["a.jpg", "b.jpg"],
    )
    assert view.details == {"objects": 1, "crowd_regions": 1}
