"""What the run loop measured and did: its status, every timing figure, the shape it ran in, the
output checks (:class:`LoopResult`, which the run record reads)."""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from evalharness.loop.checks import OutputChecks
from evalharness.loop.latency_record import DeviceValidity, HostValidity, LatencyBlock, ValidityThermal
from evalharness.loop.shape import LoopShape
from evalharness.stats.latency import summarize
from evalharness.stats.validity import Rule, blocks_of, judge, throttled, verdict

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.contract import DeviceLatency


class StageMs(TypedDict):
    """``throughput.per_image_ms``: mean ms per sample of each stage (None: none measured)."""

    preprocess: float | None
    invoke: float | None
    postprocess: float | None


class BatchRecord(TypedDict):
    """``throughput.batch``: samples per invoke, how the model takes them, padding samples run."""

    size: int
    how: str
    padded: int


@dataclass
class LoopResult:
    status: str = "complete"  # complete | partial
    stop_reason: str | None = None
    init_ms: float = 0.0
    first_inference_ms: float | None = None
    warmup_ms: list[float] = field(default_factory=list)
    inference_ms: array[float] = field(default_factory=lambda: array("d"))  # 8 bytes a sample, however many
    skipped: list[dict[str, str]] = field(default_factory=list)
    first_output_repeatable: bool | None = None
    timed_region: str = "invoke() only"
    memory_mb: Mapping[str, Any] = field(default_factory=dict)
    resumed: int = 0  # samples restored from an interrupted earlier session
    batch: BatchRecord | None = None  # loop.batch_size: {"size", "how", "padded"} (throughput.batch)
    wall_s: float = 0.0  # wall-clock time of the sample loop (after model load), for throughput
    error: BaseException | None = None
    checks: OutputChecks = field(default_factory=OutputChecks)
    # a runner's own latency figures (runner=adb), not host timing
    reported_latency: DeviceLatency | None = None
    shape: LoopShape | None = None  # sequential or pipelined preparation, and why
    # thermal snapshots bracketing the timed invokes ({"before", "after"}: the runner's own when it
    # times on its device, else the loop's), for the latency's validity
    thermal: dict[str, Any] = field(default_factory=dict)
    # Seconds per sample outside invoke(): preparing its inputs (on the preparing threads when
    # pipelined) and scoring its outputs; appends are atomic under the GIL, so threads share them
    prepare_s: array[float] = field(default_factory=lambda: array("d"))
    postprocess_s: array[float] = field(default_factory=lambda: array("d"))

    def stage_ms(self) -> StageMs:
        """Mean milliseconds per sample of each stage (None: no sample measured in this session)."""

        def mean_ms(values: array[float]) -> float | None:
            return sum(values) * 1e3 / len(values) if values else None

        invoked = self.inference_ms[self.resumed :]
        return {
            "preprocess": mean_ms(self.prepare_s),
            "invoke": sum(invoked) / len(invoked) if invoked else None,
            "postprocess": mean_ms(self.postprocess_s),
        }

    def validity(self, rule: Rule) -> DeviceValidity | HostValidity | None:
        """Was this session's latency a valid measurement (``stats/validity.py``)? None: no invoke
        timed. Its duration is the loop's wall-clock, what ``task=benchmark``'s ``min_secs`` counts."""
        before, after = self.thermal.get("before") or {}, self.thermal.get("after") or {}
        hot = throttled(before, after)
        thermal: ValidityThermal = {"source": before.get("source"), "exposed": bool(before.get("exposed")),
                                    "throttled": hot, "before": before, "after": after}  # fmt: skip
        if self.reported_latency is not None:  # a device tool's summary: count and mean, no blocks
            inference = self.reported_latency.get("inference") or {}
            count, mean = inference.get("count"), inference.get("mean")
            if not count or mean is None:
                return None
            found = verdict(count * mean / 1e3, count, None, rule, hot, cv_measured=False)
            return {**found, "thermal": thermal}
        samples = self.inference_ms[self.resumed :]
        if not samples:
            return None
        found = judge(blocks_of(samples, rule.block_secs), samples, rule, hot, secs=self.wall_s)
        return {**found, "thermal": thermal}

    def latency(self) -> LatencyBlock:
        if self.reported_latency is not None:
            return {**self.reported_latency, "timed_region": self.timed_region}
        return {
            "init": self.init_ms,
            "first_inference": self.first_inference_ms,
            "warmup": summarize(self.warmup_ms),
            "inference": summarize(self.inference_ms),
            "timed_region": self.timed_region,
        }
