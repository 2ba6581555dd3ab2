"""Latency statistics: pure functions on lists of milliseconds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

PERCENTILES = (50, 90, 99)


def summarize(samples_ms: Sequence[float]) -> dict[str, Any]:
    """count, mean, std (population, as benchmark_model), min, max and p50/p90/p99 in ms."""
    if not samples_ms:
        return {"count": 0}
    a = np.asarray(samples_ms, dtype=np.float64)
    stats = {
        "count": int(a.size),
        "mean": float(a.mean()),
        "std": float(a.std()),
        "min": float(a.min()),
        "max": float(a.max()),
    }
    for p in PERCENTILES:
        stats[f"p{p}"] = float(np.percentile(a, p))
    return stats
