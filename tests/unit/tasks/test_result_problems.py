"""The invariants every task's result is held to where it is made (run, resume, merge)."""

from __future__ import annotations

from evalharness.tasks.definition import TaskDefinition


class Fractions(TaskDefinition):
    undefined_hint = ": nothing to score"

    def fractions(self, metrics: dict) -> list[str]:
        return ["top1", "top5"]


def test_more_scored_than_listed_is_no_score():
    problems = Fractions({}).result_problems({"num_scored": 6, "num_images": 5, "top1": 0.5})
    assert problems == ["6 samples scored of 5 listed: a sample was counted twice"]


def test_fractions_outside_zero_one_are_undefined_in_one_line():
    assert Fractions({}).result_problems({"top1": -1.0, "top5": float("nan")}) == [
        "top1 -1.0, top5 nan: undefined, not in [0, 1]: nothing to score"
    ]
    assert Fractions({}).result_problems({"top1": 0.0, "top5": 1.0, "num_scored": 5, "num_images": 5}) == []
    assert TaskDefinition({}).result_problems({"mse": 7.5}) == []  # a task declares its fractions
