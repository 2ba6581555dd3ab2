"""Whether a run goes on in lanes (:mod:`evalharness.loop.lanes`), measured as the loop's shape is.

``loop.shape=auto``, where more than one instance of the model fits the cores and the run has at
least :data:`MIN_SAMPLES` samples to go: after :data:`SETTLE` samples on the run's own interpreter
(its first invoke, warm-up and repeatability check), the other instances load, and blocks of
:data:`BLOCK` samples alternate between one interpreter pipelined (the shape a cold run would
otherwise calibrate to first) and the lanes, in ABBA order; each block's wall time per sample
includes everything the loop does for it. Lanes run the rest when they are faster in the median of
the paired ratios; else the other instances are dropped and the rest calibrates sequential against
pipelined as before (:func:`evalharness.loop.shape.shaped`). ``loop.shape=lanes`` runs them without
measuring. A first pair whose lanes are faster by more than block-to-block noise (:data:`CLEAR`)
decides at once. Every calibration sample is scored like any other. The figures go in
``provenance.thread_budget.loop.lanes_calibration``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any

from evalharness.core.errors import DataError
from evalharness.core.interrupts import checkpoint, pauses_at
from evalharness.loop.blocks import ScoringBlocks
from evalharness.loop.invoking import chunks, run_each, timed_invoke, usable
from evalharness.loop.lanes import SOURCE, Lanes, run_lanes
from evalharness.loop.preparation import Prepared, prepared
from evalharness.loop.shape import AUTO, LANES, PIPELINED, SETTLE, LoopShape, shaped
from evalharness.loop.shape import MIN_SAMPLES as SHAPE_MIN_SAMPLES
from evalharness.tasks.live import Looped

if TYPE_CHECKING:  # for the types only
    from evalharness.loop.loop_result import LoopResult
    from evalharness.loop.loop_settings import LoopSettings
    from evalharness.loop.progress import ProgressBar
    from evalharness.runtime.contract import Model

BLOCK = 32  # samples per calibration block (a lanes block starts and stops its threads)
PAIRS = 3  # paired blocks
# Runs this long are calibrated, as for the loop's shape (the same threshold: one rule for "auto
# measures"); a clear first pair costs 64 samples, and two instances pay from ~100 on this machine.
MIN_SAMPLES = SHAPE_MIN_SAMPLES
# A first pair whose lanes took under this share of one instance's time decides at once: block-to-
# block noise on a shared machine is 5-25 % (docs/benchmarks.md, *The loop's shape*), and where lanes
# pay they take ~0.65 of one instance's time, so a third of the calibration (the slower half) is spared.
CLEAR = 0.75


@dataclass
class Pass:
    """What one pass of the loop runs with (``run_loop`` makes it)."""

    task: Looped
    model: Model
    load_model: Callable[[], Model]
    scoring: ScoringBlocks
    settings: LoopSettings
    result: LoopResult
    bar: ProgressBar

    def prepared(self, samples: Iterable[Any], workers: int, phased: bool = False) -> Iterator[Prepared]:
        identity = self.scoring.identity
        ahead = identity.ahead if identity is not None else None
        prefetch, spent = self.settings.prefetch, self.result.prepare_s
        sizes = [i.nbytes for i in self.model.inputs]
        size = sum(sizes) if all(sizes) else 0  # 0: some dimension is not fixed
        return prepared(self.task, samples, workers, prefetch, phased, spent, ahead, size)

    def single(self, items: Iterable[Prepared]) -> None:
        """``items`` invoked on the run's own interpreter, one at a time, and scored."""
        run_each(self.model, self.scoring, self.settings, self.result,
                 chunks(self.task, items, 1, self.settings, self.result, self.bar), 1)  # fmt: skip

    def lanes(self, lanes: Lanes, samples: Iterable[Any]) -> None:
        """``samples`` prepared and invoked in ``lanes``, scored in sample order."""
        pausing = pauses_at("loop")  # a test's pause point (core/interrupts.py)
        prefetch, spent = self.settings.prefetch, self.result.prepare_s
        outcomes = run_lanes(lanes, self.task, samples, prefetch, spent, timed_invoke)
        with closing(outcomes):  # a stop or an error ends the lanes now, not when collected
            for sample, tensors, outputs, latency in outcomes:
                if pausing:
                    checkpoint("loop")
                self.bar.update()
                if isinstance(tensors, BaseException) and not isinstance(tensors, DataError):
                    raise tensors  # in sample order: the samples before it are scored
                if sample is SOURCE and isinstance(tensors, DataError):
                    raise tensors  # listing the next sample failed: never a skipped sample
                if (ok := usable(self.task, sample, tensors, self.settings, self.result)) is not None:
                    assert outputs is not None  # a prepared sample was invoked
                    self.scoring.add(sample, ok, outputs, latency)


