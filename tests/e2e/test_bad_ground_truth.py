"""Bad ground truth, labels, COCO annotations, models and config: one line naming the file and the
fix, before the loop (no image read, no predictions). Cases already in test_errors.py,
test_ground_truth.py, test_labels.py, test_coco_metrics.py and test_decoders.py are not repeated.

Decisions checked here:
- ground truth covering MORE images than the root is fine for val_txt/devkit (val.txt lists all
  50,000 val images, any subset folder uses it), but a csv names the images of its own folder: a
  row whose image is missing is an error; label_lines is positional and needs equal counts.
- images of the root without ground truth are always an error; so are images lying loose in an
  imagefolder root beside its class dirs.
- extra images in a COCO image dir are ignored (the annotation file defines the dataset); an
  annotated image missing from the dir is an error.
- a label text that the model's label file has twice (ImageNet's two "crane"s), given as text only
  (csv label column, label_lines, class-name dirs), means its first occurrence, as TFLite's tool
  (std::find); class_index + class list or wnid tell the two apart.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import ASSETS, MODELS, run_cli, run_inprocess

from evalharness.core.errors import ConfigError, DataError, EvalHarnessError, ModelMismatchError
from evalharness.core.paths import BUNDLED_DIR
from evalharness.data.coco_annotations import IMAGE_FILE_KEYS, check_annotations, load_annotations
from evalharness.data.ground_truth import load_ground_truth
from evalharness.runtime.modelgen import constant_output_model

VAL50 = ASSETS / "imagenet" / "val50"
CANOE, CHOW = "ILSVRC2012_val_00000347.JPEG", "ILSVRC2012_val_00000355.JPEG"
LABELS_1001 = BUNDLED_DIR / "imagenet_labels_1001.txt"
CLASS_NAMES = BUNDLED_DIR / "imagenet_classes.txt"
FORMAT_HINT = "COCO instances format: https://cocodataset.org/#format-data"
COCO = ["task=coco", f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "dataset=coco_val5"]


@pytest.fixture
def no_image_read(monkeypatch):
    """Every error here must come before the loop: reading an image fails the test."""
    import evalharness.data.preprocess as pre

    monkeypatch.setattr(pre, "decode_rgb", lambda *a: pytest.fail("an image was read"))


def folder(root: Path, *names: str) -> Path:
    """root/ holding copies of the val50 images named (canoe, chow) in that order."""
    root.mkdir(parents=True, exist_ok=True)
    for name, real in zip(names, (CANOE, CHOW), strict=False):
        shutil.copy(VAL50 / real, root / name)
    return root


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def load(fmt: str, root: Path, gt: Path | None = None, class_names: Path | None = None):
    return load_ground_truth(
        fmt, str(root), *(None if p is None else str(p) for p in (gt, class_names)), None, None
    )


def csv_run(root: Path, gt: Path) -> list[str]:
    return [f"dataset.root={root}", f"dataset.ground_truth={gt}", "dataset.format=csv"]


# --- classification ground truth -------------------------------------------------------------


def test_csv_row_without_its_image_is_an_error(tmp_path):
    root = folder(tmp_path / "data", "a.JPEG")
    gt = write(tmp_path / "gt.csv", "filename,label\na.JPEG,canoe\nlost.JPEG,macaw\ngone.JPEG,macaw\n")
    with pytest.raises(DataError) as exc:
        load("csv", root, gt)
    assert str(exc.value) == (
        f"{gt}:3: lost.JPEG is not an image in {root} (2 of 3 csv rows name no image there); "
        "restore the images or delete those rows"
    )


def test_val_txt_may_cover_more_images_than_the_root(tmp_path):
    root = folder(tmp_path / "data", CANOE)
    gt = write(tmp_path / "val.txt", f"{CHOW} 260\n{CANOE} 472\nILSVRC2012_val_00000001.JPEG 65\n")
    assert [(s.key, s.label) for s in load("val_txt", root, gt, CLASS_NAMES)] == [(CANOE, "canoe")]


@pytest.mark.parametrize(
    ("fmt", "text", "line"),
    [
        ("csv", f"filename,label\n{CANOE},canoe\n{CHOW},chow\n{CANOE},canoe\n", 4),
        ("val_txt", f"{CANOE} 472\n{CHOW} 260\n{CANOE} 472\n", 3),
    ],
)
def test_image_listed_twice(tmp_path, fmt, text, line):
    root = folder(tmp_path / "data", CANOE, CHOW)
    gt = write(tmp_path / f"gt.{fmt}", text)
    with pytest.raises(DataError) as exc:
        load(fmt, root, gt, CLASS_NAMES if fmt == "val_txt" else None)
    assert str(exc.value) == f"{gt}:{line}: {CANOE} is listed twice; keep one line per image"


def test_images_loose_in_an_imagefolder_root(tmp_path):
    root = tmp_path / "folder"
    folder(root / "canoe", "a.JPEG")
    folder(root, "stray.JPEG")
    with pytest.raises(DataError) as exc:
        load("imagefolder", root)
    assert str(exc.value) == (
        f"1 image(s) lie directly in imagefolder root {root} with no class dir (first: stray.JPEG); "
        "move them into root/<class>/ or remove them"
    )


def test_label_unknown_to_the_model_fails_before_the_loop(tmp_path, no_image_read):
    root = folder(tmp_path / "data", "a.JPEG")
    gt = write(tmp_path / "gt.csv", "filename,label\na.JPEG,canoee\n")
    with pytest.raises(ModelMismatchError) as exc:
        run_inprocess(csv_run(root, gt), tmp_path / "run")
    assert str(exc.value) == (
        f"ground-truth label 'canoee' is not in labels file {LABELS_1001} (closest: 'canoe'); "
        "pass the label file that matches the model (model.labels=...) or fix the dataset's class names"
    )
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_class_list_with_a_duplicated_label(tmp_path, no_image_read):
    """Line 0 of the class list says "canoe" too: the real canoe becomes the 2nd "canoe", which the
    model's label file lacks, so the mismatch is found before the loop instead of mis-scoring."""
    classes = CLASS_NAMES.read_text().splitlines()
    classes[0] = "canoe"
    class_names = write(tmp_path / "classes.txt", "\n".join(classes) + "\n")
    root = folder(tmp_path / "data", CANOE)
    gt = write(tmp_path / "val.txt", f"{CANOE} 472\n")
    overrides = [f"dataset.root={root}", f"dataset.ground_truth={gt}", "dataset.format=val_txt"]
    with pytest.raises(ModelMismatchError) as exc:
        run_inprocess([*overrides, f"dataset.class_names={class_names}"], tmp_path / "run")
    assert str(exc.value) == (
        f"ground-truth label 'canoe' (occurrence 1) appears only 1 time(s) in labels file {LABELS_1001}; "
        "pass the label file that matches the model (model.labels=...)"
    )


