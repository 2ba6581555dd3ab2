"""Intervals, paired intervals, sample sizes and gates on evidence, checked against reference
computations (scipy's binomial intervals and tests) and against simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest

from evalharness.report.commands.gate import evaluate, parse_rule
from evalharness.stats.intervals import (
    bootstrap_p,
    images_needed_paired,
    paired_difference,
    percentile_interval,
    resample_weights,
    wilson,
)
from evalharness.stats.paired import mcnemar_exact, verdict
from evalharness.tasks.imagenet.definition import TopKScorer


@pytest.mark.parametrize("k,n", [(0, 5), (3, 5), (5, 5), (37, 50), (1, 1000), (740, 1000), (49_990, 50_000)])
def test_wilson_equals_scipy(k, n):
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson(k, n) == pytest.approx([ci.low, ci.high], abs=1e-12)


def test_top1_of_074_on_50_images_is_roughly_060_to_085():
    scorer = TopKScorer(2)
    for i in range(50):
        scorer.add({"topk": [i < 37 and 7 or 1, 7], "label_index": 7})
    metrics = scorer.result()
    assert metrics["top1"] == 0.74 and metrics["intervals"]["method"] == "wilson"
    low, high = metrics["intervals"]["top1"]
    assert 0.59 < low < 0.61 and 0.84 < high < 0.86
    assert metrics["intervals"]["top2"] == wilson(50, 50)


def test_paired_interval_is_antisymmetric_and_contains_the_change():
    low, high = paired_difference(40, 3, 7, 10)
    assert low < 4 / 60 < high
    assert paired_difference(40, 7, 3, 10) == pytest.approx([-high, -low], abs=1e-12)
    assert paired_difference(45, 0, 0, 5)[0] < 0 < paired_difference(45, 0, 0, 5)[1]


def test_paired_interval_covers_95_percent_in_simulation():
    """Newcombe's interval at n=200, true Δ = +0.03 with 10 % discordant pairs."""
    rng = np.random.default_rng(1)
    probs = [0.70, 0.035, 0.065, 0.20]  # both right, A only, B only, neither
    tables = rng.multinomial(200, probs, size=2000)
    true = probs[2] - probs[1]
    covered = [low <= true <= high for low, high in (paired_difference(*t) for t in tables)]
    assert 0.93 <= np.mean(covered) <= 0.975


def test_images_needed_gives_80_percent_power_in_simulation():
    """At the computed size, McNemar's exact test at 0.05 rejects ~80 % of simulated experiments."""
    n = images_needed_paired(200, 20, 0.04)  # 10 % discordant, Δ = +0.04
    rng = np.random.default_rng(2)
    tables = rng.multinomial(n, [0.03, 0.07, 0.90], size=1000)  # A only, B only, concordant
    power = np.mean([mcnemar_exact(int(a), int(b)) < 0.05 for a, b, _ in tables])
    assert 0.72 <= power <= 0.88, (n, power)
    assert images_needed_paired(50, 0, 0.0) is None


def test_mcnemar_matches_scipy_and_verdict_tells_small_from_equivalent():
    assert mcnemar_exact(1, 6) == pytest.approx(binomtest(1, 7, 0.5).pvalue, rel=1e-12)
    base = {"mcnemar_p": 1.0, "regressions": 0, "improvements": 1, "discordant": 1}
    small = {**base, "delta_top1": 0.02, "delta_top1_interval": paired_difference(36, 0, 1, 13)}
    small["images_needed"] = images_needed_paired(50, 1, 0.02)
    line = verdict(small, 0.05)
    assert line.startswith("B is not significantly different from A (McNemar p=1.00, 1 discordant")
    assert "no difference detected at this size" in line and f"~{small['images_needed']} paired" in line
    big = {**base, "delta_top1": 0.0001, "delta_top1_interval": paired_difference(7000, 1, 2, 2997)}
    assert verdict(big, 0.05).endswith("equivalent within ±0.01")


