"""YOLO-seg and YOLO-pose exports on COCO val25: masks and keypoints scored by pycocotools beside
the boxes, checked against pycocotools run here on the kept per-image results, against the
independent decoding in expected.json, and reproduced by ``report rescore``.

The four models are the shared assets' AGPL exports (test use only, never copied into the repo):
each runs once (module fixture), 25 images, the model file alone configuring it."""

from __future__ import annotations

import contextlib
import io
import json
import shutil

import pytest
from conftest import ASSETS, EXPECTED, make_runs, run_cli
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from test_report_classification import report

COCO_DIR = ASSETS / "coco"
INSTANCES, KEYPOINTS = COCO_DIR / "instances_val25.json", COCO_DIR / "person_keypoints_val25.json"
MODELS = {
    "yolov8n_seg_float_io": INSTANCES,
    "yolov8n_seg_int8_256": INSTANCES,
    "yolo11n_pose_float_io": KEYPOINTS,
    "yolov8n_pose_uint8_256": KEYPOINTS,
}
EXPECTED_SHAPES = EXPECTED.get("coco_val25_masks_keypoints", {})
# expected.json's name -> ours: a pose model's box AP is scored against the keypoint file (person only)
OURS = {"bbox_AP": "AP", "bbox_AP50": "AP50", "person_bbox_AP": "AP", "person_bbox_AP50": "AP50"}


# expected.json's recipe resizes with OpenCV's bilinear (cv2.resize, as Ultralytics' letterbox); the
# yolo_letterbox preset's PIL bilinear averages when it shrinks (640 -> 256), which alone moves the 256
# int8 seg export's box AP by 0.02 on val25. The runs here resize as the reference does.
REFERENCE_RESIZE = "model.preprocess.resize=opencv_bilinear"


def model_file(name: str) -> list[str]:
    """The model overrides of one model's run (shared with test_yolo_shapes_layout.py)."""
    return ["model=file", f"model.path={ASSETS / 'yolo' / (name + '.tflite')}", REFERENCE_RESIZE]


def model_run(name: str) -> list[str]:
    """The overrides of one model's run on val25 (shared with test_yolo_shapes_layout.py)."""
    return [*model_file(name), f"dataset.root={COCO_DIR / 'val25'}", f"dataset.annotations={MODELS[name]}"]


COMMON = ["task=coco", "task.tflite_tool_ap=false", "task.analysis=false", "task.bootstrap_resamples=50"]


def read_run(run_dir):
    """(run_dir, metrics.json, the predictions.jsonl records)."""
    doc = json.loads((run_dir / "metrics.json").read_text())
    records = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return run_dir, doc, records


def make_cli_run(overrides: list[str], run_dir) -> None:
    """One run as ``python -m evalharness`` makes it (forked, tests/cli_fork.py): an in-process run
    does not know which ``model.preprocess`` keys the command line gave, so a model configured from
    its file would take the preset's resize back."""
    proc = run_cli([*overrides, f"hydra.run.dir={run_dir}"], run_dir.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def runs(run_store):
    """name -> (run_dir, metrics.json, records), each run made once per session (tests/shared_runs.py)."""
    made = make_runs(run_store, COMMON, {name: model_run(name) for name in MODELS}, make=make_cli_run)
    return {name: read_run(made[name]) for name in MODELS}


def pycocotools_stats(annotations, records, iou_type):
    """pycocotools' stats of the kept per-image results, made here from predictions.jsonl."""
    return list(pycocotools_eval(annotations, records, iou_type).stats)


def pycocotools_eval(annotations, records, iou_type):
    """pycocotools' evaluation (summarized) of the kept per-image results of predictions.jsonl."""
    results = []
    for r in records:
        for i, (cat, score, *box) in enumerate(r["detections"]):
            det = {"image_id": r["image_id"], "category_id": cat, "score": score}
            if iou_type == "bbox":
                det["bbox"] = box
            elif iou_type == "segm":
                det["segmentation"] = {"size": r["mask_size"], "counts": r["masks"][i]}
            else:
                det["keypoints"] = r["keypoints"][i]
            results.append(det)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(annotations))
        evaluator = COCOeval(gt, gt.loadRes(results), iou_type)
        evaluator.params.imgIds = sorted(r["image_id"] for r in records)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator


