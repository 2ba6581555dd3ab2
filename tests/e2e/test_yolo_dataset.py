"""task=coco on an Ultralytics YOLO layout: coco/val25 written as one (tests/yolo_dataset.py) scores like
its instances JSON, detection by detection.

The layout holds no crowd regions (Ultralytics' converter drops them), so the reference run scores the
same JSON without its 2 crowd annotations. AP, AP50, AP75 and the ARs over all areas are equal; the
small/medium/large figures may differ, and only they: a YOLO box's area is w*h, COCO's is its
segmentation's, so a box can fall in another area range.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from conftest import ASSETS, MODELS, make_runs, run_cli, run_inprocess
from yolo_dataset import without_crowd, write_layout

from evalharness.core.errors import ConfigError, DataError
from evalharness.data.yolo_labels import yolo_ground_truth
from evalharness.inspect.facts import main as inspect_main
from evalharness.report.commands import entry as cli
from evalharness.runtime.modelgen import constant_output_model

COCO = ["task=coco", f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "task.bootstrap_resamples=0"]
ALL_AREAS = ("AP", "AP50", "AP75", "AR1", "AR10", "AR100")


def _write_yolo25(base) -> None:
    """val25's instances JSON without crowd and the same images and boxes as a YOLO layout."""
    base.mkdir()
    instances = json.loads((ASSETS / "coco/instances_val25.json").read_text())
    (base / "instances_nocrowd.json").write_text(json.dumps(without_crowd(instances)))
    write_layout(instances, ASSETS / "coco/val25", base / "coco-yolo")


@pytest.fixture(scope="module")
def runs(run_store):
    """(instances JSON without crowd, the layout, the JSON run's dir and doc, the YOLO run's)."""
    base = run_store.once("yolo25", _write_yolo25)
    reference, layout = base / "instances_nocrowd.json", base / "coco-yolo"
    made = make_runs(
        run_store,
        COCO,
        {
            "json": ["dataset=coco_val25", f"dataset.annotations={reference}"],
            # format auto: the layout is detected from its names, and the run says so
            "yolo": ["dataset=yolo", "dataset.format=auto", f"dataset.root={layout}"],
        },
    )
    json_dir, yolo_dir = made["json"], made["yolo"]
    json_doc, yolo_doc = (json.loads((d / "metrics.json").read_text()) for d in (json_dir, yolo_dir))
    return reference, layout, (json_dir, json_doc), (yolo_dir, yolo_doc)


def _predictions(run_dir):
    """Each record without its time (the one field two runs of the same images differ in)."""
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return [{k: v for k, v in json.loads(line).items() if k != "latency_ms"} for line in lines]


def test_every_detection_identical_and_ap_equal(runs):
    _, _, (json_dir, json_doc), (yolo_dir, yolo_doc) = runs
    assert json_doc["status"] == yolo_doc["status"] == "complete"
    assert _predictions(json_dir) == _predictions(yolo_dir)  # ids, image ids, every box and score
    assert json_doc["metrics"]["num_detections"] == yolo_doc["metrics"]["num_detections"] == 250
    for name in ALL_AREAS:
        assert yolo_doc["metrics"][name] == json_doc["metrics"][name], name
    assert yolo_doc["metrics"]["per_class"] == json_doc["metrics"]["per_class"]


def test_converted_boxes_are_the_json_boxes(runs):
    reference, layout, _, _ = runs
    truth = json.loads(reference.read_text())
    converted = yolo_ground_truth(layout)[1].annotations
    images = {i["id"]: (i["file_name"], i["width"], i["height"]) for i in truth["images"]}
    assert {i["id"]: (i["file_name"], i["width"], i["height"]) for i in converted["images"]} == images
    assert [c["id"] for c in converted["categories"]] == [c["id"] for c in truth["categories"]]
    want = sorted((a["image_id"], a["category_id"], *a["bbox"]) for a in truth["annotations"])
    got = sorted((a["image_id"], a["category_id"], *a["bbox"]) for a in converted["annotations"])
    assert len(got) == len(want) == 196
    for g, w in zip(got, want, strict=True):
        assert g[:2] == w[:2] and g[2:] == pytest.approx(w[2:], abs=1e-9)


def test_provenance_says_what_was_found(runs):
    _, layout, _, (yolo_dir, yolo_doc) = runs
    dataset = yolo_doc["provenance"]["dataset"]
    assert dataset["format"] == "yolo" and dataset["root"] == str(layout / "images/val2017")
    assert dataset["yolo"]["images_without_labels"] == 2  # 2 of val25's images hold no box
    assert dataset["yolo"]["category_ids"].startswith("COCO's 80 names")
    assumed = [a["what"] for a in yolo_doc["provenance"]["assumptions"]]
    assert assumed.count("dataset.format") == 1
    summary = (yolo_dir / "results.txt").read_text()
    assert "Assumed:  dataset.format = yolo" in summary
    assert "Assumed:  YOLO labels = 2 image(s) without a label file have no objects" in summary


