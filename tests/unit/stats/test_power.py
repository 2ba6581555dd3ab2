"""The power calculation for a paired proportion difference (stats/power.py), pure."""

from __future__ import annotations

import pytest

from evalharness.stats.intervals import images_needed_paired
from evalharness.stats.power import (
    detectable_paired_change,
    images_for_paired_change,
    resolution,
    resolution_text,
)


def test_images_for_a_change_match_connor_and_the_diffs_images_needed():
    # most favourable case (psi = |delta|): (1.96 * 0.1 + 0.8416 * sqrt(0.0099))^2 / 0.0001 = 782.x
    assert images_for_paired_change(0.01) == 783
    assert images_for_paired_change(-0.01) == 783
    assert images_for_paired_change(0.0) is None
    assert images_for_paired_change(0.04, discordant=0.10) == images_needed_paired(200, 20, 0.04)
    assert images_for_paired_change(0.04, discordant=0.10) > images_for_paired_change(0.04)


def test_the_smallest_detectable_change_falls_with_n_and_inverts_images_needed():
    changes = [detectable_paired_change(n) for n in (25, 100, 1000, 25000)]
    assert changes == sorted(changes, reverse=True)
    assert changes[0] == pytest.approx(0.285, abs=0.002)  # 25 held-out images: nothing below ~0.29
    for n in (25, 100, 1000):
        d = detectable_paired_change(n)
        assert images_for_paired_change(d) <= n < images_for_paired_change(d * 0.99)
    assert detectable_paired_change(0) is None and detectable_paired_change(2) is None


def test_resolution_says_whether_a_target_can_be_told_from_noise():
    small, large = resolution(25, 0.01), resolution(1000, 0.01)
    assert not small["resolves"] and small["images_needed"] == 783
    assert large["resolves"] and large["detectable"] < 0.01
    text = resolution_text(small, "quant.max_drop=0.01")
    assert text.startswith("25 paired images cannot resolve quant.max_drop=0.01")
    assert "nothing below 0.285" in text and "~783 images" in text
    assert "no change up to 1" in resolution_text(resolution(2, 0.01), "x")


def test_the_diff_verdict_says_when_the_equivalence_margin_is_below_what_the_images_resolve():
    from evalharness.stats.paired import verdict

    diff = {"mcnemar_p": 1.0, "discordant": 0, "regressions": 0, "improvements": 0, "delta_top1": 0.0,
            "delta_top1_interval": [-0.0869, 0.0869], "images_needed": None, "paired_images": 50}  # fmt: skip
    line = verdict(diff, 0.05)
    assert "not shown equivalent within ±0.01; no change observed; 50 paired images cannot resolve " in line
    assert "the margin ±0.01" in line and "~783 images would resolve 0.01" in line
    big = {**diff, "paired_images": 50000, "delta_top1_interval": [-0.02, 0.02]}
    assert "cannot resolve" not in verdict(big, 0.05)


def test_one_resolution_text_for_the_power_formula_and_the_measured_interval():
    """The repair's printout, its view and the gate take their sentence from one function, which
    picks it by what was measured (a recorded resolution read back is a plain map)."""
    from evalharness.stats.power import interval_resolution

    wide = interval_resolution(40, 0.01, [-0.05, 0.03])
    assert resolution_text(dict(wide), "a drop of 0.01") == (
        "40 paired images cannot resolve a drop of 0.01: their 95% paired interval is 0.0800 wide, "
        "wider than 0.01 (no power formula for this metric says how many images would; more images "
        "narrow the interval)"
    )
    assert "distinct bootstrap resamples" in resolution_text(interval_resolution(2, 0.01, [0.0, 0.0]), "x")
    assert "gave no paired interval" in resolution_text(interval_resolution(40, 0.01, None), "x")
    assert resolution_text(dict(resolution(25, 0.01)), "x") == resolution_text(resolution(25, 0.01), "x")
