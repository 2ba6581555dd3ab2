"""The loop scores samples in short blocks between invokes (evalharness/loop/blocks.py): every
invoked sample is scored, in order, with its own latency, and whatever stops the loop, nothing
invoked is lost. A plumbing test: a fake model and task stand in for the runtime and the evaluator
(the real runs' predictions are compared across shapes in test_pipeline / test_loop_shape)."""

from __future__ import annotations

import numpy as np
import pytest

from evalharness.loop import blocks as scoring_blocks
from evalharness.loop.engine import LoopSettings, run_loop


class _Model:
    """Outputs the sample's number; ``on_invoke`` runs at each invoke, ``fail_at`` interrupts one."""

    timed_region, reported_latency, batch_size, memory = "invoke() only", None, 0, None
    inputs = outputs = ()
    latency_thermal = None

    def thermal(self):
        return {"exposed": False}

    def lane_threads(self):
        return None  # one instance (tests/unit/loop/test_lanes.py runs several)

    def __init__(self, on_invoke, output_bytes: int = 4, fail_at: int | None = None) -> None:
        self.on_invoke, self.output_bytes, self.fail_at = on_invoke, output_bytes, fail_at
        self.invokes, self.value = 0, 0

    def set_inputs(self, tensors):
        self.value = int(tensors[0][0])

    def invoke(self):
        self.invokes += 1
        if self.invokes == self.fail_at:
            raise KeyboardInterrupt
        self.on_invoke()

    def get_outputs(self):
        out = np.zeros(self.output_bytes, np.uint8)
        out[0] = self.value % 256
        return [out]


class _Evaluator:
    def reset(self):
        self.count = 0

    def update(self, sample, outputs):
        self.count += 1
        return {"id": str(sample), "out": int(outputs[0][0])}


class _Task:
    name = "fake"
    side_by_side = True  # the loop may run instances of the model side by side (test_lanes.py)

    def __init__(self, n: int) -> None:
        self.samples, self.evaluator = list(range(n)), _Evaluator()

    def bind(self, inputs, outputs):
        pass

    def sample_id(self, sample):
        return str(sample)

    def prepare(self, sample):
        return [np.array([sample], np.int64)]


def _run(n: int, **model):
    """(records in the order they reached the sink, how many had reached it at each invoke, result)."""
    records, counts = [], []
    fake = _Model(lambda: counts.append(len(records)), **model)
    settings = LoopSettings(progress=False, shape="sequential", warmup_runs=0)
    _, result = run_loop(_Task(n), lambda: fake, records.append, settings)
    return records, counts, result


def test_every_sample_scored_in_order_with_its_latency():
    records, _, result = _run(150)
    assert [r["id"] for r in records] == [str(i) for i in range(150)]
    assert [r["out"] for r in records] == [i % 256 for i in range(150)]
    assert len(result.inference_ms) == 150 and result.status == "complete"
    assert [r["latency_ms"] for r in records] == list(result.inference_ms)
    assert result.checks.samples == 150 and result.checks.record(["o"])["distinct_inputs"]


def test_scoring_waits_for_a_block_then_catches_up():
    _, counts, _ = _run(150)
    # invoke 0 is the first inference (compared, not scored; no warm-up here), then one per sample
    scored_before = counts[1:]
    assert scored_before[63] == 0 and scored_before[64] == 64 and max(scored_before) == 128
    assert all(b >= a for a, b in zip(scored_before, scored_before[1:], strict=False))


def test_an_interrupted_loop_scores_every_invoked_sample():
    records, _, result = _run(150, fail_at=42)  # the 41st sample's invoke is interrupted
    assert result.status == "partial" and result.stop_reason == "interrupted"
    assert [r["id"] for r in records] == [str(i) for i in range(40)] and len(result.inference_ms) == 40


def test_large_outputs_are_scored_sample_by_sample():
    _, counts, _ = _run(6, output_bytes=scoring_blocks.BLOCK_BYTES)
    assert counts[1:] == [0, 1, 2, 3, 4, 5]


def test_a_slow_model_is_scored_sample_by_sample(monkeypatch):
    monkeypatch.setattr(scoring_blocks, "BLOCK_S", 0.0)
    _, counts, _ = _run(6)
    assert counts[1:] == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize("n", [1, 64, 65])
def test_block_edges(n):
    records, _, result = _run(n)
    assert len(records) == n == len(result.inference_ms)


class _BatchModel(_Model):
    """A runner that batches (runner=adb's way): the device's latency per sample, None for ``missing``."""

    batch_size = 4

    def __init__(self, missing: int) -> None:
        super().__init__(lambda: None)
        self.missing = missing

    def run_batch(self, batch):
        latency = {self.missing: None}
        return [([np.array([t[0][0]], np.uint8)], latency.get(int(t[0][0]), 2.0)) for t in batch]


def test_a_batch_runner_without_a_samples_latency_stops_with_the_reason():
    records = []
    settings = LoopSettings(progress=False, shape="sequential", warmup_runs=0)
    _, result = run_loop(_Task(12), lambda: _BatchModel(missing=6), records.append, settings)
    assert result.status == "partial" and "reported no inference time" in result.stop_reason
    assert [r["id"] for r in records] == [str(i) for i in range(6)]  # those before it are all scored
    assert list(result.inference_ms) == [2.0] * 6


def test_hashes_the_cache_kept_are_read_at_once_and_the_inputs_not_held():
    """A sample whose input hashes the tensor cache kept is not held for hashing: the block holds only
    its outputs (so it is not ended by its inputs' bytes), and its record carries the kept hashes."""
    from evalharness.loop.engine import LoopResult

    class _Identity:
        def kept(self, tensors, sample):
            return {"input_sha256": f"kept {sample}"} if sample % 2 else None

        def of(self, tensors, sample=None):
            return {"input_sha256": f"hashed {sample}"}

    task, records = _Task(4), []
    task.evaluator.reset()
    scoring = scoring_blocks.ScoringBlocks(task, records.append, LoopResult(), _Identity())  # type: ignore[arg-type]
    big = [np.zeros(scoring_blocks.BLOCK_BYTES // 4, np.uint8)]
    for sample in range(4):
        scoring.add(sample, big, [np.zeros(4, np.uint8)], 1.0)
    assert [tensors is None for _, tensors, *_ in scoring._held] == [False, True, False, True]
    scoring.flush()
    assert [r["input_sha256"] for r in records] == ["hashed 0", "kept 1", "hashed 2", "kept 3"]
