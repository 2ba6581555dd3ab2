"""``report diff`` of two seg runs (two pose runs) judges them by their masks (keypoints) beside
their boxes: the mask / keypoint ΔAP with its paired interval, the per-class ΔAP of masks, the
images whose masks changed (not those whose boxes did), the gates on ``segm_AP`` /
``keypoints_AP``, in every output. Run documents, records and ground truth are written here (no
assets, no model): the runs' metrics come from the task's own scorer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from shared_runs import fake_run_dir

from evalharness.core.tables import render_text
from evalharness.report.commands.diff import build_diff
from evalharness.report.commands.gate import evaluate, parse_rule
from evalharness.report.presenters import paired_of
from evalharness.report.runs import ReportError, comparability, definition_of
from evalharness.report.views import diff_view, pr_comment
from evalharness.rundir.reader import Run
from evalharness.stats.boxes import BOX, detection_diff
from evalharness.stats.shape_overlap import KEYPOINTS, MASK
from evalharness.stats.tide import tide_delta
from evalharness.tasks.coco.analysis import sections
from evalharness.tasks.definition import view_of

SIZE = 40  # every image SIZE x SIZE; one object per image, its box [8, 8, 24, 24]
BOX_XYWH = [8.0, 8.0, 24.0, 24.0]
IMAGES = [1, 2, 3, 4, 5, 6]
# COCO's 17 person keypoints of one pose inside the box, all visible
POSE = [v for k in range(17) for v in (10.0 + k, 10.0 + (k * 7) % 20, 2)]


def _square(x0: int, y0: int, x1: int, y1: int) -> np.ndarray:
    mask = np.zeros((SIZE, SIZE), np.uint8)
    mask[y0:y1, x0:x1] = 1
    return mask


def _rle(mask: np.ndarray) -> str:
    return mask_utils.encode(np.asfortranarray(mask))["counts"].decode()


def _truth(tmp_path: Path) -> Path:
    """One person per image: its polygon fills the box, with COCO keypoints (POSE)."""
    x, y, w, h = BOX_XYWH
    polygon = [x, y, x + w, y, x + w, y + h, x, y + h]
    gt = {
        "images": [{"id": i, "file_name": f"{i}.jpg", "width": SIZE, "height": SIZE} for i in IMAGES],
        "categories": [{"id": 1, "name": "person", "supercategory": "person",
                        "keypoints": [str(k) for k in range(17)], "skeleton": []}],
        "annotations": [
            {"id": i, "image_id": i, "category_id": 1, "bbox": BOX_XYWH, "area": w * h, "iscrowd": 0,
             "segmentation": [polygon], "keypoints": POSE, "num_keypoints": 17}
            for i in IMAGES
        ],
    }  # fmt: skip
    path = tmp_path / "truth.json"
    path.write_text(json.dumps(gt))
    return path


def _run(tmp_path: Path, label: str, truth: Path, shapes: dict[int, object], field: str) -> Run:
    """A run that finds each image's person with the box exactly; ``shapes``: its mask (``masks``)
    or keypoints (``keypoints``) per image."""
    records = []
    for i in IMAGES:
        record = {"id": f"{i}.jpg", "image_id": i, "detections": [[1, 0.9, *BOX_XYWH]], "unmapped": 0,
                  field: [shapes[i]]}  # fmt: skip
        if field == "masks":
            record["mask_size"] = [SIZE, SIZE]
        records.append(record)
    fake_run_dir(tmp_path / label, predictions=records)
    doc = {
        "task": "coco",
        "status": "complete",
        "latency_ms": {"inference": {"mean": 1.0, "p50": 1.0}},
        "provenance": {
            "config": {"task": {"name": "coco", "num_images": 0, "bootstrap_resamples": 40,
                                "bootstrap_seed": 0, "analysis": False, "tflite_tool_ap": False}},
            "model": {"name": label, "bytes": 1000},
            "dataset": {"name": "tiny", "manifest_kind": "relative path + size", "count": len(IMAGES),
                        "manifest_sha256": "m" * 64, "ground_truth": str(truth), "ground_truth_sha256": ""},
        },
    }  # fmt: skip
    run = Run(label, str(tmp_path / label), doc)  # type: ignore[arg-type]
    scorer = definition_of(run).scorer(json.loads(truth.read_text()))
    doc["metrics"] = scorer.add_all(run.predictions).result()
    return run


@pytest.fixture(scope="module")
def seg_diff(tmp_path_factory):
    """A's masks fill the box on every image; B's only the box's left third on images 5 and 6 (the
    boxes are the same): the boxes did not change, the masks did. Made once (the tests only read it)."""
    tmp_path = tmp_path_factory.mktemp("seg")
    truth = _truth(tmp_path)
    full, third = _rle(_square(8, 8, 32, 32)), _rle(_square(8, 8, 16, 32))
    a = _run(tmp_path, "A", truth, dict.fromkeys(IMAGES, full), "masks")
    b = _run(tmp_path, "B", truth, {**dict.fromkeys(IMAGES, full), 5: third, 6: third}, "masks")
    return build_diff(a, b, comparability(a, b))


def test_a_seg_pair_is_judged_by_its_masks_beside_its_boxes(seg_diff):
    doc, det = seg_diff, seg_diff["detection"]
    assert det["changed_images"] == [] and det["unmatched"] == 0  # the boxes are the same
    masks = det["segm"]
    assert [r["id"] for r in masks["changed_images"]] == ["5.jpg", "6.jpg"] and masks["measure"] == "mask IoU"
    assert masks["changed_images"][0]["only_a"] == masks["changed_images"][0]["only_b"] == 1
    assert "by mask IoU" in masks["error_types_note"] and "error_types" in masks["changed_images"][0]
    # the mask ΔAP's interval is the paired bootstrap's (one code for every kind), per class too
    rows = {r["name"]: r for r in doc["metrics"]}
    boot = det["paired_bootstrap"]
    assert rows["AP"]["delta"] == 0 and rows["segm_AP"]["delta"] < 0
    low, high = boot["segm_AP"]["interval"]
    assert low <= rows["segm_AP"]["delta"] <= high <= 0
    person = masks["per_class"][0]
    assert person["name"] == "person" and person["delta"] == pytest.approx(rows["segm_AP"]["delta"])
    assert person["paired"]["interval"] == pytest.approx([low, high])
    assert doc["verdict"].startswith("masks: B's segm_AP differs from A's by")
    assert "4 of 12 masks unmatched on 2 images" in doc["verdict"]
    assert "; boxes: B detects the same boxes" in doc["verdict"]


def test_every_output_names_the_changed_masks(seg_diff):
    text = render_text("diff", diff_view.sections(seg_diff))
    for heading in ("Masks", "Images with changed masks (2)", "Per-class mask AP (largest |delta| first)",
                    "Images with changed boxes (0)"):  # fmt: skip
        assert f"\n{heading}\n" in f"\n{text}", heading
    assert "matched (same class, mask IoU >= 0.5)" in text and "Δsegm_AP 95% paired interval" in text
    comment = pr_comment.render_diff(seg_diff, diff_view.sections(seg_diff))
    assert "| segm_AP |" in comment and "<summary>Images with changed masks (2)</summary>" in comment
    assert json.loads(json.dumps(seg_diff))["detection"]["segm"]["images_changed"] == 2
    # the HTML thumbnails: the images whose masks changed, after their table, with both runs' masks
    definition = definition_of(seg_diff)
    view, paired = view_of(definition), paired_of(definition, seg_diff)
    assert view.thumbnail_place(paired) == ("segm_changed_images", "Thumbnails: changed masks")
    samples = view.changed_samples(paired)
    assert [s for s, _ in samples] == ["5.jpg", "6.jpg"] and samples[0][1].startswith("1 mask(s) only in A")
    assert any(f["name"] == "per_class_delta_segm_AP" for f in view.figures(paired))


@pytest.mark.parametrize(
    ("rule", "failed"),
    [("segm_AP<-0.05", True), ("segm_AP<-10%", True), ("segm_AP_ci_high<-0.5", False),
     ("segm_AP_ci_low<0", True), ("segm_images_changed>1", True), ("segm_unmatched>4", False),
     ("AP<-0.01", False)],
)  # fmt: skip
def test_the_gates_name_the_mask_figures(seg_diff, rule, failed):
    assert evaluate([parse_rule(rule)], seg_diff)[0]["failed"] is failed


def test_a_gate_on_a_figure_the_runs_do_not_hold_is_a_usage_error(seg_diff):
    with pytest.raises(ReportError, match="unknown metric 'keypoints_AP'; known: .*segm_AP_ci_high"):
        evaluate([parse_rule("keypoints_AP<-0.01")], seg_diff)


def test_a_pose_pair_is_judged_by_oks(tmp_path):
    truth = _truth(tmp_path)
    moved = [v + 6 * (k % 3 != 2) for k, v in enumerate(POSE)]  # every keypoint 6 px off
    a = _run(tmp_path, "A", truth, dict.fromkeys(IMAGES, POSE), "keypoints")
    b = _run(tmp_path, "B", truth, {**dict.fromkeys(IMAGES, POSE), 2: moved}, "keypoints")
    doc = build_diff(a, b, comparability(a, b))
    poses = doc["detection"]["keypoints"]
    assert [r["id"] for r in poses["changed_images"]] == ["2.jpg"] and poses["measure"] == "OKS"
    assert poses["error_types_note"] == "not typed: tidecv has no keypoints mode"
    assert doc["detection"]["changed_images"] == [] and "keypoints_AP" in doc["detection"]["paired_bootstrap"]
    assert doc["verdict"].startswith("keypoints: B's keypoints_AP differs from A's by")
    assert evaluate([parse_rule("keypoints_AP<-0.01")], doc)[0]["failed"]
    boot = doc["detection"]["paired_bootstrap"]["keypoints_AP"]
    assert poses["per_class"][0]["paired"]["interval"] == boot["interval"]


def test_masks_and_keypoints_are_matched_by_their_own_overlap():
    """Same boxes, other shapes: box IoU 1, mask IoU 1/3; OKS 1 for the same keypoints, lower as
    they move, counting only what A's model calls visible."""
    rle = {"full": _rle(_square(8, 8, 32, 32)), "third": _rle(_square(8, 8, 16, 32))}
    record = {"image_id": 1, "id": "1", "detections": [[1, 0.9, *BOX_XYWH]], "mask_size": [SIZE, SIZE]}
    a, b = {**record, "masks": [rle["full"]]}, {**record, "masks": [rle["third"]]}
    assert detection_diff([a], [b], 0.5, 0.0, BOX)["unmatched"] == 0
    by_mask = detection_diff([a], [b], 0.3, 0.0, MASK)
    assert by_mask["mean_iou"] == pytest.approx(1 / 3) and by_mask["unmatched"] == 0
    row = [1, 0.9, *BOX_XYWH, POSE]
    assert KEYPOINTS.between(row, [row])[0] == pytest.approx(1.0)
    moved = [[1, 0.9, *BOX_XYWH, [v + 3 * (k % 3 != 2) for k, v in enumerate(POSE)]]]
    assert 0 < KEYPOINTS.between(row, moved)[0] < 1
    hidden = [v if k % 3 != 2 else (0.9 if k < 6 else 0.1) for k, v in enumerate(POSE)]  # 2 keypoints visible
    off_hidden = [[1, 0.9, *BOX_XYWH, [v + 50 * (k >= 6 and k % 3 != 2) for k, v in enumerate(POSE)]]]
    assert KEYPOINTS.between([1, 0.9, *BOX_XYWH, hidden], off_hidden)[0] == pytest.approx(1.0)


