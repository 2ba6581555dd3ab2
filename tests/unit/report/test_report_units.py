"""Report building blocks without runs: McNemar against scipy, the gate grammar, box matching."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest
from scipy.stats import binomtest

from evalharness.core.numbers import relative_pct, stable_json
from evalharness.report.commands.gate import parse_rule
from evalharness.report.runs import ReportError, field_differences
from evalharness.stats.boxes import iou_xywh, match_detections, per_class_deltas
from evalharness.stats.paired import classification_diff, mcnemar_exact, verdict


@pytest.mark.parametrize(
    "a_only,b_only",
    [
        (0, 0),
        (1, 0),
        (0, 1),
        (2, 2),
        (3, 10),
        (12, 2),
        (25, 24),
        (100, 130),
        (0, 40),
        (731, 802),
        (4100, 4300),
        (12000, 12500),
        (24000, 26000),
        (25000, 25000),
    ],
)
def test_mcnemar_exact_equals_scipy_binomtest(a_only, b_only):
    n = a_only + b_only
    expected = 1.0 if n == 0 else binomtest(a_only, n, 0.5, alternative="two-sided").pvalue
    assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, rel=1e-12, abs=0)


@pytest.mark.parametrize("a_only,b_only", [(160, 1665), (315, 2085), (0, 1100), (3, 2000), (900, 1000)])
def test_mcnemar_exact_equals_the_exact_rational_tail_down_to_subnormal_p(a_only, b_only):
    """scipy's own figure loses digits once p is subnormal; the exact rational sum does not."""
    n = a_only + b_only
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    expected = float(min(Fraction(1), Fraction(2 * tail, 2**n)))
    assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, rel=1e-12, abs=0)


@pytest.mark.parametrize(
    "text,name,op,value,relative",
    [
        ("top1<-0.005", "top1", "<", -0.005, False),
        ("latency_p50>+10%", "latency_p50", ">", 10.0, True),
        (" AP50 <= -1e-3 ", "AP50", "<=", -0.001, False),
        ("regressions>=1", "regressions", ">=", 1.0, False),
        ("size_bytes>.5%", "size_bytes", ">", 0.5, True),
    ],
)
def test_rule_grammar(text, name, op, value, relative):
    rule = parse_rule(text)
    assert (rule.name, rule.op, rule.value, rule.relative) == (name, op, value, relative)


@pytest.mark.parametrize("text", ["top1", "top1=0", "top1<<1", "<0.1", "top1<abc", "top1<1%%", "1top<0"])
def test_rule_grammar_rejects(text):
    with pytest.raises(ReportError, match="expected METRIC OP NUMBER"):
        parse_rule(text)


def test_relative_change_of_zero_baseline_is_infinite_not_an_error():
    assert relative_pct(0, 0) == 0.0 and relative_pct(0, 2) == float("inf") and relative_pct(4, 2) == -50.0
    assert '"x": "inf"' in stable_json({"x": float("inf")})


def test_stable_json_rounds_to_ten_significant_digits_and_sorts_keys():
    text = stable_json({"b": 0.1 + 0.2, "a": [1 / 3]})
    assert text.index('"a"') < text.index('"b"')
    assert "0.3333333333" in text and "0.3," not in text and '"b": 0.3\n' in text


def test_greedy_box_matching_by_class_and_iou():
    a = [[1, 0.9, 0, 0, 10, 10], [1, 0.8, 100, 100, 10, 10], [2, 0.7, 0, 0, 10, 10]]
    b = [[1, 0.5, 1, 0, 10, 10], [2, 0.6, 50, 50, 10, 10], [1, 0.4, 0, 0, 10, 10]]
    pairs, only_a, only_b = match_detections(a, b)
    # A's best box takes B's exact copy (IoU 1), not the first shifted one; class 2 does not match.
    assert [(p[0][1], p[1][1], p[2]) for p in pairs] == [(0.9, 0.4, 1.0)]
    assert (only_a, only_b) == (2, 2)
    assert iou_xywh([0, 0, 10, 10], [5, 0, 10, 10]) == pytest.approx(50 / 150)


