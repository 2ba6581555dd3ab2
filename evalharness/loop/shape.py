"""The loop's shape, chosen per machine from what it measures: preparation beside the invokes or not.

Preparing the next image on another thread while ``invoke()`` runs (pipelined) hides decode and
preprocessing when a core is free, but where the interpreter's own threads already use every core
the preparing thread takes a core from them and every invoke gets slower: pipelining lost to
sequential preparation on one 2-core machine and won clearly on another (docs/benchmarks.md,
*Throughput*). The arm that prepares nothing beside an invoke is *phased* where there is a second
core (a phase of samples prepared on every core at once, then invoked with nothing preparing: the
cores alternate, none idles while the other prepares), *sequential* on one core. No fixed rule is
right on every machine, so ``loop.shape=auto`` measures.

Calibration (``auto``, runs of at least :data:`MIN_SAMPLES` samples): after :data:`SETTLE` samples
run sequentially (the first one carries the cold first invoke and the warm-up), blocks of
:data:`BLOCK` samples alternate between the quiet arm and pipelined in ABBA order (Q P P Q Q P), and
each block's time per sample is measured (a sequential or pipelined cycle runs from handing one
prepared sample to the loop to handing it the next: invoke, scoring and whatever preparation the
loop waited for; a phased block is one phase, its preparation included). The arm whose paired
blocks are faster in the median of the per-pair ratios runs the rest — unless preparing took under
:data:`MIN_PREP_SHARE` of a sequential cycle (cached inputs; a phase's preparation counts as one
thread's: its wait × its threads), when sequential runs; that is decided as soon as the first quiet
block shows it, so a cached run calibrates on 16 samples where its phase shows it. (A phase's wait
× its threads overstates cheap preparations, whose Python the two threads take turns at: a cached
MobileNet v2 quant run at 2 threads measured 5-8 % and calibrated in full, choosing pipelined or
phased, which run cached inputs alike: docs/benchmarks.md, *Where the rest of a 2-thread phased
cycle goes*.) Where preparing took over
:data:`PREP_BOUND` × the rest of a sequential cycle, the pipelined arm's one preparing thread is the
bound (it cannot keep the interpreter busy), so :data:`PAIRS` more pairs of blocks compare
pipelined with one more preparing thread against the arm that won, ABBA again, and the faster runs
the rest (decode and resize release the GIL: two preparing threads and the interpreter fill two
cores where one preparing thread leaves them idle part of each cycle). Every calibration sample is
scored like any other: every arm produces the same tensors in the same order, so only the clock
differs. Shorter runs keep the pipelined shape (the earlier default) and say why.
``loop.shape=sequential|pipelined|phased``, or ``loop.workers`` given on the command line (0 =
sequential), choose without measuring.

Before any of this, where more than one instance of a CPU model fits the cores, ``auto`` measures
instances side by side against one (:mod:`evalharness.loop.lane_choice`, ``loop.shape=lanes``);
this calibration runs on what is left when one instance stays.

The choice, where it came from and the calibration figures go in ``provenance.thread_budget.loop``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Generator, Iterable, Iterator
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
# Pipelining can save at most the preparation's share of a sequential cycle (a phase's preparation
# counts as the one thread's that would do it alone: its wait x its threads). Below this share (a
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


def quiet_arm(cores: int) -> str:
    """The calibration's arm that prepares nothing beside an invoke: phased where a second core can
    share a phase's preparation, sequential on one core (where the two are the same)."""
    return PHASED if cores >= 2 else SEQUENTIAL


def shaped(
    prepare_items: Callable[..., Iterator[Item]],
    samples: Iterable[Any],
    total: int,
    choice: LoopShape,
) -> Iterator[Item]:
    """``prepare_items(samples, workers, phased)`` in the chosen shape; with ``auto``, calibrate first
    and set ``choice.shape``, ``choice.workers``, ``choice.source`` and ``choice.calibration``."""
    if choice.shape != AUTO:
        yield from prepare_items(samples, _workers(choice), choice.shape == PHASED)
        return
    if total < MIN_SAMPLES:
        choice.shape = PIPELINED
        choice.source = f"{total} samples: too few to calibrate (< {MIN_SAMPLES}), pipelined by default"
        yield from prepare_items(samples, choice.workers, False)
        return
    it = iter(samples)
    yield from prepare_items(islice(it, SETTLE), 0, False)
    cores = available_cores()  # the cores this process may use, read once for the whole calibration
    quiet = quiet_arm(cores)
    arms = {quiet: cores if quiet == PHASED else 0, PIPELINED: choice.workers}
    cycles: dict[str, list[float]] = {quiet: [], PIPELINED: []}
    spent = [0.0, 0.0]  # the quiet arm's seconds preparing and in all, as a sequential cycle would be
    for arm in ([quiet, PIPELINED, PIPELINED, quiet] * PAIRS)[: 2 * PAIRS]:
        timed = yield from _block(prepare_items, list(islice(it, BLOCK)), arms[arm], arm == PHASED)
        if timed is None:
            continue
        cycles[arm].append(timed[0])
        if arm == quiet:  # a phase's wait counted as if one thread had prepared it: a sequential cycle's
            prep_s = timed[1] * max(arms[quiet], 1)
            spent = [spent[0] + prep_s, spent[1] + timed[2] - timed[1] + prep_s]
            if spent[0] < MIN_PREP_SHARE * spent[1]:
                break  # the first quiet block already says there is little to hide
    share = spent[0] / spent[1] if spent[1] > 0 else 1.0
    _decide(choice, cycles, share, quiet, arms[quiet])
    if _preparation_bound(choice, share, arms[PIPELINED], cores):
        yield from _more_workers(choice, prepare_items, it, arms[PIPELINED])
    yield from prepare_items(it, _workers(choice), choice.shape == PHASED)


