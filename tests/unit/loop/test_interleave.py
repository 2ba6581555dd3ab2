"""The interleaved measurement: ABBA order, paired speed-up, validity; a fake clock, no model."""

from __future__ import annotations

import pytest

from evalharness.loop.interleave import InterleaveSettings, measure
from evalharness.stats.intervals import t_value
from evalharness.stats.speedup import paired_block_speedup


class FakeClock:
    """Time advances only when a fake model is invoked: each candidate costs a fixed time, plus a
    slow drift of the whole machine that interleaving must cancel."""

    def __init__(self, drift: float = 0.0) -> None:
        self.now, self.drift, self.calls, self.loads = 0.0, drift, [], []

    def __call__(self) -> float:
        return self.now

    def loader(self, name: str, cost: float):
        def load():
            self.loads.append(name)

            def invoke() -> None:
                self.calls.append(name)
                self.now += cost * (1 + self.drift * self.now)

            return invoke

        return load


NO_THERMAL = {"source": "none", "exposed": False, "zones_c": {}, "cooling": {}}


def _cold() -> dict:
    return NO_THERMAL


QUICK = InterleaveSettings(rounds=4, block_secs=0.01, min_secs=0, min_invokes=1, warmup=1, rounds_per_load=0)


def test_blocks_alternate_abba_and_the_speedup_survives_a_drift():
    clock = FakeClock(drift=0.5)  # the machine slows by half per second of the measurement
    found = measure([clock.loader("A", 0.002), clock.loader("B", 0.001)], QUICK, clock, lambda: NO_THERMAL)
    assert found["block_order"] == [0, 1, 1, 0, 0, 1, 1, 0]
    per_block = found["invokes_per_block"]
    expected = "".join("AB"[i] * per_block[i] for i in found["block_order"])
    assert "".join(clock.calls[4:]) == expected  # after each one's warm-up and calibration invoke
    comparison = found["comparisons"][1]
    assert comparison["speedup"] == pytest.approx(2.0, rel=0.02)
    assert found["comparisons"][0]["verdict"] == "baseline"
    assert found["rounds"] == 4 and found["thermal"]["throttled"] == []


def test_candidates_are_loaded_again_every_rounds_per_load_and_each_load_is_one_observation():
    clock = FakeClock()
    settings = InterleaveSettings(rounds=6, block_secs=0.01, min_secs=0, min_invokes=1, rounds_per_load=2)
    found = measure([clock.loader("A", 0.002), clock.loader("B", 0.001)], settings, clock, _cold)
    assert found["rounds"] == 6 and found["loads"] == 3 and clock.loads == ["A", "B"] * 3
    assert found["comparisons"][1]["units"] == 3 and "per-load" in found["comparisons"][1]["method"]
    with pytest.raises(ValueError, match="even"):
        measure([clock.loader("A", 1)], InterleaveSettings(rounds_per_load=3), clock, _cold)


def test_a_slow_load_stops_the_reloading():
    clock = FakeClock()
    slow = clock.loader("B", 0.001)

    def b_load():  # the first load is quick, every later one takes 5 s (a GPU compiling again)
        if clock.loads.count("B"):
            clock.now += 5.0
        return slow()

    settings = InterleaveSettings(rounds=8, block_secs=0.01, min_secs=0, min_invokes=1, max_secs=1000)
    found = measure([clock.loader("A", 0.001), b_load], settings, clock, _cold)
    assert found["loads"] == 2 and found["rounds"] == 8 and found["rounds_per_load"] == 2


def test_rounds_are_added_until_the_minimum_duration_and_count_are_met():
    clock = FakeClock()
    settings = InterleaveSettings(rounds=2, block_secs=0.01, min_secs=0.5, min_invokes=10, warmup=0)
    found = measure([clock.loader("A", 0.001), clock.loader("B", 0.001)], settings, clock, _cold)
    assert found["rounds"] % 2 == 0
    assert all(m["timed_secs"] >= 0.5 and m["valid"] for m in found["measurements"])


def test_an_invalid_measurement_makes_the_comparison_say_so():
    clock = FakeClock()
    settings = InterleaveSettings(rounds=2, block_secs=0.01, min_secs=0.0, min_invokes=10_000, max_secs=0.1)
    found = measure([clock.loader("A", 0.001), clock.loader("B", 0.002)], settings, clock, _cold)
    assert not found["measurements"][1]["valid"]
    assert "min_invokes" in found["measurements"][1]["problems"][0]
    comparison = found["comparisons"][1]
    assert comparison["verdict"] == "slower (invalid)" and not comparison["valid"]
    assert "this: " in comparison["why"] and "min_invokes" in comparison["why"]


def test_paired_speedup_interval_is_t_on_log_ratios():
    base, cand = [2.0, 2.2, 1.8, 2.1], [1.0, 1.0, 1.0, 1.0]
    found = paired_block_speedup(base, cand)
    assert found["speedup"] == pytest.approx((2.0 * 2.2 * 1.8 * 2.1) ** 0.25)
    assert found["interval"][0] < found["speedup"] < found["interval"][1] and found["significant"]
    same = paired_block_speedup([1.0, 1.1, 0.9], [1.05, 1.0, 0.95])
    assert not same["significant"] and same["interval"][0] < 1 < same["interval"][1]


@pytest.mark.parametrize(("df", "exact"), [(1, 12.7062), (2, 4.3027), (5, 2.5706), (9, 2.2622), (30, 2.0423)])
def test_t_quantile_without_scipy(df, exact):
    assert t_value(df) == pytest.approx(exact, rel=2e-4)
