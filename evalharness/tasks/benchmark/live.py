"""benchmark_model's figures, live half: init, first inference, warm-up, inference statistics, memory.

The same seeded random input (as ``inference_diff`` draws it) is invoked ``num_runs`` times, and
more until ``min_secs`` have passed (benchmark_model's two stopping rules, whichever is later, capped
at ``max_runs``). Timing and memory come from the run loop like every other task; this task only
supplies the input and prints the figures in benchmark_model's line format.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from evalharness.core.documents import JSONMap
from evalharness.core.tensors import TensorInfo
from evalharness.tasks.benchmark.definition import BenchmarkSettings
from evalharness.tasks.inference_diff.live import seed_tool_inputs
from evalharness.tasks.live import RecordEvaluator, Task


class Runs:
    """Run indices until both ``num_runs`` and ``min_secs`` are reached (at most ``max_runs``)."""

    def __init__(self, num_runs: int, min_secs: float, max_runs: int) -> None:
        self.num_runs, self.min_secs, self.max_runs = num_runs, min_secs, max_runs
        self.ran = 0

    @property
    def time_bound_s(self) -> float | None:
        """The loop's progress counts seconds when the clock, not ``num_runs``, bounds the runs."""
        return self.min_secs if self.min_secs > 0 else None

    def __len__(self) -> int:
        """``num_runs`` until the runs are made, then how many were (``min_secs`` may add runs):
        the run records as many samples listed as it scored."""
        return max(self.num_runs, self.ran)

    def __iter__(self) -> Iterator[int]:
        start, i = time.perf_counter(), 0
        while i < self.max_runs and (i < self.num_runs or time.perf_counter() - start < self.min_secs):
            yield i
            i += 1
            self.ran = i


class _Counter(RecordEvaluator):
    def record(self, sample: int, outputs: list[np.ndarray]) -> dict[str, Any]:
        return {"id": f"run{sample}"}  # counted, never written (nothing to score)


class BenchmarkTask(Task):
    name = "benchmark"
    samples: Runs  # type: ignore[assignment]  # sized and iterable, never indexed (no files to list)

    typed_inputs = True

    def __init__(self, task: BenchmarkSettings, model: Any, dataset: Any, split: Any = None) -> None:
        self.settings = task
        self.seed = task.seed
        self.samples = Runs(task.num_runs, task.min_secs, task.max_runs)
        self.evaluator = _Counter(self.definition.scorer)
        self._tensors: list[np.ndarray] = []

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        rng = np.random.default_rng(self.seed)
        self._tensors = [seed_tool_inputs(rng, info) for info in inputs]

    def sample_id(self, sample: int) -> str:
        return f"run{sample}"

    def prepare(self, sample: int) -> list[np.ndarray]:
        return self._tensors

    def provenance(self) -> JSONMap:
        return {
            "dataset": {
                "name": "random",
                "count": self.samples.num_runs,
                "seed": self.seed,
                "min_secs": self.samples.min_secs,
            }
        }
