"""A run's per-invoke latencies, read from its predictions, and the speed-up intervals of two runs
(:mod:`evalharness.stats.speedup` does the statistics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from evalharness.report.runs import definition_of
from evalharness.rundir.reader import Run
from evalharness.stats.speedup import speedup_intervals


def samples(run: Run) -> np.ndarray:
    """The run's per-invoke latencies (ms); empty for a task that writes no predictions."""
    writes = definition_of(run).abilities.writes_predictions
    stored = writes and run.document.predictions.count
    values = [r.get("latency_ms") for r in run.predictions] if stored else []
    return np.asarray([v for v in values if isinstance(v, int | float)], dtype=np.float64)


def run_speedups(a: Run, b: Run) -> dict[str, Any]:
    return speedup_intervals(samples(a), samples(b))
