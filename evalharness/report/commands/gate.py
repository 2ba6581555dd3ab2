"""``--fail-if`` rules: turn a diff of run A (baseline) and run B (candidate) into a CI verdict.

Grammar (one rule per ``--fail-if``; spaces allowed; metric names case-insensitive)::

    RULE   := COND [and COND ...]
    COND   := METRIC OP NUMBER [%]
    OP     := <  |  <=  |  >  |  >=
    NUMBER := [+|-] digits [. digits] [e[+|-]digits]

A rule names the condition that FAILS the gate. For a per-run metric it tests the change from A to
B: ``top1<-0.005`` fails when top1(B) - top1(A) < -0.005 (an absolute drop of more than half a
point); with ``%`` the change is relative to A: ``latency_p50>+10%`` fails when
(p50(B) - p50(A)) / p50(A) > 10 %. Per-run metrics: ``top1``..``top10`` (classification), the COCO
stats ``AP``, ``AP50``, ``AP75``, ``APs``, ``APm``, ``APl``, ``AR1``, ``AR10``, ``AR100``, ``ARs``,
``ARm``, ``ARl`` and ``tflite_AP``, a seg model's ``segm_AP`` ... ``segm_ARl`` and a pose model's
``keypoints_AP`` ... ``keypoints_ARl``; ``latency_mean|p50|p90|p99|min|max|init|first_inference`` (ms);
``size_bytes``, ``coverage`` (fraction of ops delegated), ``ops_delegated``, ``partitions``; for
other tasks every numeric field of ``metrics`` by dotted name (``test_latency_us.mean``).

A pairwise quantity (a property of the pair, not of one run) is tested as is and takes no ``%``:
``mcnemar_p``, ``discordant``, ``regressions`` (A right, B wrong), ``improvements``,
``changed_both_wrong``, ``top1_agreement``, ``top5_overlap`` (classification); ``unmatched``,
``images_changed``, ``mean_iou``, ``mean_abs_score_delta`` (detection); ``paired_images``,
``only_in_a``, ``only_in_b`` (both). E.g. ``regressions>0`` fails on any image B loses.

**Gates on evidence.** A point estimate moves with the sample: on 50 images one image is 2 points
of top-1, so ``top1<-0.005`` fails a candidate whose only change is one image (McNemar p = 1). The
diff also offers the ends of the intervals and the p-values as pairwise quantities:
``top1_ci_low``/``top1_ci_high`` (paired 95 % interval of Δtop-1), ``delta_top1``,
``images_needed``; ``AP_ci_low``/``AP_ci_high``/``AP_p`` (and AP50, AP75: paired bootstrap of ΔAP,
detection; ``segm_AP_ci_high``, ``keypoints_AP_p``, ... of a seg / pose pair's masks and keypoints,
with ``segm_unmatched``, ``segm_images_changed``, ``segm_mean_iou`` and their ``keypoints_`` twins of
its mask / OKS matching); ``speedup_mean|p50_ci_low|ci_high`` (bootstrap of the speed-up A/B
over each run's own invokes:
the runs were measured one after the other, so it leaves out the machine's drift between them and
is never printed; kept for the rules that name it, ``compare`` measures an interval). Conditions joined
by ``and`` fail only together: ``top1_ci_high<-0.005`` fails only when the whole interval lies below
-0.5 point (B is worse, and by more than half a point); ``mcnemar_p<0.05 and top1<0`` fails only a
significant drop; ``speedup_p50_ci_high<1`` only a slowdown beyond noise.

An unknown name, a metric either run lacks or ``%`` on a pairwise quantity is a usage error (exit 2):
a gate that silently tests nothing is worse than none.
"""

from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Any

from evalharness.core.documents import DiffDocument
from evalharness.core.numbers import delta, fmt, fmt_pct, relative_pct
from evalharness.report.commands.diff import quantities
from evalharness.report.runs import ReportError, definition_of
from evalharness.stats.power import resolution, resolution_text

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_RULE = re.compile(
    r"^\s*(?P<name>[A-Za-z_][A-Za-z0-9_.]*)\s*(?P<op><=|>=|<|>)\s*"
    r"(?P<value>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<pct>%?)\s*$"
)


