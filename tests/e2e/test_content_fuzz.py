"""Generated damage to what a file says, not whether it opens: label files, csv ground truth and COCO
annotations, each variant run for real on the bundled sample or COCO val5. The invariant for every
variant: either one error naming the file (never an internal error), or a result equal to the
undamaged one — never a run that scores against silently moved ground truth. COCO variants may also
end ``invalid`` (exit 1), never with an AP outside [0, 1]."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import ASSETS, MODELS, run_inprocess

from evalharness.core.errors import EvalHarnessError, RunStopped
from evalharness.core.paths import BUNDLED_DIR

LABELS = (BUNDLED_DIR / "imagenet_labels_1001.txt").read_text().splitlines()
CSV = (BUNDLED_DIR / "labels.csv").read_text().splitlines()
GT_TEXT = CSV[1].split(",", 1)[1].strip('"')  # a class the sample's ground truth uses
GT_LINE = LABELS.index(GT_TEXT)

LABEL_VARIANTS = {
    "empty": "",
    "blank lines only": "\n\n\n",
    "a ground-truth class twice": "\n".join([*LABELS[:5], GT_TEXT, *LABELS[6:]]) + "\n",
    "another class twice": "\n".join([*LABELS[:5], LABELS[7], *LABELS[6:]]) + "\n",
    "a line removed": "\n".join(LABELS[:GT_LINE - 3] + LABELS[GT_LINE - 2 :]) + "\n",
    "the background line removed": "\n".join(LABELS[1:]) + "\n",
    "a line added": "\n".join(["extra", *LABELS]) + "\n",
    "byte-order mark": "\ufeff" + "\n".join(LABELS) + "\n",
    "CRLF line ends": "\r\n".join(LABELS) + "\r\n",
    "trailing spaces": "\n".join(f"{line}  " for line in LABELS) + "\n",
    "no final newline": "\n".join(LABELS),
    "a very long line": "\n".join([*LABELS[:3], "x" * 100_000, *LABELS[4:]]) + "\n",
}
CSV_VARIANTS = {
    "empty": "",
    "header only": CSV[0] + "\n",
    "no header": "\n".join(CSV[1:]) + "\n",
    "a row twice, same label": "\n".join([*CSV, CSV[1]]) + "\n",
    "a row twice, other label": "\n".join([*CSV, CSV[1].split(",")[0] + ",Egyptian cat"]) + "\n",
    "a row for a missing file": "\n".join([*CSV, "missing.png,tabby"]) + "\n",
    "a label the model lacks": "\n".join([CSV[0], CSV[1].split(",")[0] + ",no such class", *CSV[2:]]) + "\n",
    "an extra column": "\n".join([CSV[0] + ",note", *(row + ",x" for row in CSV[1:])]) + "\n",
    "byte-order mark and CRLF": "\ufeff" + "\r\n".join(CSV) + "\r\n",
    "class_index out of range": "filename,class_index\n" + CSV[1].split(",")[0] + ",5000\n",
    "class_index not a number": "filename,class_index\n" + CSV[1].split(",")[0] + ",three\n",
    "a binary file": "\x00\x01\x02\xff",
}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict:
    return run_inprocess([], tmp_path_factory.mktemp("reference"))["metrics"]


def outcome(overrides: list[str], run_dir, damaged) -> dict | None:
    """The metrics of a run, or None when it was refused by one line naming ``damaged`` (or the
    model's label file the damaged ground truth disagrees with)."""
    try:
        return run_inprocess(overrides, run_dir)["metrics"]
    except RunStopped:
        raise
    except EvalHarnessError as exc:
        message = str(exc)
        assert "\n" not in message and (str(damaged) in message or "labels file" in message), message
        assert "internal error" not in message, message
        return None


@pytest.mark.parametrize("variant", LABEL_VARIANTS)
def test_label_file(variant, reference, tmp_path):
    damaged = tmp_path / "labels.txt"
    damaged.write_bytes(LABEL_VARIANTS[variant].encode("utf-8", "surrogateescape"))
    metrics = outcome([f"model.labels={damaged}"], tmp_path / "run", damaged)
    if metrics is not None:
        assert {k: metrics[k] for k in ("top1", "top5", "num_scored")} == {
            k: reference[k] for k in ("top1", "top5", "num_scored")
        }, variant


@pytest.mark.parametrize("variant", CSV_VARIANTS)
def test_csv_ground_truth(variant, reference, tmp_path):
    damaged = tmp_path / "gt.csv"
    damaged.write_bytes(CSV_VARIANTS[variant].encode("utf-8", "surrogateescape"))
    overrides = [f"dataset.ground_truth={damaged}", "dataset.format=csv"]
    if "class_index" in variant:
        overrides.append(f"dataset.class_names={BUNDLED_DIR / 'imagenet_classes.txt'}")
    metrics = outcome(overrides, tmp_path / "run", damaged)
    if metrics is not None:
        assert metrics["num_scored"] <= metrics["num_images"]
        assert {k: metrics[k] for k in ("top1", "num_scored")} == {
            k: reference[k] for k in ("top1", "num_scored")
        }, variant


def _coco() -> dict:
    return json.loads((ASSETS / "coco" / "instances_val5.json").read_text())


def _first_image_id_as_text(gt: dict) -> None:
    old = gt["images"][0]["id"]
    gt["images"][0]["id"] = str(old)
    for ann in gt["annotations"]:
        if ann["image_id"] == old:
            ann["image_id"] = str(old)


COCO_VARIANTS = {
    "no images": lambda gt: gt.update(images=[]),
    "no annotations": lambda gt: gt.update(annotations=[]),
    "no categories": lambda gt: gt.update(categories=[]),
    "an annotation id twice": lambda gt: gt["annotations"][1].update(id=gt["annotations"][0]["id"]),
    "an image id as text": _first_image_id_as_text,
    "a box outside its image": lambda gt: gt["annotations"][0].update(bbox=[5000.0, 5000.0, 10.0, 10.0]),
    "a box of zero size": lambda gt: gt["annotations"][0].update(bbox=[10.0, 10.0, 0.0, 0.0]),
    "a category without annotations": lambda gt: gt["categories"].append({"id": 999, "name": "unicorn"}),
    "an annotation of an unknown category": lambda gt: gt["annotations"][0].update(category_id=999),
    "an annotation of an unknown image": lambda gt: gt["annotations"][0].update(image_id=123),
    "two ids, one file": lambda gt: gt["images"].append({**gt["images"][0], "id": 777}),
    "a negative width": lambda gt: gt["images"][0].update(width=-640),
    "every box a crowd": lambda gt: [a.update(iscrowd=1) for a in gt["annotations"]],
    "a top level that is a list": lambda gt: gt.update(images=gt["images"][0]),
}


@pytest.mark.parametrize("variant", COCO_VARIANTS)
def test_coco_annotations(variant, tmp_path):
    gt = _coco()
    COCO_VARIANTS[variant](gt)
    damaged = tmp_path / "instances.json"
    damaged.write_text(json.dumps(gt))
    shutil.copytree(ASSETS / "coco" / "val5", tmp_path / "images")
    overrides = ["task=coco", f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "dataset=coco_val5",
                 f"dataset.root={tmp_path / 'images'}", f"dataset.annotations={damaged}"]  # fmt: skip
    try:
        metrics = outcome(overrides, tmp_path / "run", damaged)
    except RunStopped:  # invalid or failed checks: recorded as such, exit 1
        doc = json.loads((tmp_path / "run" / "metrics.json").read_text())
        assert doc["status"] in ("invalid", "complete") and doc["stop_reason"] or doc["status"] == "complete"
        return
    if metrics is not None:
        assert 0 <= metrics["AP"] <= 1 and metrics["num_scored"] <= metrics["num_images"], variant
