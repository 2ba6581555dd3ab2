"""Lanes: several instances of one CPU model in this process, each preparing and invoking its own
samples on its own thread, their outputs scored on the loop's thread in sample order.

Why: with the default ``delegate.num_threads=1`` one interpreter uses one core, and a preparing
thread beside it (the pipelined shape) cannot make the second core invoke; with more threads per
interpreter, XNNPACK's workers wait at every operator for a worker the preparing thread preempted.
Two one-thread interpreters side by side, each preparing its next sample in turn, keep both cores
busy with the same work and nothing waiting (``invoke()`` releases the GIL): on the 2-core machine
of docs/benchmarks.md, *Lanes*, 1.5-1.6 x the pipelined shape. Each interpreter runs with the
thread count the run asked for, so every timed invoke is an invoke of the model as configured, with
another instance beside it (as a preparing thread is beside it when pipelined); the record says so.

What stays the same as one interpreter: every sample's outputs (the same model and delegate on the
same tensors; tests/unit/loop/test_lanes.py and the e2e run compare metrics), the order in which
samples are scored and recorded, a strict stop at the first bad sample (the samples before it are
scored), the first invoke, warm-up and repeatability check (made by the first interpreter on the
first sample before any lane starts). Each other instance gets untimed warm-up invokes of its own.
"""

from __future__ import annotations

import threading
import time
from array import array
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.cores import available_cores
from evalharness.core.errors import DataError
from evalharness.loop.preparation import prepared_one

if TYPE_CHECKING:  # for the types only
    from evalharness.runtime.contract import Model
    from evalharness.tasks.live import Looped

_POLL_S = 0.1  # a lane waiting for room in the window looks at the stop flag this often
BATCHED = "a batched run invokes one instance (loop.batch_size=1 for lanes)"  # also settings/validate.py


def lanes_cap(value: str) -> int | None:
    """``loop.lanes`` as a number (validated settings hold one), None for ``auto`` (then the cores)."""
    text = str(value).strip()
    return int(text) if text.isdigit() else None


def lanes_possible(model: Model, batch_size: int, cores: int | None = None, cap: int | None = None) -> int:
    """How many instances of ``model`` fit side by side on this process's cores, at most ``cap``
    (``loop.lanes``; 1: lanes do not apply: a device, a runner, a batch, threads the runtime chooses,
    or no core to spare)."""
    threads = model.lane_threads()
    if threads is None or threads < 1 or batch_size != 1 or model.batch_size:
        return 1
    fit = max((available_cores() if cores is None else cores) // threads, 1)
    return fit if cap is None else max(min(fit, cap), 1)


def lanes_refused(model: Model, batch_size: int, cores: int | None = None) -> str:
    """Why no second instance of ``model`` runs beside it here (for ``loop.shape=lanes``'s error)."""
    threads = model.lane_threads()
    if threads is None or threads < 1:
        return (
            f"the {type(model).__name__} backend with this delegate runs on its own device or chooses "
            "its own threads (lanes need a CPU interpreter with delegate.num_threads >= 1)"
        )
    if batch_size != 1 or model.batch_size:
        return BATCHED
    cores = available_cores() if cores is None else cores
    if threads * 2 > cores:
        return f"one instance takes delegate.num_threads={threads} of this process's {cores} core(s)"
    return "loop.lanes=1 allows one instance"


@dataclass
class Lanes:
    """The instances of one model a lanes run invokes, the first the run's own (already warm)."""

    models: list[Model]
    init_ms: list[float] = field(default_factory=list)  # each other instance's load

    @classmethod
    def load(cls, first: Model, load_model: Callable[[], Model], count: int, warm: list[np.ndarray],
             warmup_runs: int) -> Lanes:  # fmt: skip
        """``first`` and ``count - 1`` more instances, each warmed up by ``1 + warmup_runs`` untimed
        invokes on ``warm`` (the first sample's tensors) so that no lane's first timed invoke pays
        its cold start."""
        lanes = cls([first])
        for _ in range(count - 1):
            start = time.perf_counter()
            model = load_model()
            lanes.init_ms.append((time.perf_counter() - start) * 1e3)
            model.set_inputs(warm)
            for _ in range(1 + warmup_runs):
                model.invoke()
            lanes.models.append(model)
        return lanes


Outcome = tuple[Any, list[np.ndarray] | BaseException, list[np.ndarray] | None, float]


def run_lanes(
    lanes: Lanes,
    task: Looped,
    samples: Iterable[Any],
    prefetch: int,
    spent: array[float],
    timed_invoke: Callable[[Model], float],
) -> Generator[Outcome, None, None]:
    """(sample, its tensors or what preparing or invoking it raised, its outputs, invoke ms), in
    sample order, as the lanes finish them. Each lane takes the next sample, prepares it (its CPU
    seconds to ``spent``), sets, invokes and reads back; at most ``prefetch`` samples a lane are
    taken and not yet handed out (bounded memory). Closing the iterator (a stop, an error, Ctrl-C)
    stops the lanes after the sample each is on and waits for them."""
    source, taken = iter(samples), 0
    take, ready = threading.Lock(), threading.Condition()
    outcomes: dict[int, Outcome] = {}
    room = threading.Semaphore(max(prefetch, 1) * len(lanes.models))
    stop, running = threading.Event(), [len(lanes.models)]

    def lane(model: Model) -> None:
        nonlocal taken
        try:
            while not stop.is_set():
                if not room.acquire(timeout=_POLL_S):
                    continue
                with take:
                    try:
                        sample = next(source, _END)
                    except BaseException as exc:  # listing the samples failed: the run stops there
                        sample, listing = SOURCE, exc
                    if sample is _END or stop.is_set():
                        return
                    index, taken = taken, taken + 1
                    if sample is SOURCE:
                        stop.set()
                if sample is SOURCE:
                    outcome: Outcome = (SOURCE, listing, None, 0.0)
                else:
                    outcome = _one(model, task, sample, spent, timed_invoke)
                with ready:
                    outcomes[index] = outcome
                    ready.notify_all()
        finally:
            with ready:
                running[0] -= 1
                ready.notify_all()

    threads = [
        threading.Thread(target=lane, args=(m,), name=f"lane-{i}", daemon=True)
        for i, m in enumerate(lanes.models)
    ]
    for t in threads:
        t.start()
    try:
        index = 0
        while True:
            with ready:
                while index not in outcomes and running[0]:
                    ready.wait(_POLL_S)
                if index not in outcomes:  # every lane ended, each outcome it made handed out
                    return
                outcome = outcomes.pop(index)
            room.release()
            index += 1
            yield outcome
    finally:
        stop.set()
        for t in threads:
            t.join()


_END = object()
SOURCE = object()  # an outcome's sample when taking the next sample raised (what raised is its tensors)


def _one(model: Model, task: Looped, sample: Any, spent: array[float],
         timed_invoke: Callable[[Model], float]) -> Outcome:  # fmt: skip
    """One sample through one lane: prepared, set, invoked (timed), read back; what raised instead."""
    try:
        tensors = prepared_one(task, sample, time.thread_time, spent)
        if isinstance(tensors, DataError):  # skipped or raised on the loop's thread, in sample order
            return sample, tensors, None, 0.0
        model.set_inputs(tensors)
        latency = timed_invoke(model)
        return sample, tensors, model.get_outputs(), latency
    except BaseException as exc:  # handed to the loop's thread, which raises it in sample order
        return sample, exc, None, 0.0