@pytest.mark.parametrize("name", MODELS)
def test_reported_stats_equal_pycocotools_on_the_kept_results(runs, name):
    _, doc, records = runs[name]
    metrics = doc["metrics"]
    for kind in ["bbox", "segm" if "seg" in name else "keypoints"]:
        ours = [metrics[k] for k in stat_names(kind)]
        assert ours == pytest.approx(pycocotools_stats(MODELS[name], records, kind), abs=5e-4), kind


def stat_names(kind):
    """Our names of pycocotools' stats, in its order: the box stats unprefixed (as before seg/pose)."""
    box = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
    if kind == "bbox":
        return list(box)
    if kind == "segm":
        return [f"segm_{s}" for s in box]
    return [
        f"keypoints_{s}" for s in ("AP", "AP50", "AP75", "APm", "APl", "AR", "AR50", "AR75", "ARm", "ARl")
    ]


# The uint8 256 pose export's person score takes a few values only, so which of two overlapping
# persons of equal score NMS keeps decides its keypoint AP on val25's 21 persons: the NMS visits
# equal scores as numpy's argsort()[::-1] does, as the reference does (decoders/nms.py), and the run
# says how often ties decided (metrics.nms_ties, the summary's "NMS ties:" line).
@pytest.mark.parametrize(
    "name, figure", [(name, figure) for name in MODELS for figure in EXPECTED_SHAPES.get(name, {})]
)
def test_figures_agree_with_the_independent_decoding(runs, name, figure):
    metrics = runs[name][1]["metrics"]
    assert metrics[OURS.get(figure, figure)] == pytest.approx(EXPECTED_SHAPES[name][figure], abs=0.02)


def test_a_quantized_score_s_ties_are_counted_and_said(runs):
    run_dir, doc, records = runs["yolov8n_pose_uint8_256"]
    ties = doc["metrics"]["nms_ties"]
    assert 0 < ties["images"] <= len(records) and ties["suppressions"] >= ties["images"]
    assert sum(r["nms_ties"] for r in records) == ties["suppressions"]
    summary = (run_dir / "results.txt").read_text()
    assert f"  NMS ties: {ties['images']} of {len(records)} images kept one of two overlapping" in summary
    assert runs["yolo11n_pose_float_io"][1]["metrics"]["nms_ties"]["suppressions"] == 0  # float scores


def test_intervals_and_per_class_mask_ap_are_recorded(runs):
    metrics = runs["yolov8n_seg_float_io"][1]["metrics"]
    low, high = metrics["intervals"]["segm_AP"]
    assert low <= metrics["segm_AP"] <= high
    assert metrics["segm"]["per_class"]["1"]["name"] == "person"
    assert set(metrics["intervals"]["segm_per_class_AP"]) == set(metrics["segm"]["per_class"])
    pose = runs["yolo11n_pose_float_io"][1]["metrics"]
    assert "keypoints_AP" in pose["intervals"] and len(pose["keypoints"]["summary"]) == 10


