"""benchmark_model's figures: the task's config and rules; it scores nothing.

Timing and memory come from the run loop like every other task; the records only count the runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.core.documents import JSONMap
from evalharness.core.errors import ConfigError
from evalharness.core.schema import bounds
from evalharness.stats.validity import Rule
from evalharness.tasks.benchmark.view import BenchmarkView
from evalharness.tasks.defaults import from_conf
from evalharness.tasks.definition import Abilities, Rules, Scorer, TaskDefinition, register


@dataclass
@from_conf("benchmark")  # the defaults: conf/task/benchmark.yaml
class BenchmarkSettings:
    name: str
    num_runs: int = field(metadata=bounds(1))
    min_secs: float = field(metadata=bounds(0.0))
    max_runs: int = field(metadata=bounds(1))
    seed: int
    start_up: str  # cold | warm | both: start-ups measured again in child processes
    op_profile: bool  # per-op time and placement after the loop (same as loop.op_profile)


class RunCounter(Scorer):
    def __init__(self) -> None:
        self.count = 0

    def add(self, record: Mapping[str, Any]) -> None:
        self.count += 1

    def result(self) -> JSONMap:
        return {"num_scored": self.count}


@register
class BenchmarkDefinition(TaskDefinition):
    name = "benchmark"
    schema = BenchmarkSettings
    live = "evalharness.tasks.benchmark.live:BenchmarkTask"
    listing_order = 3
    abilities = Abilities(
        reads_dataset=False, writes_predictions=False, latency_only=True
    )  # one seeded input
    view = BenchmarkView

    def scorer(self, ground_truth: Any = None) -> RunCounter:
        return RunCounter()

    def rules(self) -> Rules:
        """Its own stopping rules are its latency validity's: at least ``num_runs`` invokes over at
        least ``min_secs`` (the CV and throttling bounds as everywhere); ``max_runs`` bounds them."""
        s = self.settings
        num_runs, max_runs = s["num_runs"], s["max_runs"]
        if max_runs < num_runs:
            raise ConfigError(f"task.max_runs={max_runs} must be >= task.num_runs={num_runs}")
        latency = Rule(min_secs=float(s["min_secs"]), min_invokes=int(num_runs))
        return Rules(latency=latency, op_profile=bool(s["op_profile"]), start_up=str(s["start_up"]))
