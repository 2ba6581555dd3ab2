"""What a number of paired images can resolve: the power calculation for a difference of two paired
proportions (the same images scored by two models: McNemar's test, Connor 1987).

A target or a margin smaller than the noise of the images it is checked on is no check: on 25
held-out images one changed answer is 0.04 of top-1, so "drop at most 0.01" passes or fails on
chance. Before a verdict is drawn from a few images, these say how small a change those images can
detect and how many images a given change needs, at the intervals' confidence (95 %, two-sided)
and the usual power (80 %).

The discordant fraction ψ (answers right in one model and wrong in the other) sets the variance.
Before anything is measured it is unknown; the default is the most favourable case, ψ = |Δ| (every
changed answer goes the same way): the smallest detectable change and the fewest images any pair of
models needs, so a target these call unresolvable is unresolvable whatever the models do.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any, TypedDict

CONFIDENCE = 0.95  # two-sided: every interval in metrics.json and the reports (stats/intervals.py)
POWER = 0.80  # the power of every "images needed" figure


def _z(p: float) -> float:
    return NormalDist().inv_cdf(p)


def images_for_paired_change(
    delta: float, discordant: float | None = None, confidence: float = CONFIDENCE, power: float = POWER
) -> int | None:
    """Paired images for McNemar's test to detect a change ``delta`` of a proportion with ``power``
    at ``confidence`` (Connor 1987); ``discordant``: the expected discordant fraction (None or less
    than |delta|: |delta|, the most favourable case). None when ``delta`` is 0."""
    if delta == 0:
        return None
    d = abs(delta)
    psi = d if discordant is None else max(discordant, d)
    z_a, z_b = _z(0.5 + confidence / 2), _z(power)
    return math.ceil((z_a * math.sqrt(psi) + z_b * math.sqrt(max(psi - d * d, 0.0))) ** 2 / d**2)


def detectable_paired_change(
    n: int, discordant: float | None = None, confidence: float = CONFIDENCE, power: float = POWER
) -> float | None:
    """The smallest change of a proportion that ``n`` paired images detect with ``power`` at
    ``confidence`` (``discordant`` as :func:`images_for_paired_change`); None when no change up to
    1 is detectable (n too small), or n is 0."""
    if n <= 0 or (images_for_paired_change(1.0, discordant, confidence, power) or 0) > n:
        return None
    low, high = 0.0, 1.0  # images needed falls as the change grows: bisect to 1e-6
    while high - low > 1e-6:
        mid = (low + high) / 2
        needed = images_for_paired_change(mid, discordant, confidence, power)
        low, high = (low, mid) if needed is not None and needed <= n else (mid, high)
    return high


class Resolution(TypedDict):
    """What ``images`` paired images can resolve (:func:`resolution`)."""

    images: int
    target: float
    detectable: float | None  # the smallest detectable change; None: none up to 1
    images_needed: int | None  # the images ``target`` needs; None: target 0
    resolves: bool
    confidence: float
    power: float
    assumes: str


def resolution(n: int, target: float, confidence: float = CONFIDENCE, power: float = POWER) -> Resolution:
    """Whether ``n`` paired images can resolve a change of ``target`` (a drop bound, a margin): the
    smallest detectable change, the images ``target`` needs, in the most favourable case."""
    detectable = detectable_paired_change(n, None, confidence, power)
    needed = images_for_paired_change(target, None, confidence, power) if target > 0 else None
    return {
        "images": n,
        "target": target,
        "detectable": detectable,
        "images_needed": needed,
        "resolves": detectable is not None and target > 0 and detectable <= target,
        "confidence": confidence,
        "power": power,
        "assumes": "every changed answer goes one way (the most favourable case)",
    }


def resolution_text(r: Mapping[str, Any], what: str) -> str:
    """One sentence: ``what`` (e.g. 'quant.max_drop=0.01') cannot be resolved by these images; the
    one choice of that sentence for the repair's printout, its view and the gate: from the power
    formula (a :class:`Resolution`), or from the measured interval (an :class:`IntervalResolution`:
    a metric with no power formula, told by its ``interval_width``), made now or read back recorded."""
    if "interval_width" in r:
        return _interval_text(r, what)
    smallest = "no change up to 1" if r["detectable"] is None else f"nothing below {r['detectable']:.3f}"
    needed = f"~{r['images_needed']}" if r["images_needed"] else "no number of"
    return (
        f"{r['images']} paired images cannot resolve {what}: at {r['confidence']:.0%} confidence and "
        f"{r['power']:.0%} power they detect {smallest} even if every changed answer goes one way; "
        f"{needed} images would resolve {r['target']:g}"
    )


class IntervalResolution(TypedDict):
    """What ``images`` paired images resolved of a change of a metric with no power formula (an AP:
    not a mean of per-image values): judged from the paired interval measured on them."""

    images: int
    target: float
    interval_width: float | None  # high - low of the measured paired interval; None: none was made
    # distinct image resamples ``images`` allow, and the fewest a percentile interval at this
    # confidence needs for each tail to hold one (2 / (1 - confidence): 40 at 95 %)
    resamples_possible: int
    resamples_needed: int
    resolves: bool
    confidence: float
    assumes: str


def interval_resolution(n: int, target: float, interval: list[float] | None) -> IntervalResolution:
    """Whether ``n`` paired images resolved a change of ``target``: only when their paired interval is
    no wider than it (it then cannot hold both no change and a change of ``target``). No number of
    images is claimed: no formula gives it for such a metric; more images narrow the interval. Nor
    when the images allow fewer distinct resamples (multisets of n of n images) than the interval's
    tails need: its ends are then single resamples, however narrow (2 images: 3 resamples)."""
    width = None if interval is None else float(interval[1] - interval[0])
    possible, needed = math.comb(2 * n - 1, n) if n > 0 else 0, math.ceil(2 / (1 - CONFIDENCE) - 1e-9)
    return {
        "images": n,
        "target": target,
        "interval_width": width,
        "resamples_possible": possible,
        "resamples_needed": needed,
        "resolves": width is not None and target > 0 and width <= target and possible >= needed,
        "confidence": CONFIDENCE,
        "assumes": "no power formula for this metric: the measured paired interval against the target",
    }


def _interval_text(r: Mapping[str, Any], what: str) -> str:
    """:func:`resolution_text` of an :class:`IntervalResolution`: from the interval's width."""
    if r["interval_width"] is None:
        return f"{r['images']} paired images gave no paired interval, so they cannot resolve {what}"
    if r["resamples_possible"] < r["resamples_needed"]:
        return (
            f"{r['images']} paired images cannot resolve {what}: they allow {r['resamples_possible']} "
            f"distinct bootstrap resamples, fewer than the {r['resamples_needed']} a {r['confidence']:.0%} "
            "percentile interval needs for its tails (its ends are single resamples, however narrow)"
        )
    return (
        f"{r['images']} paired images cannot resolve {what}: their {r['confidence']:.0%} paired interval is "
        f"{r['interval_width']:.4f} wide, wider than {r['target']:g} (no power formula for this metric says "
        "how many images would; more images narrow the interval)"
    )
