"""loop.shape=phased: a phase is prepared on every preparing thread, then handed out whole."""

from __future__ import annotations

import threading

from evalharness.core.errors import DataError
from evalharness.loop.preparation import prepared
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
