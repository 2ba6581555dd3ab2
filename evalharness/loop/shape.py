"""The loop's shape, chosen per machine from what it measures: sequential or pipelined preparation.

Preparing the next image on another thread while ``invoke()`` runs (pipelined) hides decode and
preprocessing when a core is free, but where the interpreter's own threads already use every core
the preparing thread takes a core from them and every invoke gets slower: pipelining lost to
sequential preparation on one 2-core machine and won clearly on another (docs/benchmarks.md, *Throughput*).
No fixed rule is right on both, so ``loop.shape=auto`` measures.

Calibration (``auto``, runs of at least :data:`MIN_SAMPLES` samples): after :data:`SETTLE` samples
run sequentially (the first one carries the cold first invoke and the warm-up), blocks of
:data:`BLOCK` samples alternate between the two shapes in ABBA order (S P P S S P), and each block's
cycle time (from handing one prepared sample to the loop to handing it the next: invoke, scoring and
whatever preparation the loop waited for) is measured. The shape whose paired blocks are faster in
the median of the per-pair ratios runs the rest — unless preparing took under
:data:`MIN_PREP_SHARE` of the sequential blocks' time (cached inputs), when sequential runs; that
is decided as soon as a sequential block shows it, so a cached run calibrates on 16 samples. Where
pipelined wins and preparing took over :data:`PREP_BOUND` × the rest of a sequential cycle, one
preparing thread is the bound (it cannot keep the interpreter busy), so :data:`PAIRS` more pairs of
blocks compare one more preparing thread against the chosen number, ABBA again, and the faster runs
the rest (decode and resize release the GIL: two preparing threads and the interpreter fill two
cores where one preparing thread leaves them idle part of each cycle). Every
calibration sample is scored like any other: both shapes produce the same tensors in the same
order, so only the clock differs. Shorter runs keep
the pipelined shape (the earlier default) and say why. ``loop.shape=sequential|pipelined``, or
``loop.workers`` given on the command line (0 = sequential), choose without measuring.

Before any of this, where more than one instance of a CPU model fits the cores, ``auto`` measures
instances side by side against one (:mod:`evalharness.loop.lane_choice`, ``loop.shape=lanes``);
this calibration runs on what is left when one instance stays.

The choice, where it came from and the calibration figures go in ``provenance.thread_budget.loop``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypedDict, TypeVar

from evalharness.core.cores import available_cores

SEQUENTIAL, PIPELINED, AUTO, PHASED, LANES = "sequential", "pipelined", "auto", "phased", "lanes"
SHAPES = (AUTO, SEQUENTIAL, PIPELINED, PHASED, LANES)  # lanes: evalharness/loop/lanes.py
SETTLE = 2  # samples run sequentially before calibrating (cold first invoke + warm-up)
BLOCK = 16  # samples per calibration block
PAIRS = 3  # paired blocks per shape
CALIBRATION_SAMPLES = SETTLE + 2 * PAIRS * BLOCK
MIN_SAMPLES = 2 * CALIBRATION_SAMPLES  # below this, calibrating is most of the run: not worth it
# Pipelining can save at most the preparation's share of a sequential cycle. Below this share (a
# cached run's tensor reads) that saving is inside the calibration's block-to-block noise, while a
# preparing thread costs invoke time wherever the interpreter's threads fill the cores: sequential,
# without trusting the ratio (docs/benchmarks.md, *Throughput* gives the measured noise and cost).
MIN_PREP_SHARE = 0.05
# Pipelined with preparing longer than the rest of a cycle (invoke, scoring) by this factor, one
# preparing thread is the run's bound (MobileNet v1 0.25/128 quant: 0.8 ms of preparation against
# ~0.65 ms of the rest), so blocks with one preparing thread more are measured against it too.
PREP_BOUND = 1.15

Item = TypeVar("Item")  # what preparing one sample gives (the loop's (sample, tensors or error))


class ShapeRecord(TypedDict):
    """``provenance.thread_budget.loop``: the shape the loop ran in, its preparing threads and why."""

    shape: str
    workers: int
    source: str
    calibration: dict[str, Any] | None
    lanes: int  # instances of the model side by side (1: the run's interpreter alone)
    lanes_calibration: dict[str, Any] | None


@dataclass
class LoopShape:
    """What the loop did: the shape of (most of) the run, why, and the calibration's figures."""

    shape: str
    workers: int  # preparing threads of the pipelined and phased shapes (0 when sequential)
    source: str
    calibration: dict[str, Any] | None = None
    lanes: int = 1  # instances of the model side by side (loop/lanes.py)
    lanes_calibration: dict[str, Any] | None = None  # loop/lane_choice.py's figures, where it measured

    def record(self) -> ShapeRecord:
        return {
            "shape": self.shape,
            "workers": self.workers if self.shape in (PIPELINED, PHASED) else 0,
            "source": self.source,
            "calibration": self.calibration,
            "lanes": self.lanes if self.shape == LANES else 1,
            "lanes_calibration": self.lanes_calibration,
        }


