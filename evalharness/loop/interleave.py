"""Latency of several candidates measured in one process, alternating in blocks (A B B A A B ...).

Two runs of the same configuration on a shared machine differ by several per cent between minutes;
measured one after the other, that drift lands in the speed-up. Here every round times one block of
each candidate back to back, in forward order on even rounds and reversed on odd ones (ABBA for two,
ABCCBA for three), so a slow minute hits every candidate of a round and a steady drift hits each
position equally often. Each round's block means are one paired observation of the speed-up
(:func:`evalharness.stats.speedup.paired_block_speedup`).

Each candidate's measurement carries its own validity, as MLPerf's loadgen marks a run: the timed
invokes reach a minimum duration and count (rounds are added, two at a time, until they do, up to a
cap), the coefficient of variation of its block means stays under a bound, and no CPU cooling device
throttled during the measurement (``/sys/class/thermal`` where the platform exposes it; the record
says when it does not). A comparison that involves an invalid measurement says so beside its word
("slower (invalid)"): the interval is still computed from what was measured, the reader is told the
conditions were not met.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

import numpy as np

from evalharness.core.schema import bounds
from evalharness.runtime.thermal import read_thermal
from evalharness.stats.latency import LatencySummary, summarize
from evalharness.stats.speedup import paired_block_speedup
from evalharness.stats.validity import Rule, judge, throttled


@dataclass(frozen=True)
class InterleaveSettings:
    """How long and how finely the candidates are interleaved, and what makes a measurement valid."""

    rounds: int = field(default=10, metadata=bounds(2, 10000))  # at least this many (rounded up to even)
    block_secs: float = field(default=0.1, metadata=bounds(0.001, 60.0))  # target duration of one block
    min_secs: float = field(default=1.0, metadata=bounds(0.0))  # timed invokes per candidate, at least
    min_invokes: int = field(default=20, metadata=bounds(1))  # per candidate, at least
    max_cv: float = field(default=0.25, metadata=bounds(0.0))  # of a candidate's block means, at most
    max_secs: float = field(default=60.0, metadata=bounds(0.0))  # the whole measurement's cap (loads too)
    warmup: int = field(default=3, metadata=bounds(0))  # untimed invokes of each candidate after a load
    rounds_per_load: int = field(default=2, metadata=bounds(0, 10000))  # even; 0: one load for all
    max_load_secs: float = field(default=1.0, metadata=bounds(0.0))  # slower first load + warm-up: no reload


class Measurement(TypedDict):
    """One candidate's interleaved measurement: its block means, invoke statistics and validity."""

    block_means_ms: list[float]
    latency_ms: LatencySummary
    timed_secs: float
    cv: float | None
    valid: bool
    problems: list[str]


class InterleaveThermal(TypedDict):
    """The thermal snapshots around the whole measurement and the cooling devices that throttled."""

    before: dict[str, Any]
    after: dict[str, Any]
    throttled: list[str]


class Interleaved(TypedDict):
    """What :func:`measure` found: how the candidates were interleaved, each one's measurement and
    each one's speed-up over the first (metrics.json ``latency_interleaved`` of ``compare``)."""

    settings: dict[str, Any]  # the InterleaveSettings, as written
    order: str
    rounds: int
    loads: int
    rounds_per_load: int
    load_secs: float
    invokes_per_block: list[int]
    block_order: list[int]
    thermal: InterleaveThermal
    measurements: list[Measurement]
    comparisons: list[dict[str, Any]]  # compare_pair of each candidate against the first


