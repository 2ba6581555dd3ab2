"""loop.parallel=auto's decision rule: calibrate fully, shortened or not at all (no timing here: the
measured figures are given)."""

from __future__ import annotations

import pytest

from evalharness.run.parallel_choice import (
    GAIN,
    MIN_WINDOW_S,
    candidates,
    paper_split,
    plan_calibration,
)

WINDOW, ROUNDS = 0.5, 2


def test_the_paper_split_keeps_threads_per_interpreter_at_most_the_processes():
    assert paper_split(1) == (1, 1)
    assert paper_split(2) == (2, 1)
    assert paper_split(4) == (2, 2)
    assert paper_split(8) == (4, 2)
    assert paper_split(12) == (4, 3)
    assert paper_split(16) == (4, 4)
    assert paper_split(7) == (7, 1)  # a prime: one thread each
    for cores in range(1, 65):
        p, t = paper_split(cores)
        assert p * t == cores and t <= p and (p, t) in candidates(cores)


def test_one_core_has_nothing_to_calibrate():
    plan = plan_calibration(10**6, 0.01, 0.03, 1, WINDOW, ROUNDS)
    assert plan.window_s == 0 and plan.split == (1, 1) and "nothing to calibrate" in plan.reason


def test_a_short_run_skips_calibration_for_the_paper_split():
    # 16 cores, 800 images at ~11.6 ms an invoke on a 4-thread interpreter: ~2.3 s of run against
    # ~6 s of calibration (docs/benchmarks.md, the lent 16-core machine)
    plan = plan_calibration(800, 0.0116, 0.035, 16, WINDOW, ROUNDS)
    assert plan.window_s == 0 and plan.split == (4, 4)
    assert plan.estimated_run_s == pytest.approx(800 * 0.0116 / 4)
    assert plan.estimated_cost_s == pytest.approx(0.035 * 30 + 10 * WINDOW)
    assert "calibration skipped, 4x4" in plan.reason


def test_a_long_run_calibrates_fully():
    plan = plan_calibration(100_000, 0.0116, 0.035, 16, WINDOW, ROUNDS)
    assert plan.window_s == WINDOW
    assert plan.estimated_cost_s <= GAIN * plan.estimated_run_s
    assert "within 5% of the run" in plan.reason


def test_a_middling_run_shortens_the_windows_to_its_share():
    # 2 cores: full calibration ~2.03 s; 10,000 images at 7 ms on 2 interpreters = 35 s, 5 % = 1.75 s
    plan = plan_calibration(10_000, 0.007, 0.03, 2, WINDOW, ROUNDS)
    assert MIN_WINDOW_S <= plan.window_s < WINDOW
    loads = 0.03 * (1 + 2 - 1)
    assert loads + 2 * ROUNDS * plan.window_s <= GAIN * plan.estimated_run_s + 1e-9
    assert "shortened to 0.42 s" in plan.reason


def test_the_boundaries_follow_the_run_length():
    """More images never calibrate less: skipped, then shortened, then full."""
    order = {"skip": 0, "short": 1, "full": 2}
    seen = []
    for images in (100, 1_000, 3_000, 6_000, 10_000, 30_000, 100_000):
        plan = plan_calibration(images, 0.007, 0.03, 2, WINDOW, ROUNDS)
        seen.append("skip" if not plan.window_s else "full" if plan.window_s == WINDOW else "short")
    assert [order[s] for s in seen] == sorted(order[s] for s in seen)
    assert seen[0] == "skip" and seen[-1] == "full" and "short" in seen


def test_a_window_must_fit_several_invokes_of_the_slowest_interpreter():
    # a slow model: 0.2 s an invoke on 4 threads is ~0.8 s on one; a window under 8 of those is skipped
    plan = plan_calibration(2_000, 0.2, 0.05, 16, WINDOW, ROUNDS)
    assert plan.estimated_run_s == pytest.approx(100.0)
    assert plan.window_s == 0
    assert plan.record()["paper_split"] == [4, 4] and plan.record()["window_s"] == 0
