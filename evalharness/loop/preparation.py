"""Preparing the loop's samples: in turn with the invokes, or ahead of them on a thread pool, in
sample order either way (:func:`prepared`; :mod:`evalharness.loop.shape` chooses how)."""

from __future__ import annotations

import time
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Any

import numpy as np

from evalharness.core.errors import DataError
from evalharness.tasks.live import Looped

Prepared = tuple[Any, list[np.ndarray] | DataError]  # (sample, its input tensors or why not)
# A phase's samples. Each phase boundary costs: the phase waits for its last preparation, and it
# starts while the interpreter's threads still spin-wait after the last invoke (~0.1 ms a sample
# at 16), so a longer phase spreads them over more samples (2-thread MobileNet v2: 16 ran ~7 %
# faster than 4 and 32 ~8 % faster than 16: docs/performance.md, *loop.shape=phased*); at most
# PHASE_BYTES of prepared tensors, the first phase included where the model's inputs say a sample's
# size (the calibration's phased blocks are BLOCK = 16 samples).
PHASE_SAMPLES = 32
PHASE_BYTES = 64 << 20


def prepared_one(
    task: Looped, sample: Any, clock: Callable[[], float], spent: array[float] | None
) -> list[np.ndarray] | DataError:
    """``sample``'s tensors, or the DataError preparing it raised; its seconds by ``clock`` appended
    to ``spent`` either way (anything else raised goes to the caller)."""
    start = clock()
    try:
        return task.prepare(sample)
    except DataError as exc:
        return exc
    finally:
        if spent is not None:
            spent.append(clock() - start)


def prepared(
    task: Looped,
    samples: Iterable[Any],
    workers: int,
    prefetch: int,
    phased: bool = False,
    spent: array[float] | None = None,
    ahead: Callable[[Any, list[np.ndarray]], None] | None = None,
    sample_bytes: int = 0,
) -> Iterator[Prepared]:
    """(sample, tensors or the DataError preparing it raised), in sample order; each preparation's
    seconds are appended to ``spent``: wall-clock when samples are prepared in turn with the invokes,
    the preparing thread's CPU time when they are prepared beside them (workers > 0). A thread
    waiting meanwhile for the cores or the GIL — while a GPU compiles its program in the first
    invoke, or a software renderer runs one — waits for the invoke; that wait is not preprocessing
    (it once read "9515 ms preprocess" per image on a GPU).

    With workers > 0 a bounded window of ``prefetch`` samples is prepared ahead on a thread pool;
    consuming the futures in submission order keeps results deterministic whatever the timing.
    ``phased``: a phase of :data:`PHASE_SAMPLES` samples (at least ``prefetch`` and ``workers``; fewer
    where its tensors would pass :data:`PHASE_BYTES`: the first phase by ``sample_bytes``, the bytes of
    one sample's tensors as the model's inputs say, or at the least where that is 0 (unknown), the
    next ones by the largest sample the last phase prepared) is prepared on all ``workers``
    threads at once and only then handed out, so no preparation runs while the interpreter's threads
    do: the cores alternate between all preparing and all invoking (``loop.shape=phased``);
    ``ahead``, where given, is called there with each prepared sample and its tensors (the inputs'
    identity hashes, made while no invoke runs).
    """

    clock = time.thread_time if workers > 0 else time.perf_counter

    def attempt(sample: Any) -> list[np.ndarray] | DataError:
        return prepared_one(task, sample, clock, spent)

    def phase_one(sample: Any) -> list[np.ndarray] | DataError:
        tensors = attempt(sample)
        if ahead is not None and not isinstance(tensors, DataError):
            ahead(sample, tensors)  # after the timed preparation: its seconds are not preprocessing
        return tensors

    if workers <= 0:
        for sample in samples:
            yield sample, attempt(sample)
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prepare")
    if phased:
        try:
            it, phase = iter(samples), _phase(prefetch, workers, sample_bytes)
            while chunk := list(islice(it, phase)):
                ready = list(pool.map(phase_one, chunk))  # the whole phase, before any of it is invoked
                yield from zip(chunk, ready, strict=True)
                phase = _phase(prefetch, workers, _largest(ready))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return
    try:
        it, window = iter(samples), deque[tuple[Any, Any]]()
        for sample in it:
            window.append((sample, pool.submit(attempt, sample)))
            if len(window) >= max(prefetch, 1):
                head, future = window.popleft()
                yield head, future.result()
        while window:
            head, future = window.popleft()
            yield head, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _phase(prefetch: int, workers: int, sample_bytes: int) -> int:
    """Samples in a phase whose samples take ``sample_bytes`` each (0: not known yet)."""
    fits = PHASE_BYTES // sample_bytes if sample_bytes > 0 else 0
    return max(prefetch, workers, min(PHASE_SAMPLES, fits))


def _largest(ready: list[list[np.ndarray] | DataError]) -> int:
    """Bytes of the largest sample's tensors in a phase (1 where none was prepared)."""
    sizes = (sum(getattr(t, "nbytes", 0) for t in r) for r in ready if not isinstance(r, DataError))
    return max(1, *sizes)
