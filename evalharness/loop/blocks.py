"""The loop's per-sample scoring, done in short blocks between invokes instead of after each one.

Why: every ``invoke()`` sweeps the CPU caches (weights and activations stream through them), so the
Python that follows it — output checks, the task's record, the predictions line — starts cold each
time; scored one after the other in blocks, the same code runs warm (docs/benchmarks.md, *Throughput*,
gives the measured figures). Holding a few samples' outputs pays the cold start once per block.

The inputs' identity hashes (``loop/input_identity.py``) are made here too, the block's inputs one
after the other before its outputs are scored: hashed on the preparing thread right after each
decode and resize, the same CRC and sha256 code ran cold every time and cost 2–3 × as much CPU
(MobileNet v1 0.25/128 quant: 82–165 µs an image there, 58–86 µs here; docs/benchmarks.md, *A
whole run at ILSVRC size*). So a block holds its samples' input tensors until it is flushed.

Nothing else changes: every sample is scored in sample order, by the same code, with the same
latency; the loop flushes the block whenever it stops (an interrupted run keeps every sample it
invoked, as before). A block ends at :data:`BLOCK_SAMPLES` samples, at :data:`BLOCK_BYTES` of held
inputs and outputs (a model with large ones is scored sample by sample) or :data:`BLOCK_S` seconds
after its first sample (a slow model's predictions reach the file as they did).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from evalharness.loop.checks import OutputChecks
from evalharness.loop.input_identity import InputIdentity, hashes_of

if TYPE_CHECKING:  # for the type only
    from evalharness.tasks.live import Looped

BLOCK_SAMPLES = 64
BLOCK_BYTES = 2**20  # held inputs and outputs: ~20 samples of a 128 x 128 uint8 input, <= 1 MiB of RSS
BLOCK_S = 0.25
Held = tuple[Any, "list[np.ndarray] | None", list[np.ndarray], float, "dict[str, str] | None"]


class Scored(Protocol):
    """What scoring fills in of the loop's result (``engine.LoopResult``, which imports this module)."""

    checks: OutputChecks
    inference_ms: array[float]
    postprocess_s: array[float]


class ScoringBlocks:
    """``add`` each invoked sample; ``flush`` scores what is held (the loop calls it at the end)."""

    def __init__(
        self,
        task: Looped,
        record: Callable[[dict[str, Any]], None],
        result: Scored,
        identity: InputIdentity | None = None,
    ) -> None:
        self.task, self.record, self.result, self.identity = task, record, result, identity
        # (sample, its inputs (None once their hashes are known), outputs, latency, hashes or None)
        self._held: list[Held] = []
        self._bytes = 0
        self._started = 0.0

    def add(self, sample: Any, tensors: list[np.ndarray], outputs: list[np.ndarray], latency: float) -> None:
        """One invoked sample: its inputs checked now, hashed and its outputs scored when the block is
        flushed. Hashes the tensor cache kept are read now, and the inputs are not held for them: the
        block then holds only outputs, so it fills to :data:`BLOCK_SAMPLES` (a 224 x 224 input ended
        it at ~6 samples by :data:`BLOCK_BYTES`)."""
        self.result.checks.add_inputs(tensors)
        if not self._held:
            self._started = time.perf_counter()
        kept = self.identity.kept(tensors, sample) if self.identity is not None else {}
        if kept is None:
            self._held.append((sample, tensors, outputs, latency, None))
            self._bytes += sum(t.nbytes for t in tensors)
        else:
            self._held.append((sample, None, outputs, latency, kept))
        self._bytes += sum(o.nbytes for o in outputs)
        if (
            len(self._held) >= BLOCK_SAMPLES
            or self._bytes >= BLOCK_BYTES
            or time.perf_counter() - self._started >= BLOCK_S
        ):
            self.flush()

    def flush(self) -> None:
        held, self._held, self._bytes = self._held, [], 0
        result, evaluator, identity = self.result, self.task.evaluator, self.identity
        # one after the other: warm
        hashes = [
            hashes_of(tensors, identity, sample) if kept is None and tensors is not None else kept or {}
            for sample, tensors, _, _, kept in held
        ]
        for (sample, _, outputs, latency, _), sample_hashes in zip(held, hashes, strict=True):
            start = time.perf_counter()
            result.inference_ms.append(latency)
            result.checks.add_outputs(outputs)
            prediction = evaluator.update(sample, outputs)
            if prediction is not None:
                self.record({**prediction, "latency_ms": latency, **sample_hashes})
            result.postprocess_s.append(time.perf_counter() - start)
