"""The bootstrap's shortcuts against the plain computations they replace, exactly: the recall
thresholds reached (a table, or arithmetic, against a binary search) and the running totals at the
positions the AP reads (counted pairs against a running sum over every detection)."""

from __future__ import annotations

import numpy as np

from evalharness.stats.coco_bootstrap import _RunningTotals, _threshold_plan
from evalharness.stats.coco_recall_reads import ReachedTable, thresholds_reached

REC_THRS = np.linspace(0.0, 1.00, int(np.round((1.00 - 0.0) / 0.01)) + 1)  # pycocotools' recThrs


def test_thresholds_reached_is_the_binary_search():
    rng = np.random.default_rng(0)
    ratios = rng.integers(0, 300, 50_000) / rng.integers(1, 300, 50_000)  # tp / ground truth, ties at k/100
    rc = np.concatenate([ratios, REC_THRS, np.arange(101) / 100, [np.nan, np.inf, 0.0, 1.0, 1.5]])
    assert np.array_equal(thresholds_reached(REC_THRS, rc), np.searchsorted(REC_THRS, rc, "right"))
    other = np.linspace(0.0, 1.0, 11)  # other thresholds: the search itself
    assert np.array_equal(thresholds_reached(other, rc), np.searchsorted(other, rc, "right"))


def test_running_totals_equal_a_running_sum_over_every_detection():
    rng = np.random.default_rng(1)
    n_img, n_det, n_thr, n_cat = 12, 300, 4, 3
    img = rng.integers(0, n_img, n_det)
    cat = np.sort(rng.integers(0, n_cat, n_det))
    copy = np.where(rng.random(n_det) < 0.3, rng.integers(0, 3, n_det), -1)  # tiled copies of tie groups
    matched, ignored = rng.random((n_thr, n_det)) < 0.4, rng.random((n_thr, n_det)) < 0.05
    plan = [_threshold_plan(cat, matched[t], ignored[t], n_cat) for t in range(n_thr)]
    running = _RunningTotals(plan, img, copy, n_img)
    by_image = rng.multinomial(n_img, np.full(n_img, 1 / n_img), 7).T.astype(np.float64)  # (N, rows)
    every = running.weights_of(np.arange(n_det), by_image)
    total = np.zeros((n_det + 1, by_image.shape[1]))
    np.cumsum(every, axis=0, out=total[1:])
    totals = running.at_needed(by_image)
    for t, tp in enumerate(plan):
        after, start = running.lookups[t]
        assert np.array_equal(totals[after], total[tp.pos + 1])
        assert np.array_equal(totals[start], total[tp.start])
    tiled = copy >= 0
    assert np.array_equal(every[tiled], copy[tiled, None] < by_image[img[tiled]])


def test_the_reached_table_is_the_search_of_each_drawn_ratio(monkeypatch):
    import evalharness.stats.coco_recall_reads as reads

    rng = np.random.default_rng(2)
    npig = rng.integers(0, 400, (5, 60)).astype(np.float64)  # (K, rows), zeros: no truth drawn
    cat = np.sort(rng.integers(0, 5, 300))
    tp = np.floor(rng.random((300, 60)) * (npig[cat] + 1))  # whole, never above its npig
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.searchsorted(REC_THRS, tp / npig[cat], "right")
    assert np.array_equal(ReachedTable(npig, REC_THRS).reader(npig)(cat, tp), want)
    monkeypatch.setattr(reads, "_MAX_TABLE", 10)  # too large a table: the arithmetic instead
    with np.errstate(divide="ignore", invalid="ignore"):
        assert np.array_equal(ReachedTable(npig, REC_THRS).reader(npig)(cat, tp), want)
