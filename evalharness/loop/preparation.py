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
) -> Iterator[Prepared]:
    """(sample, tensors or the DataError preparing it raised), in sample order; each preparation's
    seconds are appended to ``spent``: wall-clock when samples are prepared in turn with the invokes,
    the preparing thread's CPU time when they are prepared beside them (workers > 0). A thread
    waiting meanwhile for the cores or the GIL — while a GPU compiles its program in the first
    invoke, or a software renderer runs one — waits for the invoke; that wait is not preprocessing
    (it once read "9515 ms preprocess" per image on a GPU).

    With workers > 0 a bounded window of ``prefetch`` samples is prepared ahead on a thread pool;
    consuming the futures in submission order keeps results deterministic whatever the timing.
    ``phased``: the window (at least ``workers`` samples) is prepared on all ``workers`` threads at
    once and only then handed out, so no preparation runs while the interpreter's threads do: the
    cores alternate between all preparing and all invoking (``loop.shape=phased``).
    """

    clock = time.thread_time if workers > 0 else time.perf_counter

    def attempt(sample: Any) -> list[np.ndarray] | DataError:
        return prepared_one(task, sample, clock, spent)

    if workers <= 0:
        for sample in samples:
            yield sample, attempt(sample)
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prepare")
    if phased:
        try:
            it = iter(samples)
            while chunk := list(islice(it, max(prefetch, workers))):
                ready = list(pool.map(attempt, chunk))  # the whole phase, before any of it is invoked
                yield from zip(chunk, ready, strict=True)
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
