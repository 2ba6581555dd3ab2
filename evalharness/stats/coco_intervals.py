"""Uncertainty of COCO figures: image-level bootstrap intervals of AP, AP50, AP75 and per-class AP,
and the paired bootstrap of the AP change between two runs on the same images.

Both re-accumulate pycocotools' per-image matching with resampling weights
(:mod:`evalharness.stats.coco_bootstrap`), never re-running COCOeval per resample. The resamples
are seeded (``bootstrap_seed``), so a rescore or a merge of shards recomputes the same interval, and
a paired diff draws the same images for both runs.
"""

from __future__ import annotations

from typing import Any, TypedDict

from evalharness.core.interrupts import checkpoint
from evalharness.stats.intervals import bootstrap_p, percentile_interval, resample_weights

BOOTSTRAP_STATS = ("AP", "AP50", "AP75")

Interval = list[float] | None  # [low, high]; None where the resamples give none


class _Bootstrap(TypedDict):
    method: str
    confidence: float
    resamples: int
    seed: int


class BootstrapIntervals(_Bootstrap):
    """A detection run's ``metrics.intervals``: percentile intervals of AP, AP50, AP75, and per
    category id of its AP."""

    AP: Interval
    AP50: Interval
    AP75: Interval
    per_class_AP: dict[str, Interval]


class PairedDelta(TypedDict):
    """One ΔAP's paired interval and two-sided bootstrap p."""

    interval: Interval
    p: float | None


class _PairedDeltas(_Bootstrap):
    AP: PairedDelta
    AP50: PairedDelta
    AP75: PairedDelta


class PairedAPBootstrap(_PairedDeltas, total=False):
    """ΔAP (B − A) per stat and, where both runs share the categories, per category id."""

    per_class: dict[str, PairedDelta]


def bootstrap_intervals(matching: Any, resamples: int, seed: int, confidence: float) -> BootstrapIntervals:
    """Percentile intervals of AP, AP50, AP75 and per-class AP over image-level resamples."""
    checkpoint("bootstrap")  # a test's pause point (core/interrupts.py)
    values = matching.resampled(resample_weights(len(matching.img_ids), resamples, seed))
    per_class = {
        str(cat): percentile_interval(values["per_class"][:, k], confidence)
        for k, cat in enumerate(matching.cat_ids)
    }
    return {
        "method": "bootstrap",
        "confidence": confidence,
        "resamples": resamples,
        "seed": seed,
        "AP": percentile_interval(values["AP"], confidence),
        "AP50": percentile_interval(values["AP50"], confidence),
        "AP75": percentile_interval(values["AP75"], confidence),
        "per_class_AP": per_class,
    }


def paired_ap_bootstrap(
    matching_a: Any, matching_b: Any, resamples: int, seed: int, confidence: float
) -> PairedAPBootstrap:
    """ΔAP (B − A) per stat, and per category (``per_class``, by category id), with its paired
    interval and two-sided bootstrap p: each resample draws the same images for both runs (their
    image lists must be equal)."""
    if list(matching_a.img_ids) != list(matching_b.img_ids):
        raise ValueError("paired bootstrap needs both runs scored on the same images")
    weights = resample_weights(len(matching_a.img_ids), resamples, seed)
    a, b = matching_a.resampled(weights), matching_b.resampled(weights)
    out: PairedAPBootstrap = {
        "method": "paired bootstrap",
        "confidence": confidence,
        "resamples": resamples,
        "seed": seed,
        "AP": _paired(b["AP"] - a["AP"], confidence),
        "AP50": _paired(b["AP50"] - a["AP50"], confidence),
        "AP75": _paired(b["AP75"] - a["AP75"], confidence),
    }
    if list(matching_a.cat_ids) == list(matching_b.cat_ids):  # same ground truth: always, once comparable
        deltas = b["per_class"] - a["per_class"]
        out["per_class"] = {
            str(cat): _paired(deltas[:, k], confidence) for k, cat in enumerate(matching_a.cat_ids)
        }
    return out


def _paired(deltas: Any, confidence: float) -> PairedDelta:
    return {"interval": percentile_interval(deltas, confidence), "p": bootstrap_p(deltas)}
