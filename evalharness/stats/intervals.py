"""Confidence intervals and sample sizes for accuracy figures, with no dependency beyond the stdlib.

A top-1 of 0.74 on 50 images is 0.60..0.85 at 95 %: printing the point alone invites reading noise.
Single proportions get the Wilson score interval (closed form, good coverage at small n and near 0
or 1, unlike the Wald interval); the change between two runs on the same images gets Newcombe's
hybrid score interval for paired proportions (his method 10), built from the two Wilson intervals
and the correlation of the paired outcomes. Bootstrap helpers (percentile interval, two-sided p)
serve the statistics that have no closed form (COCO AP, latency ratios).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np

from evalharness.stats.power import CONFIDENCE as CONFIDENCE  # re-exported: its readers import it here
from evalharness.stats.power import POWER as POWER
from evalharness.stats.power import images_for_paired_change

# CONFIDENCE: every interval in metrics.json and the reports; POWER: of the "images needed" figures
TIE = 1e-12  # resampled changes this close to 0 are no change (float rounding of equal sums)


def z_value(confidence: float = CONFIDENCE) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def t_value(df: int, confidence: float = CONFIDENCE) -> float:
    """Student's t quantile (two-sided ``confidence``) for ``df`` >= 1 degrees of freedom, with no
    dependency: closed forms for df 1 and 2, the Cornish-Fisher expansion around the normal quantile
    above (slightly narrow at df = 3, within 0.01 % from df = 5: docs/compare.md)."""
    if df < 1:
        raise ValueError("t_value needs df >= 1")
    q = 0.5 + confidence / 2
    if df == 1:
        return math.tan(math.pi * (q - 0.5))
    if df == 2:
        a = 4 * q * (1 - q)
        return (2 * q - 1) * math.sqrt(2 / a)
    z = z_value(confidence)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> list[float] | None:
    """Wilson score interval [low, high] of successes/n; None when n is 0."""
    if n <= 0:
        return None
    z = z_value(confidence)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def paired_difference(
    both: int, a_only: int, b_only: int, neither: int, confidence: float = CONFIDENCE
) -> list[float] | None:
    """Interval of p(B right) - p(A right) on paired outcomes (Newcombe 1998, method 10).

    ``both``: images both runs get right; ``a_only``: right in A only; ``b_only``: right in B only;
    ``neither``: wrong in both.
    """
    n = both + a_only + b_only + neither
    if n == 0:
        return None
    p_b, p_a = (both + b_only) / n, (both + a_only) / n
    b_interval, a_interval = wilson(both + b_only, n, confidence), wilson(both + a_only, n, confidence)
    assert b_interval is not None and a_interval is not None  # n > 0
    (low_b, high_b), (low_a, high_a) = b_interval, a_interval
    margins = (both + a_only) * (b_only + neither) * (both + b_only) * (a_only + neither)
    phi = (both * neither - a_only * b_only) / math.sqrt(margins) if margins else 0.0
    diff = p_b - p_a
    below = (p_b - low_b) ** 2 - 2 * phi * (p_b - low_b) * (high_a - p_a) + (high_a - p_a) ** 2
    above = (high_b - p_b) ** 2 - 2 * phi * (high_b - p_b) * (p_a - low_a) + (p_a - low_a) ** 2
    return [max(-1.0, diff - math.sqrt(max(below, 0.0))), min(1.0, diff + math.sqrt(max(above, 0.0)))]


def images_needed_paired(
    n: int, discordant: int, delta: float, alpha: float = 0.05, power: float = POWER
) -> int | None:
    """Paired images for McNemar's test to detect ``delta`` with ``power`` at ``alpha`` (Connor 1987).

    The discordant fraction is taken as observed (at least one discordant pair). None when the
    observed difference is 0: no size detects a difference that is not there.
    """
    if n <= 0 or delta == 0:
        return None
    return images_for_paired_change(delta, max(discordant, 1) / n, 1 - alpha, power)


def percentile_interval(samples: np.ndarray, confidence: float = CONFIDENCE) -> list[float] | None:
    """The bootstrap percentile interval (NaN resamples dropped); None when none is finite."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return [float(low), float(high)]


def bootstrap_p(deltas: np.ndarray) -> float | None:
    """Two-sided bootstrap p of "no change": twice the smaller share of resampled deltas on either
    side of 0, capped at 1. A delta of exactly 0 (a resample that drew none of the images where the
    runs differ) counts half on each side (mid-p), so identical runs get p = 1. "Exactly" is within
    ``TIE``: two averages of the same numbers summed in another order differ by rounding."""
    finite = deltas[np.isfinite(deltas)]
    if finite.size == 0:
        return None
    ties = np.mean(np.abs(finite) <= TIE) / 2
    below, above = np.mean(finite < -TIE) + ties, np.mean(finite > TIE) + ties
    return float(min(1.0, 2 * min(below, above)))


def resample_weights(n: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) counts: how often each of n items is drawn in each image-level resample.

    Seeded: the same seed and n give the same draws, so the slow and the fast bootstrap (and two runs
    of a paired diff) see the same resamples.
    """
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    flat = (draws + np.arange(resamples)[:, None] * n).ravel()
    return np.bincount(flat, minlength=resamples * n).reshape(resamples, n)


def fmt_interval(interval: list[float] | None, spec: str = ".4f") -> str:
    if interval is None:
        return "n/a"
    return f"[{format(interval[0], spec)}, {format(interval[1], spec)}]"


def interval_lines(
    intervals: dict[str, Any] | None, how: str, shown: list[tuple[str, list[float] | None]]
) -> list[str]:
    """The results.txt line of a run's intervals (none for a run written before schema 2):
    ``95% intervals (how): label [low, high], ...``."""
    if not intervals:
        return []
    text = ", ".join(f"{label} {fmt_interval(interval, '.4g')}" for label, interval in shown)
    return [f"{intervals['confidence']:.0%} intervals ({how}): {text}"]
