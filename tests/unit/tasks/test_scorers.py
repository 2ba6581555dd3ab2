"""Each task's pure scorer, records in -> metrics out, without a model, a runtime or the shared
assets: the live run, ``report rescore`` and ``report merge`` all call these, so their arithmetic is
pinned here once (brute-force references, hand-made COCO sets)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalharness.core.errors import EvalHarnessError
from evalharness.stats.intervals import wilson
from evalharness.tasks.benchmark.definition import BenchmarkDefinition
from evalharness.tasks.coco.definition import CocoDefinition
from evalharness.tasks.imagenet.definition import ImageNetDefinition
from evalharness.tasks.imagenet.view import short
from evalharness.tasks.inference_diff.definition import InferenceDiffDefinition, mean_interval

records_strategy = st.lists(
    st.tuples(st.integers(0, 9), st.permutations(list(range(10)))), min_size=1, max_size=40
)


def _imagenet(k: int = 5):
    return ImageNetDefinition({"top_k": k})


def _records(pairs) -> list[dict]:
    return [
        {"id": f"i{n}", "label_index": t, "label": f"c{t}", "topk": list(p)[:5]}
        for n, (t, p) in enumerate(pairs)
    ]


@settings(max_examples=60, deadline=None)
@given(records_strategy, st.integers(1, 5))
def test_top_k_equals_a_brute_force_count(pairs, k):
    records = _records(pairs)
    scorer = _imagenet(k).scorer()
    for r in records:
        scorer.add(r)
    m = scorer.result()
    for i in range(1, k + 1):
        hits = sum(r["label_index"] in r["topk"][:i] for r in records)
        assert m["correct"][f"top{i}"] == hits
        assert m[f"top{i}"] == pytest.approx(hits / len(records))
        assert m["intervals"][f"top{i}"] == wilson(hits, len(records))
    assert m["num_scored"] == len(records)
    assert all(m[f"top{i}"] <= m[f"top{i + 1}"] for i in range(1, k))  # top-k never falls with k


def test_top_k_of_nothing_is_zero_not_a_division_by_zero():
    m = _imagenet(3).scorer().result()
    assert m["top1"] == 0.0 and m["num_scored"] == 0


def test_per_class_counts_and_confusions():
    scorer = _imagenet(1).scorer()
    for t, p in [(1, [1]), (1, [2]), (2, [2]), (2, [1]), (2, [1])]:
        rank = p.index(t) if t in p else None
        scorer.add({"label_index": t, "label": f"c{t}", "topk": p, "rank": rank, "topk_labels": [f"c{p[0]}"]})
    analysis = scorer.result()["analysis"]
    rows = {r["label"]: r for r in analysis["per_class"]}
    assert rows["c1"]["images"] == 2 and rows["c1"]["correct"] == 1
    assert rows["c2"]["images"] == 3 and rows["c2"]["correct"] == 1
    assert analysis["confusions"][0] == {"truth": "c2", "predicted": "c1", "count": 2}
    assert analysis["confusions_total"] == 3


@pytest.mark.parametrize(("asked", "ok"), [(None, True), (1, True), (3, True), (4, False), (0, False)])
def test_rescore_k_is_bounded_by_what_the_records_store(asked, ok):
    records = [{"label_index": 0, "topk": [0, 1, 2]}, {"label_index": 1, "topk": [0, 1, 2, 3]}]
    definition = _imagenet()
    if ok:
        assert definition.rescorer([], records, top_k=asked).top_k == (asked or 3)
    else:
        with pytest.raises(EvalHarnessError, match="store top-3"):
            definition.rescorer([], records, top_k=asked)


def test_rescore_refuses_a_detection_backend_for_classification():
    with pytest.raises(EvalHarnessError, match="--backend"):
        _imagenet().rescorer([], [{"label_index": 0, "topk": [0]}], backend="faster_coco_eval")


@pytest.mark.parametrize(
    ("label", "shown"), [("tabby, tabby cat", "tabby"), ("espresso", "espresso"), (None, "n/a")]
)
def test_short_label_is_the_first_synonym(label, shown):
    assert short(label) == shown


def test_benchmark_counts_runs():
    scorer = BenchmarkDefinition({}).scorer()
    for _ in range(7):
        scorer.add({})
    assert scorer.result() == {"num_scored": 7}


def _output_stats(avg, cosine=1.0, nonfinite=0, test_abs_max=1.0, ref_abs_max=1.0):
    return {"avg": avg, "max": avg * 2, "p99": avg * 1.5, "nonfinite": nonfinite, "cosine": cosine,
            "test_abs_max": test_abs_max, "ref_abs_max": ref_abs_max}  # fmt: skip


def test_inference_diff_statistics_and_interval():
    scorer = InferenceDiffDefinition({}).scorer(["out"])
    for i, avg in enumerate([0.1, 0.2, 0.3]):
        scorer.add({"id": str(i), "outputs": [_output_stats(avg)]})
    m = scorer.result()
    out = m["outputs"][0]
    assert out["avg_error"] == pytest.approx(0.2) and out["max_abs_error"] == pytest.approx(0.6)
    assert m["failed_checks"] == [] and m["num_scored"] == 3
    low, high = m["intervals"]["avg_error"]["out"]
    assert low < 0.2 < high


@pytest.mark.parametrize(
    ("stats", "check"),
    [
        ({"nonfinite": 1}, "nan_or_inf"),
        ({"test_abs_max": 0.0, "ref_abs_max": 1.0}, "silent_zero"),
        ({"cosine": 0.5}, "low_cosine"),
    ],
)
def test_inference_diff_checks_fail_by_name(stats, check):
    scorer = InferenceDiffDefinition({}).scorer(["logits"])
    scorer.add({"id": "0", "outputs": [_output_stats(0.1, **stats)]})
    assert scorer.result()["failed_checks"] == [f"logits: {check}"]


def test_mean_interval_needs_two_runs():
    import numpy as np

    assert mean_interval(np.array([1.0])) is None
    low, high = mean_interval(np.array([1.0, 1.0, 1.0]))
    assert low == high == 1.0


def _coco_set() -> dict:
    images = [{"id": i, "width": 100, "height": 100} for i in (1, 2)]
    boxes = [(1, 1, [10, 10, 30, 30]), (2, 1, [50, 50, 20, 20]), (3, 2, [5, 5, 40, 40])]
    annotations = [
        {"id": a, "image_id": img, "category_id": 1, "bbox": bbox, "area": bbox[2] * bbox[3], "iscrowd": 0}
        for a, img, bbox in boxes
    ]
    return {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "thing"}]}


def _coco_score(detections_per_image: dict[int, list]) -> dict:
    definition = CocoDefinition({"bootstrap_resamples": 0, "tflite_tool_ap": False, "analysis": False})
    scorer = definition.scorer(_coco_set())
    for image_id in (1, 2):
        scorer.add({"image_id": image_id, "detections": detections_per_image.get(image_id, [])})
    return scorer.result()


def test_coco_perfect_detections_score_one_and_none_score_zero():
    perfect = {1: [[1, 0.9, 10, 10, 30, 30], [1, 0.8, 50, 50, 20, 20]], 2: [[1, 0.7, 5, 5, 40, 40]]}
    assert _coco_score(perfect)["AP50"] == pytest.approx(1.0)
    empty = _coco_score({})
    assert empty["num_detections"] == 0 and (empty["AP50"] in (0.0, -1.0) or math.isnan(empty["AP50"]))


def test_coco_a_missed_box_lowers_recall_not_precision():
    one_missing = {1: [[1, 0.9, 10, 10, 30, 30]], 2: [[1, 0.7, 5, 5, 40, 40]]}
    m = _coco_score(one_missing)
    assert 0.0 < m["AP50"] < 1.0 and m["num_scored"] == 2 and m["num_detections"] == 2
