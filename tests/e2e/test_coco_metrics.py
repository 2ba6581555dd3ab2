"""COCO box metrics: the reference numbers on real result files, the edge cases pycocotools chokes
on, and TFLite-tool AP on cases small enough to compute by hand."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from evalharness.core.errors import ConfigError, DataError
from evalharness.data.coco_annotations import load_annotations
from evalharness.stats.coco_eval import COCO_STAT_NAMES, evaluate_bbox
from evalharness.stats.coco_tool_ap import IOU_THRESHOLDS, tflite_tool_ap

ASSETS = Path(__file__).resolve().parents[2].parent / "shared" / "assets"
COCO_DIR = ASSETS / "coco"
FAKEBBOX = COCO_DIR / "fakebbox100"
VAL25 = COCO_DIR / "fixture_val25"
HAVE_FASTER = importlib.util.find_spec("faster_coco_eval") is not None
NO_FASTER = "faster-coco-eval not importable: pip install '.[faster]'"
BACKENDS = [
    "pycocotools",
    pytest.param(
        "faster_coco_eval",
        marks=pytest.mark.skipif(not HAVE_FASTER, reason=NO_FASTER),
    ),
]
TOLERANCE = {"pycocotools": 0.0, "faster_coco_eval": 1e-12}
FIXTURES = {
    # name: (annotations, results, expected.json, tolerance of the expected numbers)
    "fakebbox100": (
        FAKEBBOX / "instances_val2014_100.json",
        FAKEBBOX / "instances_val2014_fakebbox100_results.json",
        FAKEBBOX / "expected.json",
        0.0,
    ),
    "val25": (
        COCO_DIR / "instances_val25.json",
        VAL25 / "ssd_mobilenet_v1_results.json",
        VAL25 / "expected.json",
        5e-7,
    ),
}


@pytest.fixture(scope="module")
def fixture_data():
    """name -> (gt, detections, expected stats, tolerance), each file read once."""
    cache = {}

    def get(name):
        if name not in cache:
            gt_path, res_path, expected_path, tol = FIXTURES[name]
            expected = json.loads(expected_path.read_text())
            assert list(expected["stats_order"]) == list(COCO_STAT_NAMES)
            cache[name] = (load_annotations(gt_path), json.loads(res_path.read_text()), expected, tol)
        return copy.deepcopy(cache[name])

    return get


def one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def make_gt(anns, size=(100, 100), images=(1,), categories=(1,)) -> dict:
    """A COCO dict from (image_id, category_id, [x, y, w, h], iscrowd) tuples."""
    return {
        "images": [{"id": i, "width": size[0], "height": size[1]} for i in images],
        "categories": [{"id": c, "name": f"class{c}"} for c in categories],
        "annotations": [
            {"id": n + 1, "image_id": i, "category_id": c, "bbox": b, "area": b[2] * b[3], "iscrowd": crowd}
            for n, (i, c, b, crowd) in enumerate(anns)
        ],
    }


def det(bbox, score, image_id=1, category_id=1) -> dict:
    return {"image_id": image_id, "category_id": category_id, "bbox": bbox, "score": score}


def subset_pair(gt: dict, detections: list[dict], image_ids: set) -> tuple[dict, list[dict]]:
    """The annotation file and results file one would have written for just those images."""
    gt = {
        **gt,
        "images": [img for img in gt["images"] if img["id"] in image_ids],
        "annotations": [a for a in gt["annotations"] if a["image_id"] in image_ids],
    }
    return gt, [d for d in detections if d["image_id"] in image_ids]


# --- reference numbers on real result files ---------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_stats_reproduce_reference(fixture_data, name, backend):
    gt, dets, expected, tol = fixture_data(name)
    result = evaluate_bbox(gt, dets, backend=backend)
    want = expected["pycocotools_bbox_stats"]
    assert list(result["stats"]) == list(COCO_STAT_NAMES)
    if tol == 0.0 and backend == "pycocotools":
        assert result["stats"] == want  # bit for bit
    else:
        for key in COCO_STAT_NAMES:
            allowed = max(tol, TOLERANCE[backend])
            assert result["stats"][key] == pytest.approx(want[key], rel=0, abs=allowed), key
    assert result["backend"] == backend
    assert result["num_images"] == len(gt["images"])
    assert result["num_detections"] == len(dets)
    if name == "fakebbox100":
        assert result["num_detections"] == expected["results_count"]


def test_summary_is_what_pycocotools_prints(fixture_data):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt, dets, _, _ = fixture_data("fakebbox100")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        coco_gt = COCO(str(FIXTURES["fakebbox100"][0]))
        evaluator = COCOeval(coco_gt, coco_gt.loadRes(str(FIXTURES["fakebbox100"][1])), "bbox")
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    printed = [line for line in out.getvalue().splitlines() if line.startswith(" Average")]
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):
        result = evaluate_bbox(gt, dets)
    assert result["summary"] == printed and len(printed) == 12
    assert captured.getvalue() == ""


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_per_class_ap_averages_to_ap(fixture_data, name):
    gt, dets, _, _ = fixture_data(name)
    result = evaluate_bbox(gt, dets)
    per_class = result["per_class"]
    assert set(per_class) == {str(c["id"]) for c in gt["categories"]}
    with_gt = [v for v in per_class.values() if v["num_gt"] > 0]
    assert np.mean([v["AP"] for v in with_gt]) == pytest.approx(result["stats"]["AP"], rel=0, abs=1e-12)
    assert np.mean([v["AP50"] for v in with_gt]) == pytest.approx(result["stats"]["AP50"], rel=0, abs=1e-12)
    assert all(v["AP"] is None and v["AP50"] is None for v in per_class.values() if v["num_gt"] == 0)
    assert sum(v["num_gt"] for v in per_class.values()) == sum(not a["iscrowd"] for a in gt["annotations"])
    assert per_class["1"]["name"] == "person"
    json.dumps(result, allow_nan=False)


@pytest.mark.skipif(not HAVE_FASTER, reason=NO_FASTER)
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_backends_agree_per_class(fixture_data, name):
    gt, dets, _, _ = fixture_data(name)
    ref = evaluate_bbox(gt, dets)["per_class"]
    fast = evaluate_bbox(gt, dets, backend="faster_coco_eval")["per_class"]
    for key, row in ref.items():
        for metric in ("AP", "AP50"):
            if row[metric] is None:
                assert fast[key][metric] is None
            else:
                assert fast[key][metric] == pytest.approx(row[metric], rel=0, abs=1e-12)


@pytest.mark.parametrize("score", [evaluate_bbox, tflite_tool_ap], ids=["pycocotools", "tflite_tool"])
def test_image_ids_equal_scoring_a_filtered_pair(fixture_data, score):
    gt, dets, _, _ = fixture_data("fakebbox100")
    chosen = sorted(img["id"] for img in gt["images"])[::3]
    restricted = score(gt, dets, image_ids=chosen)
    filtered = score(*subset_pair(gt, dets, set(chosen)))
    assert restricted == filtered
    assert restricted["num_images"] == len(chosen)


def test_inputs_are_not_modified(fixture_data):
    gt, dets, _, _ = fixture_data("val25")
    before = pickle.dumps((gt, dets))  # every value, type and order (polygons are arrays: no ==)
    evaluate_bbox(gt, dets)
    tflite_tool_ap(gt, dets)
    assert pickle.dumps((gt, dets)) == before


# --- edge cases -------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_detections_score_zero_where_ground_truth_exists(fixture_data, backend):
    gt, _, _, _ = fixture_data("fakebbox100")
    result = evaluate_bbox(gt, [], backend=backend)  # pycocotools' own loadRes([]) raises IndexError
    assert result["stats"] == dict.fromkeys(COCO_STAT_NAMES, 0.0)
    assert result["num_detections"] == 0
    assert all((v["AP"] == 0.0) == (v["num_gt"] > 0) for v in result["per_class"].values())
    # only a large box: the small and medium rows have no ground truth, and pycocotools says -1
    large_only = evaluate_bbox(make_gt([(1, 1, [0, 0, 100, 100], 0)]), [], backend=backend)["stats"]
    assert [k for k, v in large_only.items() if v == -1.0] == ["APs", "APm", "ARs", "ARm"]
    assert all(v == 0.0 for k, v in large_only.items() if k not in ("APs", "APm", "ARs", "ARm"))


def test_images_without_annotations(fixture_data):
    gt, dets, _, _ = fixture_data("val25")
    empty = {img["id"] for img in gt["images"]} - {a["image_id"] for a in gt["annotations"]}
    on_empty = [d for d in dets if d["image_id"] in empty]
    assert len(empty) == 2 and on_empty  # the real SSD results put boxes on both
    only_empty = evaluate_bbox(gt, dets, image_ids=sorted(empty))
    assert only_empty["stats"] == dict.fromkeys(COCO_STAT_NAMES, -1.0)
    assert all(v["AP"] is None for v in only_empty["per_class"].values())
    assert only_empty["num_detections"] == len(on_empty)
    # a confident box on an image without objects is a false positive: precision drops, recall not
    base = evaluate_bbox(gt, dets)
    with_fp = evaluate_bbox(gt, [*dets, det([10, 10, 50, 50], 1.0, image_id=min(empty))])
    assert with_fp["per_class"]["1"]["AP"] < base["per_class"]["1"]["AP"]
    assert with_fp["stats"]["AP"] < base["stats"]["AP"]
    assert all(with_fp["stats"][k] == base["stats"][k] for k in COCO_STAT_NAMES if k.startswith("AR"))


def test_crowd_region_detection_is_ignored_by_coco_but_not_by_tflite_tool():
    anns = [(1, 1, [0, 0, 10, 10], 0), (1, 1, [40, 40, 50, 50], 1)]
    dets = [det([50, 50, 10, 10], 0.95), det([0, 0, 10, 10], 0.9)]  # inside the crowd box, then a hit
    crowd = make_gt(anns)
    assert evaluate_bbox(crowd, dets)["stats"]["AP"] == pytest.approx(1.0, abs=1e-12)
    assert evaluate_bbox(crowd, dets)["per_class"]["1"]["num_gt"] == 1
    not_crowd = make_gt([(*a[:3], 0) for a in anns])
    assert evaluate_bbox(not_crowd, dets)["stats"]["AP"] < 1.0
    # the tool reads no iscrowd: FP first, then 1 of 2 boxes found -> precision .5 up to recall .5
    tool = tflite_tool_ap(crowd, dets)
    assert tool["AP"] == pytest.approx(51 * 0.5 / 101, abs=1e-15)
    assert tool == tflite_tool_ap(not_crowd, dets)
    assert tool["per_class"]["1"]["num_gt"] == 2


@pytest.mark.parametrize("score", [evaluate_bbox, tflite_tool_ap], ids=["pycocotools", "tflite_tool"])
def test_bad_detections_are_one_line_data_errors(fixture_data, score):
    gt, dets, _, _ = fixture_data("fakebbox100")
    cases = [
        (dict(dets[0], image_id=999999999), "999999999"),
        (dict(dets[0], category_id=91), "category_id 91"),
        ({k: v for k, v in dets[0].items() if k != "score"}, "'score'"),
        (dict(dets[0], bbox=[1, 2, 3]), "bbox"),
    ]
    for bad, needle in cases:
        with pytest.raises(DataError) as exc:
            score(gt, [*dets[:5], bad])
        assert "detection #5" in one_line(exc) and needle in one_line(exc)
    with pytest.raises(DataError) as exc:
        score(gt, dets, image_ids=[42, 123456789])
    assert "123456789" in one_line(exc)
    with pytest.raises(DataError) as exc:
        score(gt, dets, image_ids=[])
    assert "image_ids is empty" in one_line(exc)


def test_load_annotations_errors_name_file_and_key(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(DataError) as exc:
        load_annotations(missing)
    assert str(missing) in one_line(exc) and "not found" in one_line(exc)
    broken = tmp_path / "broken.json"
    broken.write_text('{"images": [')
    with pytest.raises(DataError) as exc:
        load_annotations(broken)
    assert str(broken) in one_line(exc) and "not valid JSON" in one_line(exc)
    no_cats = tmp_path / "no_categories.json"
    no_cats.write_text(json.dumps({"images": [], "annotations": []}))
    with pytest.raises(DataError) as exc:
        load_annotations(no_cats)
    assert str(no_cats) in one_line(exc) and "'categories'" in one_line(exc)
    no_area = tmp_path / "no_area.json"
    gt = make_gt([(1, 1, [0, 0, 10, 10], 0)])
    del gt["annotations"][0]["area"]
    no_area.write_text(json.dumps(gt))
    with pytest.raises(DataError) as exc:
        load_annotations(no_area)
    assert str(no_area) in one_line(exc) and "annotations[0]" in one_line(exc) and "'area'" in one_line(exc)
    assert load_annotations(FIXTURES["val25"][0])["categories"][0]["name"] == "person"


def test_backend_names_and_missing_optional_backend(monkeypatch):
    gt = make_gt([(1, 1, [0, 0, 10, 10], 0)])
    with pytest.raises(ConfigError) as exc:
        evaluate_bbox(gt, [], backend="pycocotool")
    assert "faster_coco_eval" in one_line(exc) and "pycocotools" in one_line(exc)
    monkeypatch.setitem(sys.modules, "faster_coco_eval", None)  # import now fails as if not installed
    with pytest.raises(ConfigError) as exc:
        evaluate_bbox(gt, [], backend="faster_coco_eval")
    assert "pip install 'evalharness[faster]'" in one_line(exc)


# --- TFLite tool AP, by hand -------------------------------------------------------------------

ONE_BOX = make_gt([(1, 1, [0, 0, 10, 10], 0)])


def per_iou(*values) -> dict:
    return {f"{t:.2f}": v for t, v in zip(IOU_THRESHOLDS, values, strict=True)}


def test_tflite_perfect_detection():
    result = tflite_tool_ap(ONE_BOX, [det([0, 0, 10, 10], 0.5)])
    assert result["mode"] == "tflite_tool"
    assert result["AP"] == 1.0 and result["AP_per_iou"] == per_iou(*[1.0] * 10)
    assert result["per_class"]["1"] == {
        "name": "class1",
        "AP": 1.0,
        "AP50": 1.0,
        "num_gt": 1,
        "num_detections": 1,
    }


def test_tflite_iou_058_passes_two_thresholds():
    result = tflite_tool_ap(ONE_BOX, [det([0, 0, 10, 5.8], 0.5)])  # IoU 58/100
    assert result["AP_per_iou"] == per_iou(1.0, 1.0, *[0.0] * 8)
    assert result["AP"] == pytest.approx(0.2, abs=1e-15)


@pytest.mark.parametrize("score", [evaluate_bbox, tflite_tool_ap], ids=["pycocotools", "tflite_tool"])
def test_iou_exactly_at_a_threshold_matches(score):
    gt = make_gt([(1, 1, [0, 0, 4, 4], 0)])
    result = score(gt, [det([0, 0, 4, 3], 0.5)])  # IoU 12/16 = 0.75, exact in binary
    ap = result["AP"] if "AP" in result else result["stats"]["AP"]
    assert ap == pytest.approx(0.6, abs=1e-15)  # 0.50 ... 0.75 match: 6 of 10


@pytest.mark.parametrize(
    ("dets", "expected"),
    [
        ([det([50, 50, 10, 10], 0.9), det([0, 0, 10, 10], 0.8)], 0.5),  # false positive ranked first
        ([det([0, 0, 10, 10], 0.9), det([50, 50, 10, 10], 0.8)], 1.0),  # ... ranked last costs nothing
    ],
)
def test_tflite_false_positive_rank(dets, expected):
    assert tflite_tool_ap(ONE_BOX, dets)["AP"] == pytest.approx(expected, abs=1e-15)
    assert evaluate_bbox(ONE_BOX, dets)["stats"]["AP"] == pytest.approx(expected, abs=1e-12)


def test_duplicate_detection_is_a_false_positive():
    gt = make_gt([(1, 1, [0, 0, 10, 10], 0), (1, 1, [50, 50, 10, 10], 0)])
    dets = [det([0, 0, 10, 10], 0.9), det([0, 0, 10, 10], 0.8), det([50, 50, 10, 10], 0.7)]
    expected = (51 * 1.0 + 50 * 2 / 3) / 101  # precision 1 up to recall .5, then 2/3
    assert tflite_tool_ap(gt, dets)["AP"] == pytest.approx(expected, abs=1e-15)
    assert evaluate_bbox(gt, dets)["stats"]["AP"] == pytest.approx(expected, abs=1e-12)


def test_category_without_ground_truth_counts_as_zero_in_tflite_only():
    gt = make_gt([(1, 1, [0, 0, 10, 10], 0)], categories=(1, 2, 3))
    dets = [det([0, 0, 10, 10], 0.9), det([20, 20, 10, 10], 0.8, category_id=2)]
    tool = tflite_tool_ap(gt, dets)
    assert tool["AP"] == 0.5 and tool["AP_per_iou"] == per_iou(*[0.5] * 10)
    assert tool["per_class"]["2"]["AP"] == 0.0 and tool["per_class"]["2"]["num_gt"] == 0
    assert tool["per_class"]["3"]["AP"] is None  # neither boxes nor detections: not counted
    coco = evaluate_bbox(gt, dets)
    assert coco["stats"]["AP"] == pytest.approx(1.0, abs=1e-12) and coco["per_class"]["2"]["AP"] is None


def test_recall_levels_are_exact_in_tflite_and_float_in_pycocotools():
    gt = make_gt([(1, 1, [10 * i, 0, 5, 5], 0) for i in range(10)])
    dets = [det([10 * i, 0, 5, 5], 0.9) for i in range(7)]  # recall 7/10
    assert tflite_tool_ap(gt, dets)["AP"] == pytest.approx(71 / 101, abs=1e-15)  # levels .00 ... .70
    # pycocotools compares 0.7 with its recall threshold 70 * 0.01 = 0.7000000000000001
    assert evaluate_bbox(gt, dets)["stats"]["AP"] == pytest.approx(70 / 101, abs=1e-12)


def test_tflite_has_no_max_detections_cap():
    dets = [det([50, 50, 5, 5], 0.9) for _ in range(100)] + [det([0, 0, 10, 10], 0.1)]
    assert tflite_tool_ap(ONE_BOX, dets)["AP"] == pytest.approx(1 / 101, abs=1e-15)
    assert evaluate_bbox(ONE_BOX, dets)["stats"]["AP"] == 0.0  # the hit is detection 101 of the image


def test_tflite_drops_ground_truth_outside_the_image():
    gt = make_gt([(1, 1, [0, 0, 10, 10], 0), (1, 1, [90, 90, 20, 20], 0)])
    dets = [det([0, 0, 10, 10], 0.9)]
    assert tflite_tool_ap(gt, dets)["AP"] == 1.0
    assert tflite_tool_ap(gt, dets, drop_out_of_image=False)["AP"] == pytest.approx(51 / 101, abs=1e-15)


def test_tflite_nothing_to_score():
    result = tflite_tool_ap(make_gt([], images=(1, 2)), [])
    assert result["AP"] is None and set(result["AP_per_iou"].values()) == {None}


def test_tflite_equals_pycocotools_where_definitions_coincide(fixture_data):
    """No crowd boxes, no detected class without ground truth, <= 100 detections per image: the
    only remaining difference is pycocotools' float recall levels, which these numbers never hit."""
    gt, dets, _, _ = fixture_data("val25")
    full = tflite_tool_ap(gt, dets)
    assert full["AP"] == pytest.approx(np.mean(list(full["AP_per_iou"].values())), abs=1e-15)
    gt["annotations"] = [a for a in gt["annotations"] if not a["iscrowd"]]
    present = {a["category_id"] for a in gt["annotations"]}
    dets = [d for d in dets if d["category_id"] in present]
    coco, tool = evaluate_bbox(gt, dets), tflite_tool_ap(gt, dets)
    assert tool["AP"] == pytest.approx(coco["stats"]["AP"], rel=0, abs=1e-12)
    assert tool["AP_per_iou"]["0.50"] == pytest.approx(coco["stats"]["AP50"], rel=0, abs=1e-12)
    assert tool["AP_per_iou"]["0.75"] == pytest.approx(coco["stats"]["AP75"], rel=0, abs=1e-12)
    assert full["AP"] < coco["stats"]["AP"]  # crowd boxes and unmatched classes only cost AP
