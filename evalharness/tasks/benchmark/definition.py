"""benchmark_model's figures: the task's config and ``results.txt`` lines; it scores nothing.

Timing and memory come from the run loop like every other task; the records only count the runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.core.errors import ConfigError
from evalharness.core.schema import bounds
from evalharness.stats.validity import Rule
from evalharness.tasks.definition import Scorer, TaskDefinition, register


@dataclass
class BenchmarkSettings:
    name: str = "benchmark"
    num_runs: int = field(default=50, metadata=bounds(1))
    min_secs: float = field(default=1.0, metadata=bounds(0.0))
    max_runs: int = field(default=100000, metadata=bounds(1))
    seed: int = 0
    start_up: str = "as_found"  # cold | warm | both: start-ups measured again in child processes
    op_profile: bool = False  # per-op time and placement after the loop (same as loop.op_profile)


def cache_lines(passes: dict | None) -> list[str]:
    """The cold/warm lines of results.txt (nothing when the caches were taken as found)."""
    if not passes:
        return []
    lines = [
        f"{state.capitalize()} start ({p['run_dir']}), in us: Init: {p['init'] * 1e3:.0f}, "
        f"First inference: {p['first_inference'] * 1e3:.0f}, Inference (avg): {p['inference_mean'] * 1e3:.1f}"
        for state in ("cold", "warm")
        if (p := passes[state])
    ]
    if r := passes["reduction_pct"]:
        lines.append(
            f"Cold -> warm reduction: init {r['init']:.1f} %, first inference {r['first_inference']:.1f} %"
        )
    return lines


class RunCounter(Scorer):
    def __init__(self) -> None:
        self.count = 0

    def add(self, record: dict) -> None:
        self.count += 1

    def result(self) -> dict:
        return {"num_scored": self.count}


@register
class BenchmarkDefinition(TaskDefinition):
    name = "benchmark"
    schema = BenchmarkSettings
    live = "evalharness.tasks.benchmark.live:BenchmarkTask"
    listing_order = 3
    reads_dataset = False  # one seeded random input
    writes_predictions = False
    latency_only = True

    def check_settings(self) -> None:
        num_runs, max_runs = self.settings["num_runs"], self.settings["max_runs"]
        if max_runs < num_runs:
            raise ConfigError(f"task.max_runs={max_runs} must be >= task.num_runs={num_runs}")

    def scorer(self, ground_truth=None) -> RunCounter:
        return RunCounter()

    def op_profile(self) -> bool:
        return bool(self.settings["op_profile"])

    def latency_rule(self) -> Rule:
        """The task's own stopping rules are its validity's: at least ``num_runs`` invokes over at
        least ``min_secs`` (the CV and throttling bounds as everywhere)."""
        return Rule(min_secs=float(self.settings["min_secs"]), min_invokes=int(self.settings["num_runs"]))

    def start_up_passes(self) -> str:
        return str(self.settings["start_up"])

    def summary_lines(self, doc: Mapping[str, Any]) -> list[str]:
        lat, mem = doc["latency_ms"], doc["memory_mb"]
        inf = {k: v * 1e3 for k, v in lat["inference"].items() if k != "count"}  # ms -> us
        warmup_us = lat["warmup"].get("mean", 0.0) * 1e3
        return [
            f"Model size: {doc['provenance']['model']['bytes'] / 2**20:.3f} MB",
            f"Inference timings in us: Init: {lat['init'] * 1e3:.0f}, "
            f"First inference: {lat['first_inference'] * 1e3:.0f}, Warmup (avg): {warmup_us:.0f}, "
            f"Inference (avg): {inf['mean']:.1f}",
            f"count={lat['inference']['count']} min={inf['min']:.0f} max={inf['max']:.0f} "
            f"avg={inf['mean']:.1f} std={inf['std']:.0f} p50={inf['p50']:.0f} p90={inf['p90']:.0f} "
            f"p99={inf['p99']:.0f}",
            f"Memory footprint delta from the start of the tool (MB): init={mem['init_delta']:.3f} "
            f"overall={mem['overall_delta']:.3f}",
            f"Peak RSS (MB): {mem['peak_rss']:.3f}",
            *cache_lines(doc["metrics"].get("compile_cache")),
        ]