@pytest.mark.parametrize("name", ["yolov8n_seg_int8_256", "yolov8n_pose_uint8_256"])
def test_rescore_reproduces_masks_and_keypoints(runs, name, capsys):
    code, out, _ = report(capsys, "rescore", runs[name][0], "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["reproduced"], doc["mismatches"]
    kind = "segm" if "seg" in name else "keypoints"
    assert {r["name"] for r in doc["headline"]} >= set(stat_names(kind))


def test_a_pose_model_on_an_instances_json_is_one_error(tmp_path):
    model = ASSETS / "yolo" / "yolov8n_pose_uint8_256.tflite"
    args = [
        "task=coco",
        f"model.path={model}",
        f"dataset.root={COCO_DIR / 'val25'}",
        f"dataset.annotations={INSTANCES}",
    ]
    proc = run_cli([*args, f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr
    assert "instances_val25.json has no 'keypoints'" in errors[0] and "person_keypoints" in errors[0]


@pytest.mark.parametrize(
    "name, head", [("yolov8n_seg_int8_256", "segment"), ("yolov8n_pose_uint8_256", "pose")]
)
def test_inspect_names_the_head(name, head):
    from evalharness.inspect.facts import inferred_configuration
    from evalharness.runtime.model_file import read_model_file

    path = str(ASSETS / "yolo" / f"{name}.tflite")
    kind = inferred_configuration(path, read_model_file(path))["kind"]
    assert kind.startswith(f"detector ({head} head: boxes and ")


@pytest.mark.parametrize("name", ["yolov8n_seg_int8_256", "yolov8n_pose_uint8_256"])
def test_faster_coco_eval_gives_the_same_mask_and_keypoint_stats(runs, name):
    from evalharness.data.coco_annotations import load_annotations
    from evalharness.tasks.coco.shape_store import ShapeStore

    _, doc, records = runs[name]
    store = ShapeStore()
    for record in records:
        store.add(record)
    ids = [r["image_id"] for r in records]
    faster = store.metrics(load_annotations(str(MODELS[name])), ids, 0, 0, "faster_coco_eval")
    kind = "segm" if "seg" in name else "keypoints"
    for stat in stat_names(kind):
        assert faster[stat] == pytest.approx(doc["metrics"][stat], abs=1e-12), stat


def test_diff_names_the_mask_ap_change_with_its_paired_interval(runs, capsys):
    from evalharness.report.views import diff_view, pr_comment
    from evalharness.stats.intervals import CONFIDENCE

    a, b = runs["yolov8n_seg_float_io"][0], runs["yolov8n_seg_int8_256"][0]
    argv = ["diff", a, b, "--format", "json", "--allow-different-preprocessing", "--allow-different-labels"]
    code, out, _ = report(capsys, *argv, "--fail-if", "segm_AP<-0.05")
    doc = json.loads(out)
    assert code == 1  # the int8 export's masks lose more than 0.05 AP, and the gate says so
    rows = {r["name"]: r for r in doc["metrics"]}
    assert rows["segm_AP"]["delta"] == pytest.approx(rows["segm_AP"]["b"] - rows["segm_AP"]["a"])
    low, high = doc["detection"]["paired_bootstrap"]["segm_AP"]["interval"]
    assert low <= rows["segm_AP"]["delta"] <= high < 0
    # the images that changed most, judged by their masks (mask IoU), not by their boxes
    masks = doc["detection"]["segm"]
    changed = masks["changed_images"]
    assert masks["measure"] == "mask IoU" and len(changed) == masks["images_changed"] > 0
    lost_or_new = [r["only_a"] + r["only_b"] for r in changed]
    assert lost_or_new == sorted(lost_or_new, reverse=True)  # most first
    change = rows["segm_AP"]["delta"]
    assert doc["verdict"].startswith(f"masks: B's segm_AP differs from A's by {change:+.4f}")
    assert f"Δsegm_AP {CONFIDENCE:.0%} interval [{low:+.4f}, {high:+.4f}]" in doc["verdict"]
    from evalharness.core.tables import render_text

    text = render_text("diff", diff_view.sections(doc))
    assert f"Images with changed masks ({len(changed)})" in text and f"\n{changed[0]['id']}  " in text
    assert "Per-class mask AP (largest |delta| first)" in text
    # the pull-request comment (--format markdown) of the same document leads with it, its interval beside

    comment = pr_comment.render_diff(doc, diff_view.sections(doc))
    line = next(line for line in comment.splitlines() if line.startswith("| segm_AP |"))
    assert f"[{low:+.4f}, {high:+.4f}]" in line
    # the HTML page's thumbnails of the images that changed most draw both runs' masks on them
    import functools

    from evalharness.report.presenters import paired_of
    from evalharness.report.runs import definition_of
    from evalharness.report.views.shape_drawing import LEGEND
    from evalharness.tasks.definition import view_of

    definition = definition_of(doc)
    view, paired = view_of(definition), paired_of(definition, doc)
    draw = functools.partial(view.thumbnail_shapes, paired)
    samples = view.changed_samples(paired)[:3]  # the images whose masks changed most
    assert [i for i, _ in samples] == [r["id"] for r in changed[:3]]
    thumbnails = diff_view._thumbnails(doc, samples, "changed", draw)
    assert LEGEND in thumbnails and thumbnails.count("<img ") == 3


def test_tide_breaks_the_mask_errors_down_beside_the_boxes(runs):
    """The analysis of a seg run (task.analysis, task.tide) has TIDE by mask IoU beside TIDE by box
    IoU, both made in the one background worker; results.txt gets a line for each. 5 images."""
    from evalharness.data.coco_annotations import load_annotations
    from evalharness.tasks.coco.analysis import summary_lines
    from evalharness.tasks.coco.scorer import CocoScorer

    _, _, records = runs["yolov8n_seg_int8_256"]
    scorer = CocoScorer(load_annotations(str(INSTANCES)), "pycocotools", False, analysis=True, tide=True)
    for record in records[:5]:
        scorer.add(record)
    metrics = scorer.result()
    boxes, masks = metrics["analysis"]["tide"], metrics["analysis"]["tide_segm"]
    assert boxes["available"] and masks["available"], masks["reason"]
    assert masks["counts"] != boxes["counts"] and sum(masks["counts"].values()) > 0
    lines = summary_lines(metrics)
    assert lines[-1].startswith("TIDE (masks) dAP in AP50 points") and lines[-2].startswith("TIDE dAP")


@pytest.mark.parametrize(
    "outputs, task, message",
    [
        ([(1, 116, 336), (1, 16, 16, 16)], None, "have 16 channels, but the rows [1, 116, 336] have no axis"),
        ([(1, 55, 336)], "pose", "not x, y, visibility triples (a multiple of 3)"),
    ],
)
def test_a_bad_seg_or_pose_head_is_one_error_naming_the_model(tmp_path, outputs, task, message):
    """The seg head told by its shapes alone, the pose head by Ultralytics' task: the decoder is
    picked, then refuses the head before any image is read."""
    import numpy as np

    from evalharness.runtime.modelgen import append_files, constant_output_model

    arrays = [np.zeros(shape, np.float32) for shape in outputs]
    model = constant_output_model(str(tmp_path / "bad.tflite"), arrays, input_shape=(1, 64, 64, 3))
    if task:
        append_files(model, {"temp_meta.txt": str({"task": task, "names": {0: "person"}})})
    ground_truth = KEYPOINTS if task == "pose" else INSTANCES
    args = [f"model.path={model}", f"dataset.root={COCO_DIR / 'val5'}"]
    args += [f"dataset.annotations={str(ground_truth).replace('val25', 'val5')}"]
    proc = run_cli(["task=coco", *args, f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr
    assert "bad.tflite" in errors[0] and message in errors[0]


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda text: text + "P", "not COCO's compressed RLE text"),  # pycocotools read past its end
        (lambda text: text[:-1] + "oooo3", "longer than the whole mask"),  # it wrote past the mask
    ],
)
def test_a_damaged_mask_read_back_is_one_error_naming_the_file(runs, tmp_path, capsys, edit, problem):
    """A hand-edited RLE made pycocotools' C loop without end in ``report diff`` (no signal stopped
    it) and ``rescore`` reproduce a silent figure; both now refuse it by name before C reads it."""
    a = runs["yolov8n_seg_int8_256"][0]
    b = tmp_path / "b"
    shutil.copytree(a, b)
    lines = (b / "predictions.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["masks"][0] = edit(record["masks"][0])
    (b / "predictions.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    for argv in (["diff", a, str(b)], ["rescore", str(b)]):
        code, _, err = report(capsys, *argv)
        assert code == 2 and err.count("error:") == 1 and problem in err, err
        assert "predictions.jsonl record of image" in err and "mask #0" in err
