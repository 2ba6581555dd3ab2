"""Calibration ranges: each tensor's range is the min/max over every calibration image, in any order
(ai-edge-quantizer's default moving average kept mostly the first image's range; pure, no model)."""

from __future__ import annotations

import itertools

import numpy as np

from evalharness.runtime.quantize import QUANTIZER_RULE, RANGE_RULE, calibrate_ranges, merge_ranges


def _qsv(lo, hi):
    return {"min": np.array([lo], np.float32), "max": np.array([hi], np.float32), "num_samples": np.array(1)}


# the output tensor's per-image logit range of EfficientNet-Lite0 on the first bundled photos
IMAGES = [{"out": _qsv(-2.65, 8.32)}, {"out": _qsv(-3.63, 11.40)}, {"out": _qsv(-4.35, 7.61)}]


class FakeQuantizer:
    """Calibrates one image at a time as the quantizer does: a sample here *is* its result."""

    def __init__(self):
        self.calls = []

    def calibrate(self, data, num_threads=1):
        (samples,) = data.values()
        self.calls.append(len(samples))
        if len(samples) != 1:  # the quantizer's own sequential update: a moving average
            return {"out": {"ema": True}}
        return samples[0]


def test_the_range_is_every_images_extremes_whatever_the_order():
    for order in itertools.permutations(IMAGES):
        merged = merge_ranges(list(order))
        assert merged is not None
        assert merged["out"]["min"][0] == np.float32(-4.35) and merged["out"]["max"][0] == np.float32(11.40)
        assert int(merged["out"]["num_samples"]) == 3


def test_per_channel_ranges_stay_per_channel_and_an_empty_entry_keeps_the_other():
    a = {"w": {"min": np.array([-1.0, -5.0]), "max": np.array([2.0, 1.0])}, "e": {}}
    b = {"w": {"min": np.array([-3.0, -1.0]), "max": np.array([1.0, 4.0])}, "e": {"min": -1.0, "max": 1.0}}
    merged = merge_ranges([a, b])
    assert merged is not None
    assert list(merged["w"]["min"]) == [-3.0, -5.0] and list(merged["w"]["max"]) == [2.0, 4.0]
    assert merged["e"] == {"min": -1.0, "max": 1.0}


def test_other_statistics_are_not_merged_here():
    assert merge_ranges([{"t": {"min": 0.0, "max": 1.0, "hessian": np.eye(2)}}]) is None
    uneven = [{"t": {"min": 0.0, "max": 1.0}}, {"t": {"min": 0.0, "max": 1.0, "num_samples": 1}}]
    assert merge_ranges(uneven) is None


def test_calibrate_ranges_calibrates_image_by_image_and_falls_back_to_the_quantizers_own():
    q = FakeQuantizer()
    merged, rule = calibrate_ranges(q, "serving_default", IMAGES)
    assert q.calls == [1, 1, 1] and merged["out"]["max"][0] == np.float32(11.40) and rule == RANGE_RULE
    q = FakeQuantizer()
    odd = [{"t": {"min": 0.0, "max": 1.0, "hessian": 1}}] * 2
    assert calibrate_ranges(q, "serving_default", odd) == ({"out": {"ema": True}}, QUANTIZER_RULE)
    assert q.calls == [1, 1, 2]
