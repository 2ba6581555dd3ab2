"""What ``quant.max_drop`` bounds, and whether a task may be repaired at all (settings/quant_rules.py,
tasks/comparison.py, tasks/coco/comparison.py): box AP for a detector, ``segm_AP`` for a seg head,
``keypoints_AP`` for a pose head, ``quant.metric`` to choose another the paired bootstrap pairs;
one error line for a metric the model's head does not give, a task with no paired comparison, or
``quant.metric`` without a drop to bound. Then COCO's ``paired_records`` on synthetic boxes and
masks: the paired bootstrap of ``report diff``, the float model's records scored once. Pure."""

from __future__ import annotations

import pytest

from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.core.schema import build
from evalharness.settings.groups import DatasetSchema, ModelSchema, QuantSchema
from evalharness.settings.quant_rules import check_quant, repair_metric
from evalharness.tasks.discovery import definition_for

SEG = {"name": "yolo_seg", "conf_threshold": 0.001}
POSE = {"name": "yolo_pose"}
BOXES = {"name": "ssd_postprocess"}


def _quant(**fields) -> QuantSchema:
    node = {"name": "prune", "recipe": None, "weights": {"method": "prune"}, **fields}
    return build(QuantSchema, node, "config group 'quant'")


def _model(decoder) -> ModelSchema:
    return ModelSchema(name="m", path="m.tflite", decoder=decoder)


@pytest.mark.parametrize(
    ("decoder", "asked", "metric", "said"),
    [
        (SEG, None, "segm_AP", "model.decoder.name=yolo_seg) gives masks"),
        (POSE, None, "keypoints_AP", "model.decoder.name=yolo_pose) gives keypoints"),
        (BOXES, None, "AP", "box AP: the model's head (model.decoder.name=ssd_postprocess) gives boxes only"),
        (None, None, "AP", "model.decoder.name=none"),
        (SEG, "AP", "AP", "quant.metric=AP"),  # every seg / pose model has boxes too
        (SEG, "segm_AP50", "segm_AP50", "quant.metric=segm_AP50"),
        (POSE, "keypoints_AP75", "keypoints_AP75", "quant.metric=keypoints_AP75"),
    ],
)
def test_coco_bounds_the_model_s_headline_metric_unless_quant_metric_says(decoder, asked, metric, said):
    coco = definition_for("coco")
    chosen = repair_metric(_quant(max_drop=0.01, metric=asked), coco, _model(decoder))
    assert chosen["name"] == metric
    assert said in chosen["source"]


@pytest.mark.parametrize(
    ("decoder", "asked", "words"),
    [
        (BOXES, "segm_AP", "gives no masks; its metrics: AP, AP50, AP75$"),
        (SEG, "keypoints_AP", "no keypoints; its metrics: AP, AP50, AP75, segm_AP, segm_AP50, segm_AP75$"),
        (SEG, "AR100", "pairs only AP, AP50, AP75, segm_AP"),  # no paired interval for it: refused
        (SEG, "tflite_AP", "pairs only"),
    ],
)
def test_a_metric_the_head_does_not_give_or_nothing_pairs_is_one_error(decoder, asked, words):
    coco = definition_for("coco")
    with pytest.raises(ConfigError, match=words):
        check_quant(_quant(max_drop=0.01, metric=asked), coco, DatasetSchema(), _model(decoder))


def test_classification_keeps_top1_and_pairs_nothing_else():
    imagenet = definition_for("imagenet")
    chosen = repair_metric(_quant(max_drop=0.01), imagenet, _model(None))
    assert chosen == {"name": "top1", "source": "the task's repair metric"}
    with pytest.raises(ConfigError, match=r"quant.metric=AP: task=imagenet pairs only top1"):
        repair_metric(_quant(max_drop=0.01, metric="AP"), imagenet, _model(None))


