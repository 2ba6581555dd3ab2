"""The compare table's words: taken from report diff's verdict line, never decided again."""

from __future__ import annotations

import pytest

from evalharness.run.compare_view import short_name, verdict_word
from evalharness.stats.speedup import paired_block_speedup


@pytest.mark.parametrize(
    ("sentence", "change", "word"),
    [
        ("B is significantly worse than A on top-1 (McNemar p=0.01 ...)", -0.1, "worse"),
        ("B is significantly better than A on top-1 (McNemar p=0.01 ...)", 0.1, "better"),
        ("B is not significantly different from A (...): equivalent within ±0.01", 0.0, "equivalent"),
        ("B is not significantly different from A (...): no difference detected at this size, not shown "
         "equivalent within ±0.01; ~40 paired images would detect ...", 0.02, "no difference detected"),
        ("B's AP differs from A's by -0.0300 (...) (significant: paired bootstrap ΔAP ...)", -0.03, "worse"),
        ("B detects the same boxes as A (AP 0.3000, mean IoU 1.0000)", 0.0, "same"),
        ("B is identical to A: the same top-K and scores, bit for bit, on all 5 images", 0.0, "same"),
        ("something else", None, "—"),
    ],
)  # fmt: skip
def test_verdict_word(sentence, change, word):
    assert verdict_word(sentence, change) == word


def test_short_names():
    assert short_name("gpu") == "gpu"
    assert short_name("/data/models/efficientnet_lite0_int8.tflite") == "efficientnet_lite0_int8"


def test_speedup_per_load_averages_rounds_and_drops_a_trailing_part():
    base, cand = [2.0, 2.0, 4.0, 4.0, 9.0], [1.0, 1.0, 1.0, 1.0, 1.0]
    found = paired_block_speedup(base, cand, unit=2)
    assert found["units"] == 2 and found["speedup"] == pytest.approx((2.0 * 4.0) ** 0.5)
