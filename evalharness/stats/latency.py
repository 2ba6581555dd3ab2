"""Latency statistics: pure functions on lists of milliseconds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np

PERCENTILES = (50, 90, 99)


class _Count(TypedDict):
    count: int


class LatencySummary(_Count, total=False):
    """metrics.json ``latency_ms.inference`` / ``warmup``: ``count`` alone when nothing was timed."""

    mean: float
    std: float
    min: float
    max: float
    p50: float
    p90: float
    p99: float


def summarize(samples_ms: Sequence[float]) -> LatencySummary:
    """count, mean, std (population, as benchmark_model), min, max and p50/p90/p99 in ms."""
    if not samples_ms:
        return {"count": 0}
    a = np.asarray(samples_ms, dtype=np.float64)
    p50, p90, p99 = (float(np.percentile(a, p)) for p in PERCENTILES)
    return {
        "count": int(a.size),
        "mean": float(a.mean()),
        "std": float(a.std()),
        "min": float(a.min()),
        "max": float(a.max()),
        "p50": p50,
        "p90": p90,
        "p99": p99,
    }