def measure(
    loaders: Sequence[Callable[[], Callable[[], None]]],
    settings: InterleaveSettings = InterleaveSettings(),
    clock: Callable[[], float] = time.perf_counter,
    thermal: Callable[[], dict[str, Any]] = read_thermal,
) -> Interleaved:
    """Interleave the candidates and return ``{"settings", "order", "rounds", "thermal",
    "measurements", "comparisons"}``: one measurement per candidate (block means in ms, invoke
    statistics, validity) and each candidate's speed-up over the first. ``loaders[i]()`` loads
    candidate i afresh and returns its invoke (one call = one timed invoke, inputs already set): every
    ``rounds_per_load`` rounds each candidate is loaded again (untimed, then warmed up), because two
    loads of the same model in one process can differ in speed for as long as they live (measured in
    docs/compare.md), so one load per candidate would make a lasting difference of two loads look
    like a difference of the candidates. Where loading them all takes over ``max_load_secs`` (a GPU
    compiling its shaders on a software renderer: ~6 s), they are loaded once and each round is one
    observation; the record says so (``rounds_per_load`` 0). A reload that takes longer is the last
    one (the rounds still pair up by ``rounds_per_load``)."""
    step = settings.rounds_per_load or 2
    if step % 2:
        raise ValueError("rounds_per_load must be even (whole ABBA cycles) or 0")
    load_started = clock()
    invokers = [load() for load in loaders]
    _warm(invokers, settings)  # a GPU compiles on its first invoke: part of what a reload costs
    load_secs = clock() - load_started
    per_load = settings.rounds_per_load if load_secs <= settings.max_load_secs else 0
    reloading = bool(per_load)
    per_block = [_calibrate(invoke, settings, clock) for invoke in invokers]
    before = thermal()
    n = len(invokers)
    blocks: list[list[float]] = [[] for _ in range(n)]
    samples: list[list[float]] = [[] for _ in range(n)]
    rounds, started, sequence, loads = 0, clock(), [], 1
    while True:
        if rounds and reloading and rounds % per_load == 0:
            load_started = clock()
            invokers = [load() for load in loaders]
            _warm(invokers, settings)
            load_secs += clock() - load_started
            loads += 1
            reloading = clock() - load_started <= settings.max_load_secs  # a slow reload: the last one
        for i in range(n) if rounds % 2 == 0 else reversed(range(n)):
            sequence.append(i)
            times = []
            for _ in range(per_block[i]):
                t0 = clock()
                invokers[i]()
                times.append((clock() - t0) * 1e3)
            blocks[i].append(float(np.mean(times)))
            samples[i] += times
        rounds += 1
        if rounds % step:
            continue
        enough = all(sum(s) / 1e3 >= settings.min_secs and len(s) >= settings.min_invokes for s in samples)
        if (rounds >= settings.rounds and enough) or clock() - started >= settings.max_secs:
            break
    after = thermal()
    hot = throttled(before, after)
    measurements = [_measurement(b, s, settings, hot) for b, s in zip(blocks, samples, strict=True)]
    unit = per_load or 1
    return {
        "settings": asdict(settings),
        "order": "ABBA: forward on even rounds, reversed on odd ones",
        "rounds": rounds,
        "loads": loads,
        "rounds_per_load": per_load,
        "load_secs": load_secs,
        "invokes_per_block": per_block,
        "block_order": sequence,
        "thermal": {"before": before, "after": after, "throttled": hot},
        "measurements": measurements,
        "comparisons": [compare_pair(measurements[0], m, unit) for m in measurements],
    }


def _warm(invokers: list[Callable[[], None]], settings: InterleaveSettings) -> None:
    for invoke in invokers:
        for _ in range(settings.warmup):
            invoke()


def _calibrate(invoke: Callable[[], None], settings: InterleaveSettings, clock: Callable[[], float]) -> int:
    """Invokes per block so a block lasts about ``block_secs`` (timed once, after the warm-up)."""
    t0 = clock()
    invoke()
    one = max(clock() - t0, 1e-6)
    return max(1, int(round(settings.block_secs / one)))


def _measurement(
    blocks: list[float], samples: list[float], settings: InterleaveSettings, hot: Sequence[str]
) -> Measurement:
    rule = Rule(settings.min_secs, settings.min_invokes, settings.max_cv, settings.block_secs)
    verdict = judge(blocks, samples, rule, hot)
    return {
        "block_means_ms": blocks,
        "latency_ms": summarize(samples),
        "timed_secs": verdict["timed_secs"],
        "cv": verdict["cv"],
        "valid": verdict["valid"],
        "problems": verdict["problems"],
    }


def compare_pair(base: Mapping[str, Any], cand: Mapping[str, Any], unit: int = 1) -> dict[str, Any]:
    """The candidate's speed-up over the base (>1: faster) with its paired interval and one word;
    ``unit``: rounds per load (one paired observation per load of the two)."""
    found = paired_block_speedup(base["block_means_ms"], cand["block_means_ms"], unit)
    if base is cand:
        return {**found, "verdict": "baseline", "valid": base["valid"]}
    word = "no difference"
    if found["significant"]:
        word = "faster" if found["speedup"] > 1 else "slower"
    if base["valid"] and cand["valid"]:
        return {**found, "verdict": word, "valid": True}
    who = [f"{side}: {'; '.join(m['problems'])}" for side, m in (("first", base), ("this", cand))
           if not m["valid"]]  # fmt: skip
    return {**found, "verdict": f"{word} (invalid)", "valid": False, "why": ", ".join(who)}