def test_bootstrap_helpers():
    w = resample_weights(7, 50, seed=3)
    assert w.shape == (50, 7) and (w.sum(axis=1) == 7).all()
    assert (resample_weights(7, 50, seed=3) == w).all() and not (resample_weights(7, 50, seed=4) == w).all()
    assert percentile_interval(np.arange(101.0)) == pytest.approx([2.5, 97.5])
    assert bootstrap_p(np.array([0.1, 0.2, 0.3, -0.1])) == 0.5
    assert bootstrap_p(np.zeros(10)) == 1.0 and bootstrap_p(np.array([0.0, 0.0, 1.0, 1.0])) == 0.5
    assert bootstrap_p(np.array([0.0] + [1.0] * 99)) == pytest.approx(0.01)


def _doc(low: float, high: float, delta: float, p: float) -> dict:
    """A minimal diff document of two ImageNet runs on 50 images (top-1 0.76 -> 0.74)."""
    return {
        "task": "imagenet",
        "metrics": [{"name": "top1", "a": 0.76, "b": 0.76 + delta, "delta": delta, "delta_pct": None}],
        "latency": [],
        "model": [],
        "classification": {
            "mcnemar_p": p, "discordant": 1, "delta_top1": delta, "delta_top1_interval": [low, high],
        },
    }  # fmt: skip


def test_gate_on_evidence_does_not_fail_one_image_of_noise():
    """One image lost of 50 (Δ -0.02, p = 1): the point-estimate gate fails, the evidence gates pass."""
    doc = _doc(-0.105, 0.052, -0.02, 1.0)
    rules = ["top1<-0.005", "top1_ci_high<-0.005", "mcnemar_p<0.05 and top1<0"]
    results = evaluate([parse_rule(r) for r in rules], doc)
    assert [r["failed"] for r in results] == [True, False, False]
    assert "mcnemar_p = 1 and top1" in results[2]["detail"]
    strong = _doc(-0.09, -0.03, -0.06, 0.001)  # a real drop: every gate fails
    assert all(r["failed"] for r in evaluate([parse_rule(r) for r in rules], strong))


def test_compound_rule_keeps_the_first_condition_fields():
    rule = parse_rule("mcnemar_p<0.05 AND top1<0")
    assert (rule.name, rule.op, rule.value, rule.relative) == ("mcnemar_p", "<", 0.05, False)
    assert rule.also[0].name == "top1"


def test_speedup_interval_marks_three_percent_as_noise_at_small_sizes():
    from evalharness.stats.speedup import speedup_intervals

    rng = np.random.default_rng(5)
    few = speedup_intervals(rng.normal(10.0, 2.0, 20), rng.normal(9.7, 2.0, 20))  # sd 20 %
    many = speedup_intervals(rng.normal(10.0, 1.0, 20_000), rng.normal(9.7, 1.0, 20_000))
    assert few["stats"]["mean"]["noise"] and few["stats"]["p50"]["noise"]
    low, high = many["stats"]["mean"]["interval"]
    assert not many["stats"]["mean"]["noise"] and 1.02 < low < 10 / 9.7 < high < 1.04
    assert speedup_intervals(np.array([1.0]), np.array([1.0, 2.0])) == {}


def test_mean_error_interval_equals_scipy_normal_interval():
    from scipy.stats import norm

    from evalharness.tasks.inference_diff.definition import mean_interval

    values = np.array([1e-4, 3e-4, 2e-4, 5e-4, 4e-4])
    expected = norm.interval(0.95, loc=values.mean(), scale=values.std(ddof=1) / np.sqrt(values.size))
    assert mean_interval(values) == pytest.approx(list(expected), rel=1e-12)
    assert mean_interval(values[:1]) is None


def test_auto_backend_is_faster_coco_eval_where_installed(monkeypatch):
    import importlib.util

    from evalharness.stats.coco_eval import resolved_backend

    assert resolved_backend("pycocotools") == "pycocotools"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert resolved_backend("auto") == "faster_coco_eval"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert resolved_backend("auto") == "pycocotools"