def _workers(choice: LoopShape) -> int:
    return choice.workers if choice.shape in (PIPELINED, PHASED) else 0


def _block(
    prepare_items: Callable[..., Iterator[Item]], block: list[Any], workers: int, phased: bool
) -> Generator[Item, None, tuple[float, float, float] | None]:
    """``block``'s items prepared by ``workers`` threads (0: in turn; ``phased``: all at once, then
    handed out), each yielded; returns (ms per sample, seconds the loop waited for items, seconds in
    all), None for a block of under two items. A cycle runs from handing one item to the loop to
    handing it the next (invoke, scoring and whatever preparation the loop waited for); a phased
    block's one cycle is the whole block, its preparation before the first item included."""
    stamps: list[float] = []
    first_asked, waited = time.perf_counter(), 0.0
    items = prepare_items(block, workers, phased)
    while True:
        asked = time.perf_counter()
        item = next(items, None)
        if item is None:
            break
        stamps.append(time.perf_counter())
        waited += stamps[-1] - asked if len(stamps) > 1 or phased else 0.0
        yield item
    if len(stamps) < 2:
        return None
    if phased:  # the phase's preparation, then every item invoked: all of it is the block's work
        span = time.perf_counter() - first_asked
        return span * 1e3 / len(stamps), waited, span
    span = stamps[-1] - stamps[0]
    return span * 1e3 / (len(stamps) - 1), waited, span


def _preparation_bound(choice: LoopShape, share: float, pipelined_workers: int, cores: int) -> bool:
    """Preparing longer than the rest of a sequential cycle by :data:`PREP_BOUND`: the pipelined
    arm's preparing threads, not the interpreter, set its pace, and a core may take one more."""
    if choice.shape not in (PIPELINED, PHASED) or share >= 1.0:
        return False
    return share / (1.0 - share) > PREP_BOUND and pipelined_workers < cores


def _more_workers(
    choice: LoopShape, prepare_items: Callable[..., Iterator[Item]], it: Iterator[Any], pipelined_workers: int
) -> Iterator[Item]:
    """Pipelined blocks with one preparing thread more than the pipelined arm had, against the arm
    that won (pipelined or phased), in ABBA order; the faster in the median of the paired ratios runs
    the rest (``choice.shape``, ``choice.workers``)."""
    won, more = (choice.shape, choice.workers), (PIPELINED, pipelined_workers + 1)
    cycles: dict[tuple[str, int], list[float]] = {won: [], more: []}
    for arm in ([more, won, won, more] * PAIRS)[: 2 * PAIRS]:
        timed = yield from _block(prepare_items, list(islice(it, BLOCK)), arm[1], arm[0] == PHASED)
        if timed is not None:
            cycles[arm].append(timed[0])
    ratios = [m / b for m, b in zip(cycles[more], cycles[won], strict=False) if b > 0]
    ratio = statistics.median(ratios) if ratios else None
    if ratio is not None and ratio < 1.0:
        choice.shape, choice.workers = more
    said = "measured nothing" if ratio is None else f"median paired ratio {ratio:.3f}"
    choice.source += (
        f"; preparation bound, pipelined with {more[1]} preparing threads against {won[0]} with "
        f"{won[1]} ({said}): {choice.shape} with {choice.workers}"
    )
    if choice.calibration is not None:
        choice.calibration["workers_ms_per_sample"] = {
            f"{arm[0]} {arm[1]}": [round(c, 4) for c in cycles[arm]] for arm in (won, more)
        }
        choice.calibration["median_ratio_more_workers"] = None if ratio is None else round(ratio, 4)


def _decide(
    choice: LoopShape, cycles: dict[str, list[float]], prep_share: float, quiet: str, quiet_workers: int
) -> None:
    """The faster of the two arms in the median of the paired ratios (pipelined ÷ ``quiet``) runs the
    rest; sequential where preparing took under :data:`MIN_PREP_SHARE` of a sequential cycle."""
    quiet_blocks, pipe_blocks = cycles[quiet], cycles[PIPELINED]
    ratios = [p / q for q, p in zip(quiet_blocks, pipe_blocks, strict=False) if q > 0]
    samples = BLOCK * (len(quiet_blocks) + len(pipe_blocks))
    ratio = statistics.median(ratios) if ratios else None
    if quiet_blocks and prep_share < MIN_PREP_SHARE:
        choice.shape, choice.workers = SEQUENTIAL, 0
        choice.source = (
            f"calibrated on {samples} samples: preparation is {prep_share:.1%} of a sequential cycle "
            f"({statistics.fmean(quiet_blocks):.2f} ms/sample; cached inputs?), too little for "
            "preparing threads to hide: sequential"
        )
    elif ratio is None:  # nothing measurable (the blocks ran dry): keep the default
        choice.shape, choice.source = PIPELINED, "calibration measured nothing: pipelined by default"
        return
    else:
        if ratio >= 1.0:
            choice.shape, choice.workers = quiet, quiet_workers
        else:
            choice.shape = PIPELINED
        choice.source = (
            f"calibrated on {samples} samples: pipelined {statistics.fmean(pipe_blocks):.2f} ms/sample "
            f"vs {quiet} {statistics.fmean(quiet_blocks):.2f} ms/sample (median paired ratio {ratio:.3f})"
        )
    choice.calibration = {
        "preparation_share": round(prep_share, 4),
        "samples": samples,
        "block": BLOCK,
        "order": "ABBA",
        "against": quiet,
        "ms_per_sample": {arm: [round(c, 4) for c in cycles[arm]] for arm in (quiet, PIPELINED)},
        "median_ratio_pipelined": None if ratio is None else round(ratio, 4),
    }