def test_rescore_converts_the_labels_again(runs, capsys):
    """A rescore reads the layout again and checks the converted labels' sha256 against the run's."""
    code = cli.main(["rescore", str(runs[3][0]), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rescored = json.loads(out)
    assert rescored["reproduced"] is True and not rescored["mismatches"]
    assert {h["name"] for h in rescored["headline"] if h["equal"]} >= set(ALL_AREAS)


def test_a_bad_label_line_is_one_error_line(tmp_path):
    (tmp_path / "images/val").mkdir(parents=True)
    (tmp_path / "labels/val").mkdir(parents=True)
    os.symlink(ASSETS / "coco/val25/000000006818.jpg", tmp_path / "images/val/000000006818.jpg")
    (tmp_path / "labels/val/000000006818.txt").write_text("0 0.5 0.5 0.25\n")
    (tmp_path / "data.yaml").write_text("val: images/val\nnames: [person]\n")
    proc = run_cli([*COCO, "dataset=yolo", f"dataset.root={tmp_path}"], tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert len(errors) == 1 and "000000006818.txt:1: 4 numbers" in errors[0], proc.stderr


def test_a_yolo_head_under_the_default_task_is_told_task_coco(tmp_path):
    """A raw YOLO head ([1, 84, 8400]) run as a classifier gets the one line a detector gets: task=coco,
    with the decoder its output fits."""
    model = constant_output_model(str(tmp_path / "yolo_head.tflite"), [np.zeros((1, 84, 8400), np.float32)])
    proc = run_cli([f"model.path={model}"], tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(errors) == 1, proc.stderr
    assert "output shape [1, 84, 8400] is not one score vector [1, N]" in errors[0]
    assert errors[0].endswith("(is this a detector? use task=coco model.decoder.name=yolo)")


def test_inspect_says_what_was_found(runs, capsys):
    layout = runs[1]
    assert inspect_main(["--json", str(layout / "data.yaml")]) == 0
    view = json.loads(capsys.readouterr().out)
    assert (view["format"], view["samples"], view["classes"], view["details"]["objects"]) == (
        "yolo",
        25,
        80,
        196,
    )
    assert view["first_ids"][0] == "000000006818.jpg" and view["run"].startswith("task=coco dataset=yolo")
    assert inspect_main([str(layout)]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[:3] == [
        f"{layout}: yolo",
        "samples: 25",
        "classes: 80 (person | bicycle | car | motorcycle | airplane | ...)",
    ]


def test_a_yolo_layout_and_an_instances_json_at_once_is_refused(runs, tmp_path):
    reference, layout = runs[0], runs[1]
    overrides = ["dataset=coco_val25", "dataset.format=yolo", f"dataset.root={layout}"]
    with pytest.raises(ConfigError, match="dataset.format=yolo reads the labels") as info:
        run_inprocess([*COCO, *overrides, f"dataset.annotations={reference}"], tmp_path / "run")
    assert "\n" not in str(info.value)


def test_task_coco_on_a_yolo_layout_with_the_default_annotations_is_told_dataset_yolo(runs, tmp_path):
    with pytest.raises(DataError, match="is a YOLO layout: score its own labels with dataset=yolo"):
        run_inprocess([*COCO, f"dataset.root={runs[1]}"], tmp_path / "run")


def test_rescore_refuses_labels_changed_since_the_run(runs, capsys):
    label = runs[1] / "labels/val2017/000000006818.txt"
    before = label.read_text()
    try:
        label.write_text(before.replace("0.", "0.0", 1))  # one box moved: the converted content differs
        code = cli.main(["rescore", str(runs[3][0]), "--format", "json"])
        err = capsys.readouterr().err
    finally:
        label.write_text(before)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1 and "changed since the run (sha256 differs" in errors[0], err


def test_a_layout_with_train_and_val_scores_val_and_names_it(tmp_path, capsys):
    """data.yaml with ``train:`` beside ``val:``: the run scores the val images only, says which split
    it read, and a rescore reads the same split again."""
    instances = json.loads((ASSETS / "coco/instances_val5.json").read_text())
    data_yaml = write_layout(instances, ASSETS / "coco/val5", tmp_path / "layout")
    for sub in ("images", "labels"):
        (tmp_path / "layout" / sub / "train2017").mkdir()
    first = instances["images"][0]["file_name"]
    os.symlink(ASSETS / "coco/val5" / first, tmp_path / "layout/images/train2017/extra.jpg")
    (tmp_path / "layout/labels/train2017/extra.txt").write_text("0 0.5 0.5 0.2 0.2\n")
    data_yaml.write_text("train: images/train2017\n" + data_yaml.read_text())
    doc = run_inprocess([*COCO, "dataset=yolo", f"dataset.root={tmp_path / 'layout'}"], tmp_path / "run")
    assert doc["status"] == "complete" and doc["metrics"]["num_images"] == 5
    said = doc["provenance"]["dataset"]["dataset_split"]
    assert (said["name"], said["found"]) == ("val", ["train", "val"])
    out = capsys.readouterr().out
    assert "· split=val" in out and "Assumed:  dataset.split = val (" in out
    assert cli.main(["rescore", str(tmp_path / "run"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["reproduced"] is True