def test_acceptance_and_refusal_of_the_task_and_the_key():
    coco, model = definition_for("coco"), _model(SEG)
    check_quant(_quant(max_drop=0.01), coco, DatasetSchema(), model)  # COCO: accepted now
    check_quant(_quant(max_drop_relative=0.05, metric="AP"), coco, DatasetSchema(), model)
    scan = _quant(weights={"method": "prune", "scan": True}, metric="segm_AP")
    check_quant(scan, coco, DatasetSchema(), model)
    with pytest.raises(ConfigError, match="quant.metric=segm_AP names what quant.max_drop"):
        check_quant(_quant(metric="segm_AP"), coco, DatasetSchema(), model)  # nothing to bound
    with pytest.raises(ConfigError, match="task=benchmark offers no repair"):
        check_quant(_quant(max_drop=0.01), definition_for("benchmark"), DatasetSchema(), model)


def test_only_a_proportion_has_the_power_formula():
    """The images a gate's or a repair's pairs can resolve, by McNemar's power: top-1 only; an AP is
    judged from its measured paired interval (stats/power.py interval_resolution)."""
    from evalharness.tasks.coco.comparison import DetectionComparison
    from evalharness.tasks.imagenet.comparison import ClassificationComparison

    assert ClassificationComparison.proportion == "top1"
    assert DetectionComparison.proportion is None


# --- COCO's paired_records: two images of two boxes each, one a square polygon with its mask ---


def _square(x: int, y: int, size: int, height: int = 64, width: int = 64) -> tuple[list, str]:
    import numpy as np
    from pycocotools import mask as mask_utils

    grid = np.zeros((height, width), np.uint8, order="F")
    grid[y : y + size, x : x + size] = 1
    rle = mask_utils.encode(grid)
    return [[x, y, x + size, y, x + size, y + size, x, y + size]], rle["counts"].decode()


def _truth_and_records(shift: int) -> tuple[dict, list[dict]]:
    """Ground truth of 4 images x 2 squares, and a model's records: every square found with its
    mask, those of the last ``shift`` images moved by 6 pixels (box and mask)."""
    images, annotations, records = [], [], []
    for i in range(1, 5):
        images.append({"id": i, "width": 64, "height": 64, "file_name": f"{i}.jpg"})
        dets, masks = [], []
        for k, (x, y) in enumerate(((4, 4), (36, 30))):
            polygon, _ = _square(x, y, 20)
            annotations.append({"id": 10 * i + k, "image_id": i, "category_id": 1, "bbox": [x, y, 20, 20],
                                "area": 400, "iscrowd": 0, "segmentation": polygon})  # fmt: skip
            dx = 6 if i > 4 - shift else 0
            _, rle = _square(x + dx, y, 20)
            dets.append([1, 0.9 - 0.1 * k, x + dx, y, 20, 20])
            masks.append(rle)
        records.append({"id": f"{i}.jpg", "image_id": i, "detections": dets, "unmapped": 0,
                        "masks": masks, "mask_size": [64, 64]})  # fmt: skip
    truth = {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "square"}]}
    return truth, records


def test_coco_paired_records_is_report_diff_s_paired_bootstrap_with_the_float_scored_once(monkeypatch):
    from evalharness.stats.coco_intervals import paired_ap_bootstrap
    from evalharness.tasks.coco import scorer as scorer_module
    from evalharness.tasks.coco.scorer import CocoScorer
    from evalharness.tasks.definition import comparer

    truth, float_records = _truth_and_records(0)
    coco = definition_for("coco", {"bootstrap_resamples": 200, "bootstrap_seed": 3})
    compare = comparer(coco)
    fresh = coco.scorer(truth)  # as the live task's evaluator makes one: the annotations with it
    scored = []
    original = scorer_module.CocoScorer.matchings

    def counted(scorer, kinds=()):
        scored.append(kinds)
        return original(scorer, kinds)

    monkeypatch.setattr(scorer_module.CocoScorer, "matchings", counted)

    same = compare.paired_records(float_records, float_records, "segm_AP", fresh)
    assert (same["delta"], same["interval"], same["changed"]) == (0.0, [0.0, 0.0], 0)
    _, moved = _truth_and_records(2)
    paired = compare.paired_records(float_records, moved, "segm_AP", fresh)
    assert scored == [("segm",), ("segm",)]  # the float model's records: scored once, kept
    assert paired["delta"] < 0 and paired["changed"] == 0  # IoU 0.53: the boxes still match at 0.5
    # the interval is report diff's: its function on the two passes' matchings, as report diff makes them
    a, b = (CocoScorer(truth, "pycocotools", False).add_all(r) for r in (float_records, moved))
    pair = (scorer.shapes.matchings(truth, scorer.image_ids)["segm"] for scorer in (a, b))
    expected = paired_ap_bootstrap(*pair, 200, 3, 0.95)["AP"]
    assert paired["interval"] == expected["interval"] and paired["p"] == expected["p"]
    assert paired["method"] == "paired bootstrap over images, B=200, seed 3 (as report diff)"
    boxes = compare.paired_records(float_records, moved, "AP", fresh)
    assert boxes["delta"] < 0 and boxes["interval"][0] <= boxes["delta"] <= boxes["interval"][1]
    with pytest.raises(EvalHarnessError, match="needs the annotations"):
        compare.paired_records(float_records, moved, "AP")


