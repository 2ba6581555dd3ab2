"""``loop.parallel=auto``: does measuring the splits pay for itself on this run, and which split
runs when it does not.

Calibrating every processes × threads split (:func:`evalharness.run.parallel.calibrate`) costs a
model load per interpreter and ``candidates × rounds × window`` seconds of invokes: about 2 s on
2 cores, 5–6 s on 16 (31 interpreters, 10 windows of 0.5 s). What it can gain is bounded by how
far the best split beats the split chosen without measuring (:func:`paper_split`): on the 16-core
machine of docs/benchmarks.md the best split beat 4×4 by 3 % at 3,200 images and 4×4 was the best
at 800; on 2 cores 2×1 beat 1×2 by 13 % and was the split ``auto`` chose. So the rule
(:func:`plan_calibration`) spends at most :data:`GAIN` of the run's estimated length on calibrating:

- the run's length is estimated before any shard starts, from the image count and a first
  measured sample cost: one interpreter of the paper split's T threads, loaded and invoked on a
  seeded input (``first invoke``: the median of :data:`TIMED_INVOKES` after one untimed), as
  ``images × invoke / P`` seconds (P interpreters at once; input preparation left out, so the
  estimate is short and the rule errs towards not calibrating);
- the full calibration runs when its estimated cost (the other interpreters' loads, at the measured
  load time each, and every window) is within :data:`GAIN` of that length;
- else the windows are shortened to fit that share, down to :data:`MIN_WINDOW_S` and to
  :data:`MIN_INVOKES` invokes of the slowest interpreter (one thread doing the T threads' work);
- else calibration is skipped and the paper split runs.

Nothing here times anything: the caller measures and this module decides (unit-tested as such).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GAIN = 0.05  # the largest share of the run's estimated length spent calibrating
MIN_WINDOW_S = 0.1  # a shorter window is mostly the threads' start and join
MIN_INVOKES = 8  # invokes the slowest candidate interpreter must fit in a window
TIMED_INVOKES = 3  # invokes timed for the first sample cost (after one untimed)


def candidates(cores: int) -> list[tuple[int, int]]:
    """(processes, threads) with processes × threads = ``cores``, fewest processes first."""
    return [(p, cores // p) for p in range(1, cores + 1) if cores % p == 0]


def paper_split(cores: int) -> tuple[int, int]:
    """The split run without measuring: the fewest processes P with P ≥ T (P × T = ``cores``).
    Why: one interpreter scales badly over many threads (1×16 was the worst split on 16 cores,
    2×1 beat 1×2 on 2), and each process costs its start-up, model load and memory; threads per
    interpreter at most √cores keeps both small. 2 cores: 2×1; 4: 2×2; 8: 4×2; 16: 4×4."""
    return next((p, t) for p, t in candidates(cores) if p >= t)


@dataclass(frozen=True)
class CalibrationPlan:
    """What ``auto`` does: calibrate with ``window_s`` windows, or (``window_s`` 0) run ``split``."""

    window_s: float
    split: tuple[int, int]
    estimated_run_s: float
    estimated_cost_s: float  # of the full calibration
    reason: str

    def record(self) -> dict[str, float | str | list[int]]:
        """``provenance.parallel.calibration_plan``."""
        return {
            "window_s": self.window_s,
            "paper_split": list(self.split),
            "reason": self.reason,
            "estimated_run_s": self.estimated_run_s,
            "estimated_cost_s": self.estimated_cost_s,
        }


def plan_calibration(
    images: int, invoke_s: float, load_s: float, cores: int, window_s: float, rounds: int
) -> CalibrationPlan:
    """Calibrate fully, shortened or not at all, for a run of ``images`` samples whose first sample
    took ``invoke_s`` on one interpreter of the paper split's threads, loaded in ``load_s``; the full
    calibration's windows are ``window_s`` seconds, ``rounds`` of each candidate."""
    options, split = candidates(cores), paper_split(cores)
    p, t = split
    run_s = images * invoke_s / p
    loads_s = load_s * (sum(q for q, _ in options) - 1)  # the first interpreter is loaded already
    windows = len(options) * rounds
    cost_s = loads_s + windows * window_s
    budget_s = GAIN * run_s

    def plan(window: float, reason: str) -> CalibrationPlan:
        return CalibrationPlan(window, split, run_s, cost_s, reason)

    said = (
        f"{images} samples at {invoke_s * 1e3:.1f} ms per invoke on {p} interpreter(s) of {t} "
        f"thread(s): ~{run_s:.1f} s; the full calibration ~{cost_s:.1f} s"
    )
    if len(options) == 1:
        return plan(0.0, f"one split of {cores} core(s): nothing to calibrate")
    if cost_s <= budget_s:
        return plan(window_s, f"{said}, within {GAIN:.0%} of the run")
    shortest = max(MIN_WINDOW_S, MIN_INVOKES * invoke_s * t)
    window = math.floor((budget_s - loads_s) / windows * 100) / 100  # whole hundredths: plain to read
    if window >= shortest:
        return plan(window, f"{said}: windows shortened to {window:.2f} s, within {GAIN:.0%} of the run")
    return plan(
        0.0,
        f"{said}: more than {GAIN:.0%} of the run even with the shortest windows; calibration skipped, "
        f"{p}x{t} (at most {t} thread(s) per interpreter, t <= p)",
    )