def test_per_class_deltas_largest_change_first_and_skips_classes_scored_in_neither():
    a = {"1": {"name": "p", "AP": 0.5}, "2": {"name": "q", "AP": 0.1}, "3": {"name": "r", "AP": None}}
    b = {"1": {"name": "p", "AP": 0.45}, "2": {"name": "q", "AP": 0.3}, "3": {"name": "r", "AP": None}}
    assert [r["category_id"] for r in per_class_deltas(a, b)] == [2, 1]


def _pred(image: str, top: list[int], label: int) -> dict:
    rank = top.index(label) if label in top else None
    return {
        "id": image,
        "topk": top,
        "topk_labels": [f"c{i}" for i in top],
        "label_index": label,
        "rank": rank,
    }


def test_classification_diff_counts_discordant_pairs_and_changed_wrong_predictions():
    a = [_pred("x", [1, 2], 1), _pred("y", [3, 4], 5), _pred("z", [6, 7], 7), _pred("w", [8, 9], 8)]
    b = [_pred("x", [2, 1], 1), _pred("y", [4, 3], 5), _pred("z", [7, 6], 7), _pred("w", [8, 9], 8)]
    d = classification_diff(a, b, same_label_file=True)
    assert [(c["id"], c["kind"]) for c in d["top1_changes"]] == [
        ("x", "regression"),
        ("y", "changed"),
        ("z", "improvement"),
    ]
    assert (d["regressions"], d["improvements"], d["discordant"], d["top1_agreement"]) == (1, 1, 2, 0.25)
    assert d["mcnemar_p"] == 1.0
    expected = "B is not significantly different from A (McNemar p=1.00, 2 discordant"
    assert verdict(d, 0.05).startswith(expected)


def test_field_differences_name_each_differing_leaf():
    a = {"resize": "tflite_bilinear", "input": {"height": 224, "dtype": "uint8"}}
    b = {"resize": "pil_bilinear", "input": {"height": 224, "dtype": "float32"}}
    assert field_differences(a, b, ("input.dtype",)) == ["resize 'tflite_bilinear' vs 'pil_bilinear'"]


def test_write_json_streams_an_iterator_as_the_same_bytes(tmp_path):
    from evalharness.rundir.files import RunWriter

    rows = [{"a": i, "b": [0.1 * i, None]} for i in range(5)]
    writer = RunWriter(str(tmp_path))
    streamed = (tmp_path / writer.write_json("s.json", iter(rows))).read_text()
    whole = (tmp_path / writer.write_json("w.json", rows)).read_text()
    empty = (tmp_path / writer.write_json("e.json", iter([]))).read_text()
    writer.close()
    assert streamed == whole == json.dumps(rows, separators=(",", ":")) + "\n"
    assert empty == "[]\n"


def test_streamed_json_chunks_join_as_one_array_with_nan_nulled():
    from evalharness.rundir.files import _ROWS_PER_CHUNK, _json_array_chunks

    for count in (_ROWS_PER_CHUNK, _ROWS_PER_CHUNK + 1, 2 * _ROWS_PER_CHUNK + 3):  # chunk edges
        rows = [{"a": i, "b": [0.5 * i, float("nan") if i == count - 1 else i]} for i in range(count)]
        nulled = [{"a": i, "b": [0.5 * i, None if i == count - 1 else i]} for i in range(count)]
        assert "".join(_json_array_chunks(iter(rows))) == json.dumps(nulled, separators=(",", ":")) + "\n"


def test_bit_identical_answers_read_identical_not_undetected():
    a = [{**_pred(f"i{n}", [1, 2], 1), "scores": [0.75, 0.25]} for n in range(3)]
    d = classification_diff(a, [dict(p) for p in a], same_label_file=True)
    assert d["identical_images"] == 3
    assert verdict(d, 0.05) == "B is identical to A: the same top-K and scores, bit for bit, on all 3 images"
    b = [dict(p) for p in a]
    b[2] = {**b[2], "scores": [0.75, 0.2500001]}  # one score off by a hair: no longer identical
    d = classification_diff(a, b, same_label_file=True)
    assert d["identical_images"] == 2 and verdict(d, 0.05).startswith("B is not significantly different")
