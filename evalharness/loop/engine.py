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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evalharness.core.boundary import debug, describe
from evalharness.core.errors import ConfigError, DataError
from evalharness.loop.blocks import ScoringBlocks
from evalharness.loop.input_identity import IdentityMemo, InputIdentity
from evalharness.loop.invoking import batching, chunks, run_batched, run_each
from evalharness.loop.lane_choice import Pass, lanes_apply, run_with_lanes
from evalharness.loop.lanes import lanes_cap, lanes_possible, lanes_refused
from evalharness.loop.loop_result import LoopResult
from evalharness.loop.loop_settings import LoopSettings
from evalharness.loop.memory import current_rss_mb, peak_rss_mb
from evalharness.loop.progress import progress_bar
from evalharness.loop.shape import LANES, LoopShape, requested, shaped
from evalharness.tasks.live import Looped, input_layout

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.contract import Model

__all__ = ["LoopResult", "LoopSettings", "peak_rss_mb", "run_loop"]  # the loop's types, where they were


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
        run = Pass(task, model, load_model, scoring, settings, result, bar)
        try:
            if lanes_apply(result.shape, lanes, total):
                run_with_lanes(run, todo, total, lanes)
            else:
                items = shaped(run.prepared, todo, total, result.shape)
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
