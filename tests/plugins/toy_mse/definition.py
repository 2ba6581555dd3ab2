"""Toy task plug-in, definition half: mean squared error of a model's top score against per-file
targets, declared as one :class:`Metric` (its results.txt line, diff row, sweep and quantization
columns come from that declaration), how two runs pair, and the one verdict and table of its own.
With ``live.py`` and ``conf/task/toy_mse.yaml`` it is the whole task: run, resume, shard + merge,
rescore, diff (+ gate), sweep and the quantization table come from evalharness without touching any
other module. Its own dataset field, ``dataset.targets``, is declared here.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalharness.core.tables import Section
from evalharness.stats.paired import pair_by_id
from evalharness.tasks.comparison import Comparison
from evalharness.tasks.definition import Abilities, Scorer, TaskDefinition, register
from evalharness.tasks.metrics import Metric
from evalharness.tasks.view import TaskView


@dataclass
class ToyMseSettings:
    name: str = "toy_mse"
    num_images: int = 0


@dataclass
class ToyMseDataset:
    targets: str = "???"  # CSV: filename,target


class MseScorer(Scorer):
    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, record: dict) -> None:
        self.total += (record["prediction"] - record["target"]) ** 2
        self.count += 1

    def result(self) -> dict:
        return {"mse": self.total / self.count if self.count else 0.0, "num_scored": self.count}


class SquaredErrorComparison(Comparison):
    key = "squared_error"

    def compare(self, a, b, options) -> dict:
        pairs, only_a, only_b = pair_by_id(a.predictions, b.predictions)
        changed = [pa["id"] for pa, pb in pairs if pa["prediction"] != pb["prediction"]]
        return {"paired_images": len(pairs), "only_in_a": only_a, "only_in_b": only_b,
                "predictions_changed": len(changed), "changed": changed}  # fmt: skip

    def agreement(self, a, b) -> dict:
        c = self.compare(a, b, {})
        same = c["paired_images"] - c["predictions_changed"]
        return {"name": "same prediction", "value": same / c["paired_images"] if c["paired_images"] else None,
                "p": None, "samples": c["paired_images"]}  # fmt: skip


class ToyMseView(TaskView):
    def verdict(self, diff: dict) -> str:
        return f"{diff[SquaredErrorComparison.key]['predictions_changed']} prediction(s) changed"

    def diff_sections(self, comparison: dict, max_rows: int) -> list[Section]:
        rows = [[image] for image in comparison["changed"][:max_rows]]
        return [Section("Changed predictions", ["image"], rows, key="changed")]


@register
class ToyMseDefinition(TaskDefinition):
    name = "toy_mse"
    schema = ToyMseSettings
    dataset_schema = ToyMseDataset
    live = "toy_mse.live:ToyMseTask"
    abilities = Abilities(sample_key="id", can_resume=True, rescorable=True)
    metrics = (Metric("mse", label="MSE", format=".6g", higher_is_better=False, headline=True, sweep=True),)
    comparison = SquaredErrorComparison
    view = ToyMseView

    def scorer(self, ground_truth=None) -> MseScorer:
        return MseScorer()
