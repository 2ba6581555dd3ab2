"""The one run loop: iteration, progress, warm-up and every timing figure.

Timing is honest by construction: only ``invoke()`` sits inside the timed region (decode,
preprocessing and copying tensors in or out are outside it), and every figure comes from one
clock (``time.perf_counter``). Sequence for N samples:

1. load the model (``init_ms``), let the task check the model fits (before any image is read);
2. sample 0: first ``invoke()`` (``first_inference_ms``), then ``warmup_runs`` more invokes on the
   same input (``warmup``);
3. every sample 0..N-1: one timed invoke (``inference``, N values) whose outputs are scored.

Sample 0 is invoked again in step 3 so that its scored output comes from a warm interpreter, and
the run records whether it equals the first output (a nondeterministic delegate shows up here).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from evalharness.core.boundary import debug, describe
from evalharness.core.errors import ConfigError, DataError
from evalharness.core.schema import bounds
from evalharness.loop.blocks import ScoringBlocks
from evalharness.loop.checks import OutputChecks
from evalharness.loop.input_identity import IdentityMemo, InputIdentity
from evalharness.loop.invoking import batching, chunks, run_batched, run_each
from evalharness.loop.lane_choice import Pass, lanes_apply, run_with_lanes
from evalharness.loop.lanes import lanes_cap, lanes_possible, lanes_refused
from evalharness.loop.latency_record import DeviceValidity, HostValidity, LatencyBlock, ValidityThermal
from evalharness.loop.memory import current_rss_mb, peak_rss_mb
from evalharness.loop.preparation import prepared
from evalharness.loop.progress import progress_bar
from evalharness.loop.shape import LANES, SHAPES, LoopShape, requested, shaped
from evalharness.stats.latency import summarize
from evalharness.stats.validity import Rule, blocks_of, judge, throttled, verdict
from evalharness.tasks.live import Looped, input_layout

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.contract import DeviceLatency, Model


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


@dataclass(frozen=True)
class LoopSettings:
    """The ``loop`` config group (also its schema: :func:`evalharness.core.schema.check` applies it)."""

    warmup_runs: int = field(default=1, metadata=bounds(0))
    strict: bool = True  # first bad sample stops the run (True) or is skipped and counted (False)
    progress: bool = True
    resume: bool = False  # continue an interrupted run in the same run directory
    overwrite: bool = False  # replace a run already in the run directory
    # auto: measure on this machine whether preparing inputs on other threads while invoke() runs
    # (pipelined) beats preparing them in turn (sequential), and where more than one instance of a
    # CPU model fits the cores, whether instances side by side (lanes) beat one; see
    # evalharness/loop/shape.py and evalharness/loop/lanes.py
    shape: str = field(default="auto", metadata=bounds(choices=SHAPES))
    # Threads preparing inputs ahead of invoke() in the pipelined shape, at most `prefetch` samples
    # ahead (bounded memory, results in sample order). Given on the command line it chooses the
    # shape (0 = strictly sequential: nothing else runs while invoke() is timed).
    workers: int = field(default=1, metadata=bounds(0, 64))
    # The most instances of a CPU model side by side (loop.shape=lanes or auto's measure of them):
    # auto = this process's share of the cores / delegate.num_threads (settings/validate.py makes it a
    # number); 1 = one instance
    lanes: str = "auto"
    prefetch: int = field(default=4, metadata=bounds(1, 4096))
    # the exact TFLite-tool resize: native = LiteRT's reference kernel (faster), numpy = the port;
    # the same bits either way (tests/e2e/test_native_resize.py)
    resize: str = field(default="native", metadata=bounds(choices=("native", "numpy")))
    # samples per invoke: models with a dynamic batch (or a fixed one the graph lets resize); the last
    # batch is padded with its last sample and the padding's outputs dropped
    batch_size: int = field(default=1, metadata=bounds(1, 4096))
    # preprocessed-tensor cache: true | false | auto (= on in multiruns)
    tensor_cache: str = field(default="auto", metadata=bounds(choices=("auto", "true", "false")))
    # Outputs checks (evalharness/loop/checks.py): a run whose scored outputs hold NaN/Inf, or are
    # the same for every input, is ``invalid`` (exit 1) unless allowed here.
    allow_nonfinite: bool = False
    allow_constant_outputs: bool = False
    # per-op time and placement after the measured loop (any task; runtime/op_profile.py), each op
    # from the runtime's own profiler over `op_profile_repeats` invokes (else each op timed as its own
    # sub-model on the run's delegate; the record says which)
    # off | auto | PxT: the run as P processes x T interpreter threads over shards, merged exactly
    # (evalharness/run/parallel.py; auto measures the splits of the cores)
    parallel: str = "off"
    op_profile: bool = False
    op_profile_repeats: int = field(default=20, metadata=bounds(1, 10000))


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


def run_loop(
    task: Looped,
    load_model: Callable[[], Model],
    record: Callable[[dict[str, Any]], None],
    settings: LoopSettings,
    done: list[dict[str, Any]] | None = None,
) -> tuple[Model, LoopResult]:
    """Run ``task`` on the model from ``load_model``; each prediction goes to ``record`` at once.

    ``done``: prediction records of an interrupted earlier session of this run. They are restored
    into the evaluator (``restore``), their samples are not run again, and their per-invoke latencies
    (``latency_ms`` in each record) join this session's, so a resumed run ends with the metrics of an
    uninterrupted one.
    """
    result = LoopResult()
    rss_before = current_rss_mb()
    start = time.perf_counter()
    model = load_model()
    result.init_ms = (time.perf_counter() - start) * 1e3
    rss_init = current_rss_mb()
    result.timed_region = model.timed_region
    result.reported_latency = model.reported_latency  # runners that time on the device
    size = settings.batch_size
    result.batch = {"size": size, "how": batching(model, size), "padded": 0}
    if size > 1:
        result.timed_region = (
            f"{model.timed_region}, of {size} samples at once; per sample: divided by {size}"
        )
    lanes = lanes_possible(model, size, cap=lanes_cap(settings.lanes)) if task.side_by_side else 1
    if settings.shape == LANES and lanes < 2:
        why = (
            lanes_refused(model, size)
            if task.side_by_side
            else f"task={task.name} times invoke alone (its latencies are its figures)"
        )
        raise ConfigError(f"loop.shape=lanes: {why}; use loop.shape=auto")
    task.bind(model.inputs, model.outputs)
    task.evaluator.reset()
    finished = set()
    for rec in done or ():
        task.evaluator.restore(rec)
        finished.add(rec["id"])
        result.inference_ms.append(rec["latency_ms"])
    result.resumed = len(finished)
    todo = (s for s in task.samples if not finished or task.sample_id(s) not in finished)
    total = max(len(task.samples) - len(finished), 0)
    bar = progress_bar(task, total, settings.progress)
    result.thermal = dict(model.latency_thermal or {"before": model.thermal()})
    loop_start = time.perf_counter()
    try:
        result.shape = requested(settings.shape, settings.workers)
        if model.batch_size and result.shape.shape == "auto":  # a runner's round trips, not invoke cycles
            result.shape = LoopShape("pipelined", settings.workers, "the runner batches samples")
        memo = task if isinstance(task, IdentityMemo) else None  # a tensor cache keeps them
        identity = InputIdentity(model.inputs, input_layout(task), memo)
        scoring = ScoringBlocks(task, record, result, identity)
        try:
            if lanes_apply(result.shape, lanes, total):
                run = Pass(task, model, load_model, scoring, settings, result, bar)
                run_with_lanes(run, todo, total, lanes)
            else:
                items = shaped(
                    lambda samples, workers, phased=False: prepared(
                        task, samples, workers, settings.prefetch, phased, result.prepare_s
                    ),
                    todo,
                    total,
                    result.shape,
                )
                invoke = run_batched if model.batch_size else run_each
                ready = chunks(task, items, model.batch_size or size, settings, result, bar)
                invoke(model, scoring, settings, result, ready, size)
        finally:  # whatever stops the loop, every invoked sample is scored
            scoring.flush()
    except (KeyboardInterrupt, Exception) as exc:  # whatever stops the loop, the scored samples count
        if debug() and not isinstance(exc, KeyboardInterrupt | DataError):
            raise
        result.status = "partial"
        result.stop_reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else describe(exc)
        result.error = exc
    finally:
        bar.close()
        result.wall_s = time.perf_counter() - loop_start
        if model.latency_thermal is None:
            result.thermal["after"] = model.thermal()
        peak = peak_rss_mb()
        result.memory_mb = model.memory or {
            "rss_before_load": rss_before,
            "init_delta": rss_init - rss_before,
            "overall_delta": max(peak, rss_init) - rss_before,
            "peak_rss": peak,
            "note": "RSS deltas from before model load; peak is the process's (Python + data + model)",
        }
    return model, result
