"""Toy detection plug-in, definition half: the IoU of a model's decoded top box with a target box
per image. With ``live.py``, ``decoder.py`` (its own output decoder) and ``conf/task/toy_boxes.yaml``
it is the whole task: run, resume, shard + merge, rescore, diff (+ gate), sweep and the
quantization table come from evalharness without touching any other module. Its own dataset field,
``dataset.boxes``, is declared here; the decoder comes in as ``model.decoder`` like any detector's.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalharness.core.tables import Section
from evalharness.stats.boxes import iou_matrix
from evalharness.stats.paired import pair_by_id
from evalharness.tasks.comparison import Comparison
from evalharness.tasks.definition import Abilities, Scorer, TaskDefinition, register
from evalharness.tasks.metrics import Metric
from evalharness.tasks.view import TaskView

HIT = 0.5  # IoU that counts as finding the target


@dataclass
class ToyBoxesSettings:
    name: str = "toy_boxes"
    num_images: int = 0


@dataclass
class ToyBoxesDataset:
    boxes: str = "???"  # CSV: filename,x1,y1,x2,y2 (0..1 of the model input)


def iou(a: list[float], b: list[float]) -> float:
    return float(iou_matrix([a], [b])[0, 0])


class IouScorer(Scorer):
    def __init__(self) -> None:
        self.total, self.hits, self.count = 0.0, 0, 0

    def add(self, record: dict) -> None:
        value = iou(record["box"], record["target"])
        self.total, self.hits, self.count = self.total + value, self.hits + (value >= HIT), self.count + 1

    def result(self) -> dict:
        n = self.count
        mean, rate = (self.total / n, self.hits / n) if n else (0.0, 0.0)
        return {"mean_iou": mean, "hit_rate": rate, "num_scored": n}


class BoxChangeComparison(Comparison):
    key = "box_change"

    def compare(self, a, b, options) -> dict:
        pairs, only_a, only_b = pair_by_id(a.predictions, b.predictions)
        moved = [(pa["id"], iou(pa["box"], pb["box"])) for pa, pb in pairs if pa["box"] != pb["box"]]
        same = sum(1 for pa, pb in pairs if iou(pa["box"], pb["box"]) >= HIT)
        return {"paired_images": len(pairs), "only_in_a": only_a, "only_in_b": only_b,
                "boxes_moved": len(moved), "same_box": same, "moved": moved}  # fmt: skip

    def agreement(self, a, b) -> dict:
        c = self.compare(a, b, {})
        n = c["paired_images"]
        value = c["same_box"] / n if n else None
        return {"name": "same box (IoU >= 0.5)", "value": value, "p": None, "samples": n}


class ToyBoxesView(TaskView):
    def verdict(self, diff: dict) -> str:
        return f"{diff[BoxChangeComparison.key]['boxes_moved']} box(es) moved"

    def diff_sections(self, comparison: dict, max_rows: int) -> list[Section]:
        rows = [[image, f"{value:.3f}"] for image, value in comparison["moved"][:max_rows]]
        return [Section("Moved boxes", ["image", "IoU of A's and B's box"], rows, key="moved")]


@register
class ToyBoxesDefinition(TaskDefinition):
    name = "toy_boxes"
    schema = ToyBoxesSettings
    dataset_schema = ToyBoxesDataset
    live = "toy_boxes.live:ToyBoxesTask"
    abilities = Abilities(sample_key="id", can_resume=True, rescorable=True)
    metrics = (
        Metric("mean_iou", label="mean IoU", format=".6g", fraction=True, headline=True, sweep=True),
        Metric("hit_rate", label=f"hit rate (IoU >= {HIT})", format=".6g", fraction=True, sweep=True),
    )
    comparison = BoxChangeComparison
    view = ToyBoxesView

    def scorer(self, ground_truth=None) -> IouScorer:
        return IouScorer()