_AND = re.compile(r"\s+and\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Rule:
    text: str
    name: str
    op: str
    value: float
    relative: bool
    also: tuple[Rule, ...] = ()  # further conditions joined by "and": the rule fails when all do


def parse_rule(text: str) -> Rule:
    first, *rest = [_condition(text, part) for part in _AND.split(text.strip())]
    return Rule(text.strip(), first.name, first.op, first.value, first.relative, tuple(rest))


def _condition(text: str, part: str) -> Rule:
    m = _RULE.match(part)
    if not m:
        raise ReportError(
            f"--fail-if {text!r}: expected METRIC OP NUMBER[%] [and ...], e.g. 'top1<-0.005', "
            "'latency_p50>+10%' or 'mcnemar_p<0.05 and top1<0'"
        )
    return Rule(part.strip(), m["name"], m["op"], float(m["value"]), m["pct"] == "%")


def evaluate(rules: list[Rule], doc: DiffDocument) -> list[dict[str, Any]]:
    """One result per rule: the tested value, whether it failed, and a line saying why."""
    rows, pairwise = quantities(doc)
    comparison = definition_of(doc).comparison
    proportion = comparison.proportion if comparison else None  # a per-image proportion, paired
    results = []
    for rule in rules:
        parts = [
            _resolvable(_evaluate(c, rows, pairwise), c, proportion, pairwise) for c in (rule, *rule.also)
        ]
        first = parts[0]
        results.append(
            {
                **first,
                "rule": rule.text,
                "failed": all(p["failed"] for p in parts),
                "detail": " and ".join(p["detail"] for p in parts),
            }
        )
    return results


def _resolvable(
    result: dict[str, Any], rule: Rule, proportion: str | None, pairwise: dict[str, Any]
) -> dict[str, Any]:
    """A threshold on the change of a per-image proportion (top-1) that the paired images cannot
    tell from noise is said beside the result (stats/power.py): the gate still tests the point
    estimate as written, but its reader learns that it decides on chance."""
    n = pairwise.get("paired_images")
    if result["metric"] != proportion or rule.relative or not n:
        return result
    r = resolution(int(n), abs(rule.value))
    if r["resolves"]:
        return result
    text = resolution_text(r, f"a change of {abs(rule.value):g}")
    return {**result, "detail": f"{result['detail']}; {text}", "resolution": r}


def _lookup(name: str, table: dict[str, Any]) -> Any:
    exact = {k.lower(): k for k in table}
    return exact.get(name.lower())


def _evaluate(rule: Rule, rows: dict[str, Any], pairwise: dict[str, Any]) -> dict[str, Any]:
    key = _lookup(rule.name, rows)
    if key is not None:
        row = rows[key]
        if row["a"] is None or row["b"] is None:
            raise ReportError(
                f"--fail-if {rule.text!r}: {key} is missing in run {'A' if row['a'] is None else 'B'}"
            )
        tested = relative_pct(row["a"], row["b"]) if rule.relative else delta(row["a"], row["b"])
        shown = fmt_pct(tested) if rule.relative else fmt(tested, "+.6g")
        detail = f"{key} {fmt(row['a'], '.6g')} -> {fmt(row['b'], '.6g')} (change {shown})"
    else:
        key = _lookup(rule.name, pairwise)
        if key is None:
            names = sorted(set(rows) | set(pairwise), key=str.lower)
            raise ReportError(
                f"--fail-if {rule.text!r}: unknown metric {rule.name!r}; known: {', '.join(names)}"
            )
        if rule.relative:
            raise ReportError(
                f"--fail-if {rule.text!r}: {key} is a property of the pair; give a value, not %"
            )
        tested = pairwise[key]
        detail = f"{key} = {fmt(tested, '.6g')}"
    failed = tested is not None and not math.isnan(tested) and OPS[rule.op](tested, rule.value)
    return {"rule": rule.text, "metric": key, "tested": tested, "failed": failed, "detail": detail}
