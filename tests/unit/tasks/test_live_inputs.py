"""The one way a live task gets a run's settings (tasks.live.live_task): typed for a class that says
``typed_inputs`` (every built-in task), plain dicts for a plug-in that reads
them by key."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from evalharness.core.schema import build, extended, freeze
from evalharness.settings.groups import DatasetSchema, ModelSchema
from evalharness.tasks import live
from evalharness.tasks.live import Task, live_task, shard_of


@dataclass
class ToySettings:
    name: str = "toy"
    num_images: int = 0
    reference: Any = None  # a free-form group (as inference_diff's reference_delegate)


@dataclass
class ToyDataset:
    targets: str = "targets.csv"


class Definition:
    name = "toy"
    schema = ToySettings
    live = "unused:Unused"


class Typed(Task):
    typed_inputs = True

    def __init__(self, task: Any, model: Any, dataset: Any, split: Any = None) -> None:
        self.got = (task, model, dataset, split)


class Plain(Task):
    def __init__(self, task: Any, model: Any, dataset: Any) -> None:
        self.got = (task, model, dataset)


MODEL = {"name": "m", "path": "m.tflite", "labels": "l.txt"}
DATASET = {"name": "d", "root": "/d"}
TASK = {"name": "toy", "num_images": 3, "reference": {"name": "cpu"}}


@dataclass(frozen=True)
class Groups:
    model: Any = field(default_factory=lambda: build(ModelSchema, MODEL, "model"))
    dataset: Any = field(
        default_factory=lambda: build(extended(DatasetSchema, ToyDataset), DATASET, "dataset")
    )


def _made(monkeypatch: pytest.MonkeyPatch, cls: type, split: Any) -> Any:
    monkeypatch.setattr(live, "live_class", lambda definition: cls)
    groups = Groups()
    settings = freeze(TASK)  # as RunSettings holds it
    return live_task(Definition(), settings, groups.model, groups.dataset, split).got  # type: ignore[arg-type]


def test_a_typed_live_class_reads_every_group_by_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    task, model, dataset, split = _made(monkeypatch, Typed, {"fraction": 0.5, "part": "search"})
    assert isinstance(task, ToySettings) and task.num_images == 3 and task.reference["name"] == "cpu"
    assert model.path == "m.tflite" and dataset.root == "/d" and dataset.targets == "targets.csv"
    assert split == {"fraction": 0.5, "part": "search"}
    shard = shard_of(dataset, split)
    assert shard.count == 1 and shard.split is not None and shard.split.part == "search"


def test_a_plug_in_that_reads_by_key_gets_plain_dicts_with_the_split_in_the_dataset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task, model, dataset = _made(monkeypatch, Plain, {"fraction": 0.5, "part": "held_out"})
    assert task == TASK and type(model) is dict and model["path"] == "m.tflite"
    assert dataset["root"] == "/d" and dataset["split"] == {"fraction": 0.5, "part": "held_out"}
    assert "split" not in _made(monkeypatch, Plain, None)[2]


@pytest.mark.parametrize("name", ["imagenet", "coco", "inference_diff", "benchmark"])
def test_every_built_in_live_half_takes_typed_inputs(name: str) -> None:
    """No built-in task reads its groups by key: the plain-dict adapter is for plug-ins only."""
    from evalharness.tasks.discovery import definition_for

    assert live.live_class(definition_for(name)).typed_inputs
