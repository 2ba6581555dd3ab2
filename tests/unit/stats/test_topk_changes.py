"""The images whose top-5 list changed, with their largest score gap (pure: records in, rows out)."""

from __future__ import annotations

import pytest

from evalharness.stats.paired import classification_diff
from evalharness.stats.topk_changes import score_gap, topk_changes


def _rec(sid: str, topk: list[int], scores: list[float]) -> dict:
    return {"id": sid, "topk": topk, "scores": scores, "topk_labels": [f"c{i}" for i in topk],
            "label_index": topk[0], "rank": 0, "label": f"c{topk[0]}"}  # fmt: skip


def test_equal_lists_are_not_listed_even_with_moved_scores():
    a = _rec("x", [1, 2, 3, 4, 5, 6], [0.5, 0.2, 0.1, 0.05, 0.04, 0.01])
    b = _rec("x", [1, 2, 3, 4, 5, 7], [0.4, 0.3, 0.1, 0.05, 0.04, 0.01])
    assert topk_changes([(a, b)], "topk") == []


def test_a_reordered_tail_is_listed_with_its_gap_and_class():
    a = _rec("x", [1, 2, 3, 4, 5, 6], [0.5, 0.2, 0.10, 0.09, 0.04, 0.01])
    b = _rec("x", [1, 2, 4, 3, 5, 6], [0.5, 0.2, 0.12, 0.08, 0.04, 0.01])
    (row,) = topk_changes([(a, b)], "topk")
    assert row["a_top5"] == [1, 2, 3, 4, 5] and row["b_top5"] == [1, 2, 4, 3, 5]
    assert row["max_score_gap"] == pytest.approx(0.03) and row["gap_class"] == 4 and row["gap_label"] == "c4"


def test_sorted_by_gap_and_a_class_only_on_one_side_has_no_gap():
    a1, b1 = (
        _rec("a", [1, 2, 3, 4, 5], [0.5, 0.2, 0.1, 0.1, 0.1]),
        _rec("a", [9, 2, 3, 4, 5], [0.9, 0.2, 0.1, 0.1, 0.1]),
    )
    a2, b2 = (
        _rec("b", [1, 2, 3, 4, 5], [0.5, 0.2, 0.1, 0.1, 0.1]),
        _rec("b", [2, 1, 3, 4, 5], [0.4, 0.3, 0.1, 0.1, 0.1]),
    )
    rows = topk_changes([(a1, b1), (a2, b2)], "topk")
    assert [r["id"] for r in rows] == ["b", "a"]  # b: gap 0.2 on class 1; a: only shared classes count
    assert rows[1]["max_score_gap"] == 0.0
    assert score_gap({"topk": [1], "scores": [0.5]}, {"topk": [2], "scores": [0.5]}, "topk") == (None, None)


def test_report_diff_carries_the_list():
    a = [_rec("x", [1, 2, 3, 4, 5], [0.5, 0.2, 0.1, 0.09, 0.01])]
    b = [_rec("x", [1, 2, 3, 5, 4], [0.5, 0.2, 0.1, 0.08, 0.02])]
    c = classification_diff(a, b, True)
    assert [r["id"] for r in c["top5_changes"]] == ["x"] and c["top1_agreement"] == 1.0
