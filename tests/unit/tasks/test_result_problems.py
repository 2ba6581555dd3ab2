"""The invariants every task's result is held to where it is made (run, resume, merge): read from
the declared metrics' meta (``fraction``, ``undefined``)."""

from __future__ import annotations

from evalharness.tasks.metrics import Metric, defined_value, result_problems

FRACTIONS = (
    Metric("top1", fraction=True, undefined=": nothing to score"),
    Metric("top5", fraction=True),
)


def test_more_scored_than_listed_is_no_score():
    problems = result_problems(FRACTIONS, {"num_scored": 6, "num_images": 5, "top1": 0.5})
    assert problems == ["6 samples scored of 5 listed: a sample was counted twice"]


def test_fractions_outside_zero_one_are_undefined_in_one_line():
    assert result_problems(FRACTIONS, {"top1": -1.0, "top5": float("nan")}) == [
        "top1 -1.0, top5 nan: undefined, not in [0, 1]: nothing to score"
    ]
    assert result_problems(FRACTIONS, {"top1": 0.0, "top5": 1.0, "num_scored": 5, "num_images": 5}) == []
    assert result_problems((Metric("mse"),), {"mse": 7.5}) == []  # a task declares its fractions


def test_a_family_of_fractions_is_checked_member_by_member():
    family = (Metric("top{k}", fraction=True),)
    assert result_problems(family, {"top1": 0.5, "top2": 1.5, "top10": -1}) == [
        "top2 1.5, top10 -1: undefined, not in [0, 1]"
    ]


def test_a_repairs_metric_is_defined_by_the_same_meta():
    """What a repair bounds (transforms/repair_eval.py) is read with the same checks: a number, in
    [0, 1] when declared a fraction (a family's member too); an undeclared number is taken as is."""
    declared = (Metric("AP", fraction=True), Metric("top{k}", fraction=True))
    assert defined_value(declared, {"AP": 0.25}, "AP") == 0.25
    assert defined_value(declared, {"AP": -1.0}, "AP") is None  # pycocotools: nothing scored
    assert defined_value(declared, {"top2": 1.5}, "top2") is None
    assert defined_value(declared, {"AP": True}, "AP") is None and defined_value(declared, {}, "AP") is None
    assert defined_value(declared, {"mse": 7.5}, "mse") == 7.5