def requested(shape: str, workers: int) -> LoopShape:
    """The shape the settings ask for before anything is measured (``auto`` stays ``auto``)."""
    if shape == PHASED:  # a phase prepares on every core this process may use
        return LoopShape(PHASED, available_cores(), "loop.shape=phased: one preparing thread per core")
    if shape != AUTO:
        return LoopShape(shape, workers if shape == PIPELINED else 0, f"loop.shape={shape}")
    if workers <= 0:
        return LoopShape(SEQUENTIAL, 0, "loop.workers=0")
    return LoopShape(AUTO, workers, "calibrated")


def given_workers(shape: str, workers: int, overrides: list[str]) -> str:
    """``loop.shape`` once the command line is read: ``loop.workers=N`` given there (and no
    ``loop.shape``) chooses the shape, as it always has (0 = sequential, else pipelined)."""
    from evalharness.core.override_grammar import override_key

    keys = {override_key(o) for o in overrides}
    if shape == AUTO and "loop.workers" in keys and "loop.shape" not in keys:
        return SEQUENTIAL if workers <= 0 else PIPELINED
    return shape


def shaped(
    prepare_items: Callable[..., Iterator[Item]],
    samples: Iterable[Any],
    total: int,
    choice: LoopShape,
) -> Iterator[Item]:
    """``prepare_items(samples, workers[, phased])`` in the chosen shape; with ``auto``, calibrate first and
    set ``choice.shape``, ``choice.source`` and ``choice.calibration`` on the way."""
    if choice.shape == PHASED:
        yield from prepare_items(samples, choice.workers, True)
        return
    if choice.shape != AUTO:
        yield from prepare_items(samples, choice.workers if choice.shape == PIPELINED else 0)
        return
    if total < MIN_SAMPLES:
        choice.shape = PIPELINED
        choice.source = f"{total} samples: too few to calibrate (< {MIN_SAMPLES}), pipelined by default"
        yield from prepare_items(samples, choice.workers)
        return
    it = iter(samples)
    yield from prepare_items(islice(it, SETTLE), 0)
    cycles: dict[str, list[float]] = {SEQUENTIAL: [], PIPELINED: []}
    order = [SEQUENTIAL, PIPELINED, PIPELINED, SEQUENTIAL] * PAIRS
    waits: list[float] = []  # time the sequential blocks spent preparing (the most pipelining could hide)
    for shape in order[: 2 * PAIRS]:
        workers = choice.workers if shape == PIPELINED else 0
        waited = waits if shape == SEQUENTIAL else []
        yield from _block(prepare_items, list(islice(it, BLOCK)), workers, cycles[shape], waited)
        if _preparation_share(cycles, sum(waits)) < MIN_PREP_SHARE:
            break  # the first sequential block already says there is little to hide
    share = _preparation_share(cycles, sum(waits))
    _decide(choice, cycles, share)
    if _preparation_bound(choice, share):
        yield from _more_workers(choice, prepare_items, it)
    yield from prepare_items(it, choice.workers if choice.shape == PIPELINED else 0)


def _block(
    prepare_items: Callable[..., Iterator[Item]],
    block: list[Any],
    workers: int,
    cycles: list[float],
    waits: list[float],
) -> Iterator[Item]:
    """``block``'s items prepared by ``workers`` threads (0: in turn), each yielded; its cycle time
    (ms per sample, from handing one item to the loop to handing it the next) goes to ``cycles``, the
    time the loop waited for its items to ``waits``."""
    stamps: list[float] = []
    waited = 0.0
    items = prepare_items(block, workers)
    while True:
        asked = time.perf_counter()
        item = next(items, None)
        if item is None:
            break
        stamps.append(time.perf_counter())
        if len(stamps) > 1:
            waited += stamps[-1] - asked
        yield item
    if len(stamps) > 1:
        cycles.append((stamps[-1] - stamps[0]) * 1e3 / (len(stamps) - 1))
    waits.append(waited)