def test_the_diff_shows_tide_of_the_masks_beside_the_boxes():
    breakdown = {"available": True, "dAP": dict.fromkeys(("Cls", "Loc", "Both", "Dupe", "Bkg", "Miss"), 0.01),
                 "special_dAP": {"FalsePos": 0.02, "FalseNeg": 0.03}}  # fmt: skip
    worse = {**breakdown, "dAP": {**breakdown["dAP"], "Loc": 0.05}}
    analysis = {"recorded": {"a": True, "b": True}, "tide": tide_delta(breakdown, breakdown),
                "tide_reason": [], "tide_segm": tide_delta(breakdown, worse), "tide_segm_reason": [],
                "f1": {"a": {"score_threshold": 0.5, "precision": 1, "recall": 1, "f1": 1},
                       "b": {"score_threshold": 0.5, "precision": 1, "recall": 1, "f1": 1}},
                "confusion": {"score_threshold": 0.5, "changes": [], "a": [], "b": []}}  # fmt: skip
    shown = {s.key: s for s in sections({"analysis": analysis}, 10)}
    assert shown["tide_segm"].title == "TIDE error breakdown, masks (dAP50 points)"
    assert ["localisation", "1.00", "5.00", "+4.00"] in shown["tide_segm"].rows
    assert "mask IoU 0.5" in shown["tide_segm"].notes[0] and "tide" in shown
