"""A metric's meta: which names of a result it covers, where its value is, its labels, and the
sweep columns; and the definition itself stays a declaration (at most 15 members)."""

from __future__ import annotations

import ast
import inspect

import pytest

from evalharness.tasks import definition as definition_module
from evalharness.tasks.definition import Abilities, TaskDefinition
from evalharness.tasks.metrics import Metric, sweep_names, values

TOPK = Metric("top{k}", label="Top-{k} Accuracy", title="top-{k}", sweep=True, pick=("top1", "top5"))


def test_a_family_covers_every_k_in_k_order():
    metrics = {"top10": 0.9, "top2": 0.6, "top1": 0.5, "correct": {"top1": 5}, "topx": 1.0}
    assert TOPK.members(metrics) == ["top1", "top2", "top10"]
    assert TOPK.text(TOPK.label, "top10") == "Top-10 Accuracy"
    assert TOPK.picked(metrics) == ["top1"]  # top5 was not scored (top_k=2 and 10 only)
    assert TOPK.picked({"top1": 0.5, "top5": 0.7, "top3": 0.6}) == ["top1", "top5"]


def test_a_path_is_walked_and_a_missing_or_non_number_is_absent():
    tool = Metric("tflite_AP", path="tflite_tool.AP")
    found = values([tool, Metric("AP")], {"AP": 0.3, "tflite_tool": {"AP": 0.25}})
    assert found == {"tflite_AP": 0.25, "AP": 0.3}
    assert values([tool, Metric("AP")], {"AP": True, "tflite_tool": "n/a"}) == {}
    assert Metric("mse").text("", "mse") == "mse"  # no label: the name


def test_sweep_columns_are_the_declared_sweep_names_in_order():
    declared = (TOPK, Metric("AP", sweep=True), Metric("AR1"))
    assert sweep_names(declared) == ("top1", "top5", "AP")


def test_a_metric_is_frozen_meta():
    with pytest.raises(AttributeError):
        TOPK.name = "top"  # type: ignore[misc]


def test_abilities_say_when_shards_merge():
    assert Abilities(sample_key="id").mergeable
    assert not Abilities(sample_key="id", reads_dataset=False).mergeable
    assert not Abilities().mergeable


def test_the_definition_has_at_most_fifteen_members():
    tree = ast.parse(inspect.getsource(definition_module))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == TaskDefinition.__name__)
    kinds = (ast.FunctionDef, ast.AnnAssign, ast.Assign)
    assert len([n for n in cls.body if isinstance(n, kinds)]) <= 15
