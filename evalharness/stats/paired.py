"""Image-by-image comparison of two classification runs and McNemar's exact test.

Two runs on the same images are paired samples: an accuracy delta alone cannot say whether B differs
from A beyond chance, but the discordant pairs (right in one run, wrong in the other) can. The exact
McNemar test is a two-sided binomial test with p = 1/2 on those pairs. Its tail is summed from the
one exact binomial coefficient at the observed count downwards, in floating point scaled to stay
normal, and stops where the terms no longer change the sum: time grows with the square root of the
discordant pairs (25,000 of 50,000 images in milliseconds), not with big-integer sums over all of them,
and the value equals the exact rational one to 1e-12 (subnormal p-values included).
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

from evalharness.stats.intervals import CONFIDENCE, POWER, images_needed_paired, paired_difference
from evalharness.stats.power import resolution, resolution_text
from evalharness.stats.topk_changes import topk_changes

TOP_OVERLAP = 5  # top-5 overlap: the usual second ImageNet figure


class PerClassChanges(TypedDict):
    """Per true label, the paired change of top-1 between two runs
    (:func:`evalharness.stats.classification_analysis.per_class_changes`)."""

    correction: str  # "holm"
    alpha: float
    classes_tested: int
    changed: list[dict[str, Any]]
    significant: list[dict[str, Any]]


class _ClassificationDiffKeys(TypedDict):
    paired_images: int
    only_in_a: int
    only_in_b: int
    top1_agreement: float | None
    identical_images: int  # ranked outputs and scores the same numbers in both runs (bit for bit)
    top5_overlap: float | None
    regressions: int  # A right -> B wrong
    improvements: int  # A wrong -> B right
    changed_both_wrong: int
    discordant: int
    mcnemar_p: float
    delta_top1: float | None
    delta_top1_interval: list[float] | None  # Newcombe's paired interval of delta_top1
    images_needed: int | None
    top1_changes: list[dict[str, Any]]
    top5_changes: list[dict[str, Any]]


class ClassificationDiff(_ClassificationDiffKeys, total=False):
    """Two classification runs paired image by image (:func:`classification_diff`); ``report diff``
    adds the per-class changes and the changed confusions
    (:mod:`evalharness.stats.classification_analysis`)."""

    per_class: PerClassChanges
    confusion_changes: list[dict[str, Any]]


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (A right/B wrong, B right/A wrong):
    2 * P(X <= min) for X ~ Binomial(a_only + b_only, 1/2), capped at 1."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    # C(n, k) / 2**n as mantissa * 2**exponent: the mantissa in [0.5, 1) keeps every term normal
    # however far 2**-n would underflow; the one scaling back (ldexp) rounds once.
    top = math.comb(n, k)
    bits = top.bit_length()
    term = (top >> max(bits - 64, 0)) / 2.0 ** min(bits, 64)
    total = term
    # terms fall towards i = 0 (k <= n/2): term(i - 1) = term(i) * i / (n - i + 1)
    while k > 0 and term >= total * 1e-17:
        term *= k / (n - k + 1)
        k -= 1
        total += term
    return min(1.0, math.ldexp(2.0 * total, bits - n))


def format_p(p: float) -> str:
    return f"{p:.2f}" if p >= 0.01 else f"{p:.2g}"


def _correct(pred: dict[str, Any]) -> bool:
    return pred.get("rank") == 0


def pair_by_id(
    preds_a: list[dict[str, Any]], preds_b: list[dict[str, Any]]
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], int, int]:
    """(A, B) prediction pairs for the images both runs scored, in id order, + counts only in A / B."""
    by_a = {p["id"]: p for p in preds_a}
    by_b = {p["id"]: p for p in preds_b}
    common = sorted(set(by_a) & set(by_b))
    return [(by_a[i], by_b[i]) for i in common], len(by_a) - len(common), len(by_b) - len(common)


def classification_diff(
    preds_a: list[dict[str, Any]], preds_b: list[dict[str, Any]], same_label_file: bool
) -> ClassificationDiff:
    """Top-1 changes, agreement, top-5 overlap and McNemar on paired correctness.

    Predictions are compared by output index when both runs used the same label file, else by label
    text (a 1000-class and a 1001-class model index the same class differently).
    """
    pairs, only_a, only_b = pair_by_id(preds_a, preds_b)
    key = "topk" if same_label_file else "topk_labels"
    changes, agree, overlap, both_right, identical = [], 0, 0.0, 0, 0
    counts = {"regression": 0, "improvement": 0, "changed": 0}
    for a, b in pairs:
        identical += a[key] == b[key] and a.get("scores") == b.get("scores")
        same_top1 = a[key][:1] == b[key][:1]
        agree += same_top1
        both_right += _correct(a) and _correct(b)
        k = min(TOP_OVERLAP, len(a[key]), len(b[key]))
        overlap += len(set(a[key][:k]) & set(b[key][:k])) / k if k else 0.0
        if same_top1 and _correct(a) == _correct(b):
            continue
        kind = _change_kind(_correct(a), _correct(b))
        counts[kind] += 1
        changes.append(
            {
                "id": a["id"],
                "kind": kind,
                "label": a.get("label"),
                "a_top1": _top1_label(a),
                "b_top1": _top1_label(b),
                "a_rank": a.get("rank"),
                "b_rank": b.get("rank"),
            }
        )
    n = len(pairs)
    p = mcnemar_exact(counts["regression"], counts["improvement"])
    a_only, b_only = counts["regression"], counts["improvement"]
    neither = n - both_right - a_only - b_only
    change = (b_only - a_only) / n if n else None
    return {
        "paired_images": n,
        "only_in_a": only_a,
        "only_in_b": only_b,
        "top1_agreement": agree / n if n else None,
        # images whose ranked outputs and scores are the same numbers in both runs (bit for bit)
        "identical_images": identical,
        "top5_overlap": overlap / n if n else None,
        "regressions": counts["regression"],
        "improvements": counts["improvement"],
        "changed_both_wrong": counts["changed"],
        "discordant": counts["regression"] + counts["improvement"],
        "mcnemar_p": p,
        "delta_top1": change,
        "delta_top1_interval": paired_difference(both_right, a_only, b_only, neither),
        "images_needed": images_needed_paired(n, a_only + b_only, change) if change is not None else None,
        "top1_changes": changes,
        "top5_changes": topk_changes(pairs, key),
    }


def _change_kind(a_right: bool, b_right: bool) -> str:
    if a_right and not b_right:
        return "regression"
    if b_right and not a_right:
        return "improvement"
    return "changed"


def _top1_label(pred: dict[str, Any]) -> str | None:
    labels = pred.get("topk_labels") or []
    return labels[0] if labels else None


def verdict(diff: dict[str, Any], alpha: float, margin: float = 0.01) -> str:
    """One line a reader can act on: is B's top-1 different from A's beyond chance, and if not, is
    that because they are equivalent (the change's interval lies within ±margin) or because there are
    too few images to tell (then: how many would detect a change of the observed size)?"""
    p, n = diff["mcnemar_p"], diff["discordant"]
    detail = f"McNemar p={format_p(p)}, {n} discordant: {diff['regressions']} A right->B wrong, "
    detail += f"{diff['improvements']} A wrong->B right"
    interval = diff.get("delta_top1_interval")  # diffs made before the paired interval lack it
    change = ""
    if interval is not None:
        change = f"; Δtop-1 {diff['delta_top1']:+.4f}, {CONFIDENCE:.0%} interval "
        change += f"[{interval[0]:+.4f}, {interval[1]:+.4f}]"
    paired = diff.get("paired_images") or 0
    if paired and diff.get("identical_images") == paired:  # diffs made before it was counted lack it
        return f"B is identical to A: the same top-K and scores, bit for bit, on all {paired} images"
    if n == 0 or p >= alpha:
        head = f"B is not significantly different from A ({detail}; alpha={alpha:g}){change}"
        if interval is None:
            return head
        if -margin <= interval[0] and interval[1] <= margin:
            return f"{head}: equivalent within ±{margin:g}"
        needed = diff.get("images_needed")
        size = (
            f"~{needed} paired images would detect a change of {diff['delta_top1']:+.4f} "
            f"with {POWER:.0%} power"
            if needed
            else "no change observed"
        )
        text = f"{head}: no difference detected at this size, not shown equivalent within ±{margin:g}; {size}"
        power = resolution(diff["paired_images"], margin) if diff.get("paired_images") else None
        if power and not power["resolves"]:  # the margin is below what these images can tell
            text += f"; {resolution_text(power, f'the margin ±{margin:g}')}"
        return text
    direction = "worse" if diff["regressions"] > diff["improvements"] else "better"
    return f"B is significantly {direction} than A on top-1 ({detail}; alpha={alpha:g}){change}"


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm's step-down adjustment (family-wise error rate, no independence assumed) of the tests
    made together, e.g. one per class: adjusted p_(i) = max over j <= i of min(1, (m − j + 1) p_(j)),
    m = the number of p-values given (None entries are no test and are left None)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
