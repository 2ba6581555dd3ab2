"""How sure is "B is 3 % faster"? Bootstrap intervals of the speed-up (A / B) of mean and p50 latency.

Each run's per-invoke samples (``latency_ms`` of every predictions.jsonl line) are resampled
independently (the two runs' timings are separate measurements; pairing by image would add nothing
when latency hardly depends on the image). A speed-up whose interval contains 1 is reported as
noise: the runs' latencies are not distinguishable at this number of invokes.
"""

from __future__ import annotations

import numpy as np

from evalharness.stats.intervals import CONFIDENCE, fmt_interval, percentile_interval

RESAMPLES = 1000
SEED = 0
STATS = {"mean": np.mean, "p50": np.median}


def speedup_intervals(a: np.ndarray, b: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """{stat: {"speedup", "interval", "noise"}} for mean and p50, or {} without samples in both."""
    if a.size < 2 or b.size < 2:
        return {}
    rng = np.random.default_rng(seed)
    draws_a = a[rng.integers(0, a.size, size=(resamples, a.size))]
    draws_b = b[rng.integers(0, b.size, size=(resamples, b.size))]
    out = {}
    for name, stat in STATS.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = stat(draws_a, axis=1) / stat(draws_b, axis=1)
        interval = percentile_interval(ratios, CONFIDENCE)
        out[name] = {
            "speedup": float(stat(a) / stat(b)) if stat(b) else None,
            "interval": interval,
            "noise": interval is not None and interval[0] <= 1 <= interval[1],
        }
    return {"confidence": CONFIDENCE, "resamples": resamples, "seed": seed, "samples": [a.size, b.size],
            "stats": out}  # fmt: skip


def notes(doc: dict) -> list[str]:
    """One line per statistic: the speed-up, its interval, and whether it is noise."""
    boot = doc.get("latency_speedup") or {}
    lines = []
    for name, row in (boot.get("stats") or {}).items():
        if row["speedup"] is None:
            continue
        verdict = "noise (interval contains 1)" if row["noise"] else (
            "B faster" if row["interval"][0] > 1 else "B slower"
        )  # fmt: skip
        lines.append(
            f"{name} speed-up {row['speedup']:.3f}, {boot['confidence']:.0%} bootstrap interval "
            f"{fmt_interval(row['interval'], '.3f')} ({boot['samples'][0]} / {boot['samples'][1]} invokes): "
            f"{verdict}"
        )
    return lines