def test_text_only_label_repeated_in_the_model_labels_is_refused_naming_both_lines(tmp_path):
    """'crane' is the bird (line 136) and the machine (line 519): a text alone cannot say which, so
    the run is refused instead of scoring against the first (class_index or wnid tells them apart)."""
    root = folder(tmp_path / "data", "a.JPEG")
    gt = write(tmp_path / "gt.csv", "filename,label\na.JPEG,crane\n")
    refused = "'crane' is on lines 136 and 519 of labels file .*class_index"
    with pytest.raises(ModelMismatchError, match=refused):
        run_inprocess(csv_run(root, gt), tmp_path / "run")
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_model_file_given_as_the_label_file(tmp_path):
    labels = MODELS / "mobilenet_v1_0.25_128_quant.tflite"
    with pytest.raises(DataError) as exc:
        run_inprocess([f"model.labels={labels}"], tmp_path)
    assert str(exc.value) == (
        f"label file {labels} is not UTF-8 text (invalid start byte at byte 57); "
        "pass a text file with one label per line"
    )


# --- COCO annotations ---------------------------------------------------------------------------


def coco_gt() -> dict:
    return json.loads((ASSETS / "coco" / "instances_val5.json").read_text())


def _set(section: str, key: str, value):
    def edit(gt: dict) -> None:
        gt[section][1][key] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            _set("annotations", "image_id", 999),
            "annotations[1] has image_id 999, which is the id of no image in 'images'",
        ),
        (
            _set("annotations", "category_id", 12),  # 12 is a gap in COCO's 90 ids
            "annotations[1] has category_id 12, which is the id of no category in 'categories'",
        ),
        (
            _set("annotations", "bbox", [1, 2, 3]),
            "annotations[1] has bbox [1, 2, 3]; a box is [x, y, width, height], 4 finite numbers",
        ),
        (
            _set("annotations", "bbox", [1, 2, -3, 4]),
            "annotations[1] has bbox [1, 2, -3, 4] with a negative width or height",
        ),
        (_set("annotations", "iscrowd", 2), "annotations[1] has iscrowd 2; use 0 or 1"),
        (_set("annotations", "area", "big"), "annotations[1] has area 'big', not a number >= 0"),
        (_set("images", "id", "abc"), "images[1] has id 'abc', not an integer"),
        (_set("images", "width", 0), "images[1] has width 0, not a positive integer"),
        (_set("categories", "id", 1), "categories[1] has id 1 a second time (ids must be unique)"),
    ],
    ids=[
        "unknown_image",
        "unknown_category",
        "short_bbox",
        "negative_bbox",
        "iscrowd",
        "area",
        "id_type",
        "width",
        "dup_id",
    ],
)
def test_malformed_coco_annotations_name_the_file_and_the_entry(tmp_path, edit, problem):
    gt = coco_gt()
    edit(gt)
    path = write(tmp_path / "instances.json", json.dumps(gt))
    with pytest.raises(DataError) as exc:
        load_annotations(path)
    assert str(exc.value) == f"{path}: {problem}; {FORMAT_HINT}"


