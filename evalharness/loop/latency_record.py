"""What the run loop records of its latency (metrics.json ``latency_ms``), as types: the timing
block and its validity with the thermal snapshots around the timed invokes. Dicts at run time
(:class:`evalharness.loop.engine.LoopResult` builds them), typed so the document builder and the
reports read the keys written."""

from __future__ import annotations

from typing import Any, TypedDict

from evalharness.stats.latency import LatencySummary
from evalharness.stats.validity import Judgement, Verdict


class LatencyBlock(TypedDict):
    """metrics.json ``latency_ms`` (before its validity): the loop's own timing, or a runner's
    (benchmark_model on a phone: its summary's statistics), and what was timed."""

    init: float | None
    first_inference: float | None
    warmup: LatencySummary | dict[str, Any]  # a runner's: count and the statistics it printed
    inference: LatencySummary | dict[str, Any]
    timed_region: str


class ValidityThermal(TypedDict):
    """``latency_ms.validity.thermal``: the snapshots around the timed invokes and what throttled."""

    source: Any
    exposed: bool
    throttled: list[str]
    before: dict[str, Any]
    after: dict[str, Any]


class _WithThermal(TypedDict):
    thermal: ValidityThermal


class DeviceValidity(Verdict, _WithThermal):
    """``latency_ms.validity`` of a device tool's summary (count and mean, no block times)."""


class HostValidity(Judgement, _WithThermal):
    """``latency_ms.validity`` of the loop's own timed invokes (block means, wall-clock duration)."""
