"""How sure is "B is 3 % faster"? The interval of an interleaved speed-up (:func:`paired_block_speedup`),
and the bootstrap of two separate runs' invokes (:func:`speedup_intervals`).

Two runs measured one after the other (``report diff``, a sweep's jobs) share no round: the machine's
drift between them (clock, thermal state, other load) is in their ratio, and a bootstrap of each
run's per-invoke samples knows nothing of it, so its interval is narrower than the truth. Such a
ratio is printed marked sequential with no interval (:data:`SEQUENTIAL`); the bootstrap stays in
``report diff``'s JSON (``latency_speedup``, ``measured: sequential``) for the ``--fail-if`` rules
that name it. Only an interleaved measurement (``compare``) prints an interval beside a speed-up.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from evalharness.stats.intervals import CONFIDENCE, percentile_interval, t_value

# how a ratio of two separate runs' timings is printed: marked sequential, with no interval (the
# bootstrap of each run's invokes leaves out the machine's drift between the runs; the issue that
# found it: 1.265x [1.252, 1.286] sequentially, 1.013x [0.979, 1.048] interleaved)
SEQUENTIAL = (
    "measured sequentially (one run after the other), so no interval: the machine's drift between "
    "the runs is in it; `evalharness compare KEY=A,B` measures them interleaved, with one"
)
RESAMPLES = 1000
SEED = 0
BLOCK_VALUES = 1 << 20  # resampled values drawn at a time (8 MB of float64)
STATS: dict[str, Callable[..., Any]] = {"mean": np.mean, "p50": np.median}


def speedup_intervals(
    a: np.ndarray, b: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED
) -> dict[str, Any]:
    """{stat: {"speedup", "interval", "noise"}} for mean and p50, or {} without samples in both."""
    if a.size < 2 or b.size < 2:
        return {}
    rng = np.random.default_rng(seed)
    stats_a, stats_b = _resampled_stats(a, rng, resamples), _resampled_stats(b, rng, resamples)
    out = {}
    for name, stat in STATS.items():
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = stats_a[name] / stats_b[name]
        interval = percentile_interval(ratios, CONFIDENCE)
        out[name] = {
            "speedup": float(stat(a) / stat(b)) if stat(b) else None,
            "interval": interval,
            "noise": interval is not None and interval[0] <= 1 <= interval[1],
        }
    return {"confidence": CONFIDENCE, "resamples": resamples, "seed": seed, "samples": [a.size, b.size],
            "measured": "sequential", "stats": out}  # fmt: skip


def _resampled_stats(values: np.ndarray, rng: np.random.Generator, resamples: int) -> dict[str, np.ndarray]:
    """Each statistic of ``resamples`` bootstrap resamples of ``values``, drawn a block of rows at a
    time: the same draws (one generator, consumed in order) and the same numbers as one
    ``resamples × n`` matrix, in memory that stays near :data:`BLOCK_VALUES` (the whole matrix is
    400 MB an index array at 50,000 invokes)."""
    rows = max(1, BLOCK_VALUES // values.size)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in STATS}
    for start in range(0, resamples, rows):
        draws = values[rng.integers(0, values.size, size=(min(rows, resamples - start), values.size))]
        for name, stat in STATS.items():
            parts[name].append(stat(draws, axis=1))
    return {name: np.concatenate(found) for name, found in parts.items()}


def paired_block_speedup(base_blocks: list[float], cand_blocks: list[float], unit: int = 1,
                         confidence: float = CONFIDENCE) -> dict[str, Any]:  # fmt: skip
    """Speed-up of a candidate over the base from an interleaved measurement: ``base_blocks[r]`` and
    ``cand_blocks[r]`` are the two mean latencies of round r (blocks measured next to each other, in
    alternating order), so each round's ratio base / candidate is one paired observation that a
    drift of the machine between rounds does not bias. The interval is Student's t on the log ratios
    (a ratio is symmetric on the log scale; rounds, not invokes, are the independent units, and with
    ~10 rounds t keeps its coverage where a bootstrap's percentile interval is too narrow); the point
    is their geometric mean. ``unit`` > 1: the mean log ratio of each ``unit`` consecutive rounds is
    one observation (rounds measured on the same loads of the two models share those loads' lasting
    speed, so they are not independent of each other). ``significant``: the interval excludes 1."""
    base, cand = np.asarray(base_blocks, dtype=np.float64), np.asarray(cand_blocks, dtype=np.float64)
    if base.size != cand.size:
        raise ValueError("paired_block_speedup needs one block of each per round")
    usable = (base > 0) & (cand > 0)
    if unit > 1:
        usable[(base.size // unit) * unit :] = False  # a trailing part of a unit is left out
        logs = np.log(base / cand, where=usable, out=np.zeros(base.size))[: (base.size // unit) * unit]
        keep = usable[: logs.size].reshape(-1, unit).all(axis=1)
        logs = logs.reshape(-1, unit).mean(axis=1)[keep]
    else:
        logs = np.log(base[usable] / cand[usable])
    how = "per-round" if unit <= 1 else f"per-load ({unit} rounds)"
    out = {"method": f"t on {how} log ratios", "confidence": confidence, "units": int(logs.size)}
    if logs.size < 2:
        return {**out, "speedup": None, "interval": None, "significant": False}
    mean = float(logs.mean())
    half = t_value(logs.size - 1, confidence) * float(logs.std(ddof=1)) / np.sqrt(logs.size)
    interval = [float(np.exp(mean - half)), float(np.exp(mean + half))]
    return {**out, "speedup": float(np.exp(mean)), "interval": interval,
            "significant": not interval[0] <= 1 <= interval[1]}  # fmt: skip