def test_annotations_for_files_need_file_name_width_height(tmp_path):
    gt = coco_gt()
    del gt["images"][2]["file_name"]
    check_annotations(gt)  # enough to score in memory
    path = write(tmp_path / "instances.json", json.dumps(gt))
    with pytest.raises(DataError) as exc:
        load_annotations(path, image_keys=IMAGE_FILE_KEYS)
    assert str(exc.value) == f"{path}: images[2] lacks 'file_name'; {FORMAT_HINT}"


def test_coco_task_image_without_file_name_is_a_data_error(tmp_path, no_image_read):
    gt = coco_gt()
    del gt["images"][2]["file_name"]
    path = write(tmp_path / "instances.json", json.dumps(gt))
    with pytest.raises(DataError, match="images\\[2\\] lacks 'file_name'"):
        run_inprocess([*COCO, f"dataset.annotations={path}"], tmp_path / "run")


def test_coco_annotations_listing_images_not_in_the_dir(tmp_path, no_image_read):
    ann = ASSETS / "coco" / "instances_val25.json"
    with pytest.raises(DataError) as exc:
        run_inprocess([*COCO, f"dataset.annotations={ann}"], tmp_path / "run")
    assert str(exc.value) == (
        f"20 image(s) listed in {ann} are not in {ASSETS / 'coco' / 'val5'} (first: 000000037777.jpg); "
        "point dataset.root at the images of these annotations"
    )


def test_coco_annotation_of_an_unknown_image_fails_the_task(tmp_path, no_image_read):
    gt = coco_gt()
    gt["annotations"][0]["image_id"] = 1
    path = write(tmp_path / "instances.json", json.dumps(gt))
    with pytest.raises(DataError, match=r"annotations\[0\] has image_id 1, which is the id of no image"):
        run_inprocess([*COCO, f"dataset.annotations={path}"], tmp_path / "run")


def test_coco_num_images_larger_than_the_dataset(tmp_path, no_image_read):
    with pytest.raises(ConfigError) as exc:
        run_inprocess([*COCO, "task.num_images=6"], tmp_path)
    assert str(exc.value) == (
        f"task.num_images=6 but {ASSETS / 'coco' / 'instances_val5.json'} has 5 images; use 0 for all"
    )


# --- models -------------------------------------------------------------------------------------


def _model(tmp_path: Path, outputs, **kw) -> Path:
    return Path(constant_output_model(str(tmp_path / "m.tflite"), outputs, **kw))