def lanes_apply(shape: LoopShape, count: int, total: int) -> bool:
    """Whether this pass starts as lanes or measures them (``count`` instances fit the cores)."""
    return count > 1 and (shape.shape == LANES or (shape.shape == AUTO and total >= MIN_SAMPLES))


def run_with_lanes(run: Pass, samples: Iterable[Any], total: int, count: int) -> None:
    """The pass from its first sample: settled on the run's interpreter, then lanes of ``count``
    instances (``loop.shape=lanes``), or measured against one interpreter first (``auto``)."""
    it, shape = iter(samples), run.result.shape
    assert shape is not None  # run_loop sets it first
    settle = list(run.prepared(islice(it, SETTLE), 0))
    run.single(settle)
    warm = next((t for _, t in settle if not isinstance(t, DataError)), None)
    if warm is None:  # nothing prepared to warm the other instances with (skipped samples): no lanes
        if shape.shape == LANES:
            shape.shape = PIPELINED
            shape.source = "loop.shape=lanes, but no first sample prepared to warm the others with: pipelined"
        run.single(shaped(run.prepared, it, total - len(settle), shape))
        return
    try:
        lanes = Lanes.load(run.model, run.load_model, count, warm, run.settings.warmup_runs)
    except Exception as exc:  # out of memory, a runtime's refusal: auto goes on with one instance
        if shape.shape == LANES:
            raise
        said = f"one interpreter: another did not load ({type(exc).__name__}: {' '.join(str(exc).split())})"
        shape.lanes_calibration = {"lanes": count, "decision": said}
        run.single(shaped(run.prepared, it, total - len(settle), shape))
        return
    if shape.shape == LANES:
        _chose(run, shape, lanes, "loop.shape=lanes")
        run.lanes(lanes, it)
        return
    cycles: dict[str, list[float]] = {"single": [], LANES: []}
    measured = 0
    for kind in (["single", LANES, LANES, "single"] * PAIRS)[: 2 * PAIRS]:
        block = list(islice(it, BLOCK))
        if not block:
            break
        start = time.perf_counter()
        if kind == LANES:
            run.lanes(lanes, block)
        else:
            run.single(run.prepared(block, shape.workers))
        cycles[kind].append((time.perf_counter() - start) * 1e3 / len(block))
        measured += len(block)
        if len(cycles[LANES]) == 1 == len(cycles["single"]) and _ratios(cycles)[0] < CLEAR:
            break  # the first pair already says lanes win by more than blocks differ by noise
    ratios = _ratios(cycles)
    ratio = statistics.median(ratios) if ratios else None
    shape.lanes_calibration = {
        "lanes": count,
        "block": BLOCK,
        "order": "ABBA",
        "lane_init_ms": [round(ms, 2) for ms in lanes.init_ms],
        "single_ms_per_sample": [round(c, 4) for c in cycles["single"]],
        "lanes_ms_per_sample": [round(c, 4) for c in cycles[LANES]],
        "median_ratio_lanes_over_single": None if ratio is None else round(ratio, 4),
    }
    if ratio is not None and ratio < 1.0:
        lanes_ms, single_ms = statistics.fmean(cycles[LANES]), statistics.fmean(cycles["single"])
        said = (
            f"calibrated on {measured} samples: {count} instances side by side {lanes_ms:.2f} ms/sample "
            f"vs one pipelined {single_ms:.2f} ms/sample (median paired ratio {ratio:.3f})"
        )
        _chose(run, shape, lanes, said)
        run.lanes(lanes, it)
        return
    lanes.models[1:] = []  # the other instances are not used again
    shape.lanes_calibration["decision"] = "one interpreter" if ratio is not None else "measured nothing"
    left = total - len(settle) - measured
    run.single(shaped(run.prepared, it, left, shape))


def _ratios(cycles: dict[str, list[float]]) -> list[float]:
    """Lanes' ms a sample over one instance's, pair by pair."""
    return [b / a for a, b in zip(cycles["single"], cycles[LANES], strict=False) if a > 0]


def _chose(run: Pass, shape: LoopShape, lanes: Lanes, source: str) -> None:
    count = len(lanes.models)
    shape.shape, shape.workers, shape.lanes, shape.source = LANES, 0, count, source
    threads = run.model.lane_threads()
    run.result.timed_region = (
        f"{run.model.timed_region}, {count} instances of the model side by side, each its own "
        f"samples on {threads} thread(s)"
    )