def _preparation_bound(choice: LoopShape, share: float) -> bool:
    """Pipelined, with preparing longer than the rest of a sequential cycle by :data:`PREP_BOUND`:
    the preparing threads, not the interpreter, set the pace, and a core may take one more."""
    if choice.shape != PIPELINED or share >= 1.0:
        return False
    return share / (1.0 - share) > PREP_BOUND and choice.workers < available_cores()


def _more_workers(
    choice: LoopShape, prepare_items: Callable[..., Iterator[Item]], it: Iterator[Any]
) -> Iterator[Item]:
    """Pipelined blocks with one preparing thread more and with the chosen number, in ABBA order;
    the faster in the median of the paired ratios runs the rest (``choice.workers``)."""
    base, more = choice.workers, choice.workers + 1
    cycles: dict[int, list[float]] = {base: [], more: []}
    for workers in ([more, base, base, more] * PAIRS)[: 2 * PAIRS]:
        yield from _block(prepare_items, list(islice(it, BLOCK)), workers, cycles[workers], [])
    ratios = [m / b for m, b in zip(cycles[more], cycles[base], strict=False) if b > 0]
    ratio = statistics.median(ratios) if ratios else None
    if ratio is not None and ratio < 1.0:
        choice.workers = more
    said = "measured nothing" if ratio is None else f"median paired ratio {ratio:.3f}"
    choice.source += (
        f"; preparation bound, {more} preparing threads against {base} ({said}): {choice.workers}"
    )
    if choice.calibration is not None:
        choice.calibration["workers_ms_per_sample"] = {
            str(w): [round(c, 4) for c in cycles[w]] for w in (base, more)
        }
        choice.calibration["median_ratio_more_workers"] = None if ratio is None else round(ratio, 4)


def _preparation_share(cycles: dict[str, list[float]], waited_s: float) -> float:
    """The share of the sequential blocks' time spent preparing (1.0 before any was measured)."""
    seq_ms = sum(cycles[SEQUENTIAL]) * (BLOCK - 1)
    return waited_s * 1e3 / seq_ms if seq_ms > 0 else 1.0


def _decide(choice: LoopShape, cycles: dict[str, list[float]], prep_share: float) -> None:
    seq_blocks, pipe_blocks = cycles[SEQUENTIAL], cycles[PIPELINED]
    ratios = [p / s for s, p in zip(seq_blocks, pipe_blocks, strict=False) if s > 0]
    samples = BLOCK * (len(seq_blocks) + len(pipe_blocks))
    ratio = statistics.median(ratios) if ratios else None
    if seq_blocks and prep_share < MIN_PREP_SHARE:
        choice.shape = SEQUENTIAL
        choice.source = (
            f"calibrated on {samples} samples: preparation is {prep_share:.1%} of a sequential cycle "
            f"({statistics.fmean(seq_blocks):.2f} ms/sample; cached inputs?), too little for pipelining "
            "to hide: sequential"
        )
    elif ratio is None:  # nothing measurable (the blocks ran dry): keep the default
        choice.shape, choice.source = PIPELINED, "calibration measured nothing: pipelined by default"
        return
    else:
        choice.shape = PIPELINED if ratio < 1.0 else SEQUENTIAL
        choice.source = (
            f"calibrated on {samples} samples: pipelined {statistics.fmean(pipe_blocks):.2f} ms/sample "
            f"vs sequential {statistics.fmean(seq_blocks):.2f} ms/sample (median paired ratio {ratio:.3f})"
        )
    choice.calibration = {
        "preparation_share": round(prep_share, 4),
        "samples": samples,
        "block": BLOCK,
        "order": "ABBA",
        "sequential_ms_per_sample": [round(c, 4) for c in cycles[SEQUENTIAL]],
        "pipelined_ms_per_sample": [round(c, 4) for c in cycles[PIPELINED]],
        "median_ratio_pipelined_over_sequential": None if ratio is None else round(ratio, 4),
    }
