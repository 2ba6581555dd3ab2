"""compare --chain without running anything: the steps a chain makes, the step that loses most, and
the output SNR over the records' top-K scores."""

from __future__ import annotations

import math

import pytest

from evalharness.core.errors import ConfigError
from evalharness.run.compare import chain_steps
from evalharness.run.compare_view import loser
from evalharness.stats.score_snr import topk_snr_db


def test_each_key_moves_one_step_at_a_time_in_the_order_given():
    steps = chain_steps(
        ["model.path=m/src.onnx,m/fp32.tflite", "quant=none,int8", "delegate=cpu,gpu", "x.y=1"]
    )
    assert [s["label"] for s in steps] == [
        "model.path=src, quant=none, delegate=cpu", "model.path=fp32", "quant=int8", "delegate=gpu"
    ]  # fmt: skip
    assert steps[2]["job"] == ["x.y=1", "model.path=m/fp32.tflite", "quant=int8", "delegate=cpu"]
    assert steps[3]["job"] == ["x.y=1", "model.path=m/fp32.tflite", "quant=int8", "delegate=gpu"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["delegate=cpu"], "needs KEY=A,B"),
        (["quant=int8,int8"], "repeated in a row"),
        (["-m", "a=1,2"], "no -m"),
    ],
)
def test_a_chain_that_is_no_chain_is_one_error(args, words):
    with pytest.raises(ConfigError, match=words):
        chain_steps(args)


def _row(step, delta, interval=None, changed=0):
    return {"step": step, "change": f"s{step}", "delta": delta, "delta_interval": interval,
            "answers_changed": changed, "changed_samples": [f"img{i}" for i in range(changed)]}  # fmt: skip


def test_the_loser_is_the_lowest_significant_drop_else_the_lowest_drop():
    rows = [_row(0, None), _row(1, -0.10, [-0.3, 0.1], 5), _row(2, -0.04, [-0.08, -0.01], 2), _row(3, 0.2)]
    assert loser(rows)["step"] == 2 and loser(rows)["significant"]
    rows[2]["delta_interval"] = [-0.08, 0.01]
    found = loser(rows)
    assert found["step"] == 1 and not found["significant"] and found["changed_samples"][0] == "img0"
    assert loser([_row(0, None), _row(1, 0.0)]) is None


def test_snr_over_the_scores_both_records_carry():
    a = [{"id": "x", "topk": [1, 2, 3], "scores": [3.0, 2.0, 1.0]}]
    assert topk_snr_db(a, a) == (math.inf, 3)
    b = [{"id": "x", "topk": [2, 1, 9], "scores": [2.0, 2.0, 5.0]}]  # class 1: 3 -> 2; class 2 equal
    snr, pairs = topk_snr_db(a, b)
    assert pairs == 2 and snr == pytest.approx(10 * math.log10((9 + 4) / 1))
    assert topk_snr_db([{"id": "x", "detections": []}], [{"id": "x"}]) == (None, 0)


def test_what_moved_most_per_task_for_a_chain_step():
    from types import SimpleNamespace

    from evalharness.tasks.coco.view import CocoView
    from evalharness.tasks.imagenet.view import ImageNetView

    definition = SimpleNamespace(settings=None)
    per_class = [
        {"name": "person", "delta": -0.0126, "paired": {"interval": [-0.0163, 0.0]}},
        {"name": "car", "delta": 0.0045, "paired": None},
        {"name": "dog", "delta": 0.0},
    ]
    rows, text = CocoView(definition).moved_most({"per_class": per_class}, 5)
    assert [r["name"] for r in rows] == ["person", "car"]  # an unmoved class is no row
    assert text == "per-class ΔAP, most moved: person -0.0126 [-0.0163, +0.0000], car +0.0045"
    assert CocoView(definition).moved_most({"per_class": per_class[2:]}, 5) == ([], "per-class AP unchanged")
    top5 = [{"id": f"im{i}", "max_score_gap": 0.5 / (i + 1)} for i in range(3)]
    rows, text = ImageNetView(definition).moved_most({"top5_changes": top5}, 2)
    assert (
        len(rows) == 2 and text == "top-5 lists changed on 3 images: im0 (gap 0.5), im1 (gap 0.25) (+1 more)"
    )
    assert (
        ImageNetView(definition).moved_most({"top5_changes": []}, 2)[1] == "top-5 lists equal on every image"
    )
    assert ImageNetView(definition).moved_most({}, 2) == ([], None)  # a diff made before the list
