"""Invoking prepared samples: one timed invoke per sample (or per batch of them) in this process, or a
runner's own batches on its device; every invoked sample handed to the scoring blocks."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.errors import ConfigError, DataError, EvalHarnessError
from evalharness.core.interrupts import checkpoint, pauses_at
from evalharness.loop.blocks import ScoringBlocks
from evalharness.loop.preparation import Prepared
from evalharness.tasks.live import Looped

if TYPE_CHECKING:  # for the types only
    from evalharness.loop.loop_result import LoopResult
    from evalharness.loop.loop_settings import LoopSettings
    from evalharness.loop.progress import ProgressBar
    from evalharness.runtime.contract import Model


def timed_invoke(model: Model) -> float:
    start = time.perf_counter()
    model.invoke()
    return (time.perf_counter() - start) * 1e3


def usable(
    task: Looped,
    sample: Any,
    tensors: list[np.ndarray] | DataError,
    settings: LoopSettings,
    result: LoopResult,
) -> list[np.ndarray] | None:
    """The sample's tensors; None for a sample whose preparation failed and is skipped (strict: the
    error stops the run)."""
    if not isinstance(tensors, DataError):
        return tensors
    if settings.strict:
        raise tensors
    result.skipped.append({"sample": task.sample_id(sample), "reason": str(tensors)})
    return None


def chunks(
    task: Looped,
    items: Iterable[Prepared],
    size: int,
    settings: LoopSettings,
    result: LoopResult,
    bar: ProgressBar,
) -> Iterator[list[tuple[Any, list[np.ndarray]]]]:
    """Usable (sample, tensors) in lists of up to ``size``; a strict stop hands over the samples
    before the bad one first (they count, as in an unbatched run), then raises."""
    chunk: list[tuple[Any, list[np.ndarray]]] = []
    try:
        for sample, tensors in items:
            bar.update()
            if (kept := usable(task, sample, tensors, settings, result)) is not None:
                chunk.append((sample, kept))
            if len(chunk) >= size:
                yield chunk
                chunk = []
    except DataError:
        if chunk:
            yield chunk
        raise
    if chunk:
        yield chunk


def _stacked(chunk: list[tuple[Any, list[np.ndarray]]], size: int) -> list[np.ndarray]:
    """One tensor per input holding the chunk's samples, padded to ``size`` by repeating the last
    sample (a real input: the padded invoke costs what a full one does; its outputs are dropped)."""
    rows = [tensors for _, tensors in chunk] + [chunk[-1][1]] * (size - len(chunk))
    return [np.concatenate(column) for column in zip(*rows, strict=True)]


Ready = Iterable[list[tuple[Any, list[np.ndarray]]]]  # usable (sample, tensors), in lists of up to a batch


def run_each(
    model: Model, scoring: ScoringBlocks, settings: LoopSettings, result: LoopResult, ready: Ready, size: int
) -> None:
    """In-process models: one timed invoke per ``size`` samples (plus the first invoke's warm-up).
    With size > 1 each sample's latency is the batch's invoke time divided by ``size``."""
    first_outputs = None
    pausing = pauses_at("loop")  # a test's pause point, once a sample ran (core/interrupts.py)
    for chunk in ready:
        if pausing and result.first_inference_ms is not None:
            checkpoint("loop")
        tensors = chunk[0][1] if size == 1 else _stacked(chunk, size)
        model.set_inputs(tensors)
        if result.first_inference_ms is None:
            result.first_inference_ms = timed_invoke(model)
            first_outputs = model.get_outputs()
            result.warmup_ms = [timed_invoke(model) for _ in range(settings.warmup_runs)]
        latency = timed_invoke(model) / size
        outputs = model.get_outputs()
        if first_outputs is not None:
            result.first_output_repeatable = all(
                np.array_equal(a, b) for a, b in zip(first_outputs, outputs, strict=True)
            )
            first_outputs = None
        per_sample = [outputs] if size == 1 else [[o[j : j + 1] for o in outputs] for j in range(len(chunk))]
        assert result.batch is not None  # run_loop sets it before the first chunk
        result.batch["padded"] += size - len(chunk)
        for (sample, sample_tensors), out in zip(chunk, per_sample, strict=True):
            scoring.add(sample, sample_tensors, out, latency)


def run_batched(
    model: Model, scoring: ScoringBlocks, settings: LoopSettings, result: LoopResult, ready: Ready, size: int
) -> None:
    """Batch runners (runner=adb): up to ``model.batch_size`` prepared samples go to the device in one
    round trip. Each prediction's latency_ms is the device's figure for that sample; the run's
    latency block is the runner's own standard benchmark (``model.reported_latency``), not host timing."""
    for chunk in ready:
        outputs = model.run_batch([tensors for _, tensors in chunk])
        for (sample, tensors), (out, latency) in zip(chunk, outputs, strict=True):
            if latency is None:  # else a bare TypeError when the latencies (array of floats) take it
                raise EvalHarnessError(
                    "the runner reported no inference time for a sample of the batch "
                    "(benchmark_model printed no per-run timings)"
                )
            scoring.add(sample, tensors, out, latency)


def batching(model: Model, size: int) -> str:
    """``loop.batch_size``: how the model takes ``size`` samples per invoke (error: it cannot)."""
    if size == 1:
        return "one sample per invoke"
    if model.batch_size:
        raise ConfigError(
            f"loop.batch_size={size}: this runner sends samples to the device in its own batches "
            f"({model.batch_size} per round trip); use loop.batch_size=1"
        )
    return model.set_batch(size)
