"""loop.shape=phased: a phase is prepared on every preparing thread, then handed out whole."""

from __future__ import annotations

import threading
from array import array

import numpy as np

from evalharness.core.errors import DataError
from evalharness.core.tensors import TensorInfo
from evalharness.loop import preparation
from evalharness.loop.preparation import PHASE_SAMPLES, prepared
from evalharness.loop.shape import PHASED, requested


class _Task:
    def __init__(self) -> None:
        self.in_flight, self.threads = 0, set()
        self.lock = threading.Lock()

    def prepare(self, sample: int):
        with self.lock:
            self.threads.add(threading.get_ident())
            self.in_flight += 1
        try:
            if sample == 5:
                raise DataError("bad sample 5")
            return [sample * 10]
        finally:
            with self.lock:
                self.in_flight -= 1


def test_phased_gives_the_sequential_results_and_prepares_nothing_while_handing_out():
    task = _Task()
    sequential = [
        (s, r if not isinstance(r, DataError) else str(r)) for s, r in prepared(_Task(), range(11), 0, 4)
    ]
    out = []
    for sample, result in prepared(task, range(11), 2, 4, phased=True):
        assert task.in_flight == 0  # the consumer (invoke) never runs beside a preparation
        out.append((sample, result if not isinstance(result, DataError) else str(result)))
    assert out == sequential and out[5] == (5, "bad sample 5")


def test_phased_prepares_on_one_thread_per_core():
    shape = requested(PHASED, 1)
    assert shape.shape == PHASED and shape.workers >= 1 and shape.record()["workers"] == shape.workers


def _phases(task, n: int, prefetch: int = 4, **kw) -> list[int]:
    """How many samples each phase prepared before handing any out."""
    sizes = []
    for _ in prepared(task, range(n), 2, prefetch, phased=True, **kw):
        if task.prepared_since:  # the first sample of a phase: all of the phase is prepared
            sizes.append(task.prepared_since)
            task.prepared_since = 0
    return sizes


class _Counting(_Task):
    def __init__(self, nbytes: int = 8) -> None:
        super().__init__()
        self.prepared_since, self.nbytes = 0, nbytes

    def prepare(self, sample: int):
        with self.lock:
            self.prepared_since += 1
        if sample == 5:
            raise DataError("bad sample 5")
        return [np.zeros(self.nbytes, np.uint8)]


def test_a_phase_is_phase_samples_long_and_shorter_where_its_tensors_pass_the_byte_cap(monkeypatch):
    n = 2 * PHASE_SAMPLES + 3
    assert _phases(_Counting(), n, sample_bytes=8) == [PHASE_SAMPLES, PHASE_SAMPLES, 3]
    monkeypatch.setattr(preparation, "PHASE_BYTES", 5 * 1000)  # 5 samples of 1,000 bytes
    # the model's inputs say a sample's size: the first phase is capped too
    assert _phases(_Counting(1000), 17, prefetch=2, sample_bytes=1000) == [5, 5, 5, 2]
    # they do not (a dimension not fixed): the first phase is the least, the samples it prepared
    # set the size of the next ones
    assert _phases(_Counting(1000), 17, prefetch=2) == [2, 5, 5, 5]
    assert _phases(_Counting(1000), 17, prefetch=3) == [3, 5, 5, 4]


def test_a_phase_hashes_ahead_on_its_threads_what_it_prepared():
    seen: list[tuple[int, int]] = []
    task, spent = _Counting(), array("d")
    ahead = lambda sample, tensors: seen.append((sample, threading.get_ident()))  # noqa: E731
    out = list(prepared(task, range(8), 2, 4, phased=True, spent=spent, ahead=ahead))
    assert sorted(s for s, _ in seen) == [0, 1, 2, 3, 4, 6, 7]  # not the sample that failed
    assert threading.get_ident() not in {t for _, t in seen} and len(spent) == len(out) == 8


def test_a_models_inputs_say_a_samples_bytes_only_where_every_dimension_is_fixed():
    # the first phase of a 640 x 640 float32 input: 13 samples (64 MiB), not 32 (157 MiB)
    assert TensorInfo("x", 0, (1, 640, 640, 3), "float32").nbytes == 4_915_200
    assert preparation._phase(4, 2, 4_915_200) == 13
    assert TensorInfo("x", 0, (1, -1, -1, 3), "float32").nbytes == 0
    assert TensorInfo("x", 0, (1,), "no such dtype").nbytes == 0


def test_a_declared_input_too_large_for_int64_is_counted_exactly_and_phased_at_the_least():
    huge = TensorInfo("x", 0, (1, 3_000_000_019, 3_000_000_019, 3), "float32").nbytes
    assert huge == 3_000_000_019**2 * 12  # numpy's int64 product would wrap
    assert preparation._phase(4, 2, huge) == 4
