"""Own data through a dataset preset is named after the user's folder (issue 43: own COCO images
were labelled dataset=coco_sample in the summary, the diff and the PR comment)."""

from __future__ import annotations

from evalharness.settings.dataset_name import dataset_named

PRESET = {"name": "coco_sample", "root": "/pkg/coco/images", "annotations": "/pkg/coco/instances_sample.json"}


def test_a_root_given_on_the_command_line_names_the_dataset():
    mine = {**PRESET, "root": "data/coco/val5/", "annotations": "data/coco/instances_val5.json"}
    overrides = ["task=coco", "dataset.root=data/coco/val5/", f"dataset.annotations={mine['annotations']}"]
    assert dataset_named(mine, overrides)["name"] == "val5"


def test_annotations_alone_name_it_by_the_file_stem():
    mine = {**PRESET, "annotations": "/d/instances_mine.json"}
    assert dataset_named(mine, ["dataset.annotations=/d/instances_mine.json"])["name"] == "instances_mine"


def test_the_preset_and_a_given_name_are_kept():
    assert dataset_named(PRESET, ["task=coco"])["name"] == "coco_sample"
    mine = {**PRESET, "name": "street", "root": "/d/imgs"}
    assert dataset_named(mine, ["dataset.root=/d/imgs", "dataset.name=street"])["name"] == "street"
