"""The one judgement of a latency measurement: duration, count, block CV, throttling."""

from __future__ import annotations

import pytest

from evalharness.stats.validity import Rule, blocks_of, judge


def test_blocks_group_consecutive_invokes_and_a_short_tail_joins_the_last_block():
    assert blocks_of([50.0] * 4, 0.1) == [50.0, 50.0]
    assert blocks_of([50.0, 50.0, 50.0, 50.0, 20.0], 0.1) == [50.0, pytest.approx(40.0)]
    assert blocks_of([], 0.1) == []


def test_a_steady_long_measurement_is_valid_and_each_shortfall_is_named():
    ok = judge([10.0, 10.5, 9.5], [10.0] * 150, Rule())
    assert ok["valid"] and ok["problems"] == [] and ok["invokes"] == 150
    bad = judge([10.0], [10.0] * 5, Rule(), hot=["Processor (cooling_device0)"])
    assert not bad["valid"]
    assert [p.split()[0] for p in bad["problems"]] == ["measured", "5", "block", "throttled"]
    noisy = judge([5.0, 20.0, 5.0, 20.0], [10.0] * 200, Rule(max_cv=0.25))
    assert noisy["problems"] == [f"block CV {round(noisy['cv'], 3)} > max_cv 0.25"]