def test_the_float_model_s_records_are_hashed_once_however_many_candidates_pair_with_them(monkeypatch):
    import json

    from evalharness.tasks.coco import repair_comparison
    from evalharness.tasks.definition import comparer

    truth, float_records = _truth_and_records(0)
    coco = definition_for("coco", {"bootstrap_resamples": 0})
    compare, fresh = comparer(coco), coco.scorer(truth)
    hashed, original = [], json.dumps

    def dumps(value, **kwargs):
        if isinstance(value, list) and value[:1] == ["bbox"]:
            hashed.append(value[1])
        return original(value, **kwargs)

    monkeypatch.setattr(repair_comparison.json, "dumps", dumps)
    candidates = [_truth_and_records(shift)[1] for shift in (1, 2, 1)]
    deltas = [compare.paired_records(float_records, c, "AP", fresh)["delta"] for c in candidates]
    assert sum(r is float_records for r in hashed) == 1 and len(hashed) == 4  # 3 candidates + the float
    assert deltas[0] == deltas[2] < 0  # a candidate equal in content to another: the same score
    float_copy = [dict(r) for r in float_records]  # another list of the same content: hashed, same key
    assert compare.paired_records(float_copy, candidates[0], "AP", fresh)["delta"] == deltas[0]


def test_an_ap_s_verdict_says_its_interval_not_an_invented_number_of_images():
    from evalharness.report.views.repair_view import failed_checks, verdict
    from evalharness.stats.power import interval_resolution

    def repair(interval: list[float] | None, variant: float) -> dict:
        held = {"images": 40, "float": 0.30, "variant": variant, "delta": variant - 0.30,
                "interval": interval, "holds": 0.30 - variant <= 0.01}  # fmt: skip
        return {"status": "met", "metric": "segm_AP", "metric_source": "the model's head gives masks",
                "target": "segm_AP drop <= 0.01 (absolute)", "allowed_drop": 0.01, "held_out": held,
                "resolution": interval_resolution(40, 0.01, interval)}  # fmt: skip

    wide = repair([-0.06, 0.01], 0.27)
    assert failed_checks({"repair": wide}) == []  # cannot resolve: reported, not checked
    line = verdict(wide)
    assert "[segm_AP: the model's head gives masks]" in line
    said = "not a check: 40 paired images cannot resolve a drop of 0.01: their 95% paired interval is 0.0700"
    assert said in line
    assert "images would" not in line.replace("how many images would", "")  # no count claimed
    narrow = repair([-0.036, -0.028], 0.27)
    assert narrow["resolution"]["resolves"] and failed_checks({"repair": narrow})  # a miss it resolves
    none = repair(None, 0.30)
    assert "gave no paired interval" in verdict(none) and not none["resolution"]["resolves"]
    # 4 images: 35 distinct resamples, fewer than the 40 a 95% percentile interval's tails need
    few = {**narrow, "held_out": {**narrow["held_out"], "images": 4},
           "resolution": interval_resolution(4, 0.01, [-0.036, -0.036])}  # fmt: skip
    assert not few["resolution"]["resolves"] and failed_checks({"repair": few}) == []
    assert "4 paired images cannot resolve a drop of 0.01: they allow 35 distinct bootstrap" in verdict(few)
    assert interval_resolution(5, 0.01, [-0.036, -0.036])["resolves"]  # 126 resamples