@pytest.mark.parametrize(
    ("kw", "problem"),
    [
        (
            {"input_shape": (1, 128), "input_dtype": "float32"},
            "input shape [1, 128] is not one NHWC RGB image",
        ),
        ({"input_shape": (1, 64, 64, 1)}, "input shape [1, 64, 64, 1] is not one NHWC RGB image"),
        ({"input_shape": (2, 64, 64, 3)}, "input shape [2, 64, 64, 3] is not one NHWC RGB image"),
    ],
    ids=["vector", "grayscale", "batch_2"],
)
def test_model_whose_input_is_not_one_rgb_image(tmp_path, no_image_read, kw, problem):
    model = _model(tmp_path, [np.zeros((1, 1001), np.float32)], **kw)
    with pytest.raises(ModelMismatchError) as exc:
        run_inprocess([f"model.path={model}"], tmp_path / "run")
    assert str(exc.value) == (
        f"{model}: {problem} [1, H, W, 3]; this task needs an image classifier/detector"
    )


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        ([np.zeros((1, 7, 1001))], "{model}: output shape [1, 7, 1001] is not one score vector [1, N]"),
        ([np.zeros((1, 1))], "{model}: output shape [1, 1] is not one score vector [1, N]"),
        (
            [np.zeros((1, 10))],
            "model output has 10 classes but labels file {labels} has 1001 lines; "
            "pass the label file that matches the model (model.labels=...)",
        ),
        (
            [np.zeros((1, 1001)), np.zeros((1, 4))],
            "{model}: 2 outputs [[1, 1001], [1, 4]]; a classifier has one score vector (is this a detector? "
            "use task=coco)",
        ),
    ],
    ids=["3d", "one_class", "ten_classes", "two_outputs"],
)
def test_classifier_outputs_that_do_not_fit(tmp_path, no_image_read, outputs, message):
    model = _model(tmp_path, [o.astype(np.float32) for o in outputs])
    with pytest.raises(ModelMismatchError) as exc:
        run_inprocess([f"model.path={model}"], tmp_path / "run")
    assert str(exc.value) == message.format(model=model, labels=LABELS_1001)


def test_detector_preset_on_a_model_with_other_outputs(tmp_path, no_image_read):
    model = _model(tmp_path, [np.zeros((1, 3, 7), np.float32)], input_dtype="float32")
    with pytest.raises(ModelMismatchError) as exc:
        run_inprocess([*COCO, "model=yolov8n", f"model.path={model}"], tmp_path / "run")
    assert str(exc.value).startswith(f"{model}: output [1, 3, 7]: no axis has 4+C (or 5+C) attributes")


def test_truncated_flatbuffer(tmp_path):
    """The 'TFL3' identifier is there, the rest is cut: the model guard names the key and the file
    before any reader (ours or the runtime's) sees it, one line."""
    model = tmp_path / "half.tflite"
    real = (MODELS / "mobilenet_v1_0.25_128_quant.tflite").read_bytes()
    model.write_bytes(real[: len(real) // 2])
    with pytest.raises(EvalHarnessError) as exc:
        run_inprocess([f"model.path={model}"], tmp_path / "run")
    message = str(exc.value)
    assert message.startswith(f"model.path={model}: damaged .tflite flatbuffer") and "\n" not in message
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_model_path_that_is_a_directory(tmp_path):
    with pytest.raises(EvalHarnessError, match="is a directory"):
        run_inprocess([f"model.path={MODELS}"], tmp_path)


# --- config: unknown group option ----------------------------------------------------------------


def test_unknown_group_option_lists_every_valid_name(tmp_path):
    proc = run_cli(["-m", "delegate=cpu,xnnpak"], cwd=tmp_path)  # caught before Hydra, multirun too
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    listed = proc.stderr.split("valid: ")[1].split(".")[0].split(", ")
    assert listed == sorted(p.stem for p in (Path(__file__).parents[2] / "conf" / "delegate").glob("*.yaml"))
    assert not (tmp_path / "outputs").exists()


def test_unknown_group_option_is_a_user_error_exit_2(tmp_path):
    proc = run_cli(["delegate=xnnpak"], cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "xnnpack" in errors[0]


def test_class_index_csv_against_a_class_list_with_a_background_line_is_refused(tmp_path):
    """The 1001-line model label file as the class list of a 0-based class_index csv would shift every
    label by one (the val.txt reader refuses this by count; a csv may have any number of classes)."""
    root = folder(tmp_path / "data", "a.JPEG")
    gt = write(tmp_path / "gt.csv", "filename,class_index\na.JPEG,281\n")
    labels = BUNDLED_DIR / "imagenet_labels_1001.txt"
    with pytest.raises(DataError, match="starts with 'background'.*shift every label"):
        run_inprocess([*csv_run(root, gt), f"dataset.class_names={labels}"], tmp_path / "run")
    run_inprocess([*csv_run(root, gt), f"dataset.class_names={BUNDLED_DIR / 'imagenet_classes.txt'}"],
                  tmp_path / "ok")  # fmt: skip
