"""Toy task plug-in, definition half: mean squared error of a model's top score against per-file
targets. With ``toy_mse_task.py`` and ``conf/task/toy_mse.yaml`` it is the whole task: run, resume,
shard + merge, rescore, diff and sweep come from evalharness without touching any other module.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalharness.core.tables import Section
from evalharness.stats.paired import pair_by_id
from evalharness.tasks.definition import Scorer, TaskDefinition, register


@dataclass
class ToyMseSettings:
    name: str = "toy_mse"
    targets: str = "???"  # CSV: filename,target
    num_images: int = 0


class MseScorer(Scorer):
    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, record: dict) -> None:
        self.total += (record["prediction"] - record["target"]) ** 2
        self.count += 1

    def result(self) -> dict:
        return {"mse": self.total / self.count if self.count else 0.0, "num_scored": self.count}


@register
class ToyMseDefinition(TaskDefinition):
    name = "toy_mse"
    schema = ToyMseSettings
    live = "toy_mse_task:ToyMseTask"
    sample_key = "id"
    can_resume = True
    rescorable = True
    comparison = "squared_error"
    sweep_metrics = ("mse",)

    def scorer(self, ground_truth=None) -> MseScorer:
        return MseScorer()

    def summary_lines(self, doc: dict) -> list[str]:
        return [f"MSE: {doc['metrics']['mse']:.6g}"]

    def headline(self, metrics: dict) -> dict[str, float]:
        return {"mse": metrics["mse"]}

    def compare(self, a, b, options) -> dict:
        pairs, only_a, only_b = pair_by_id(a.predictions, b.predictions)
        changed = [pa["id"] for pa, pb in pairs if pa["prediction"] != pb["prediction"]]
        return {"paired_images": len(pairs), "only_in_a": only_a, "only_in_b": only_b,
                "predictions_changed": len(changed), "changed": changed}  # fmt: skip

    def verdict(self, diff: dict) -> str:
        return f"{diff[self.comparison]['predictions_changed']} prediction(s) changed"

    def diff_sections(self, comparison: dict, max_rows: int) -> list[Section]:
        rows = [[image] for image in comparison["changed"][:max_rows]]
        return [Section("Changed predictions", ["image"], rows, key="changed")]
