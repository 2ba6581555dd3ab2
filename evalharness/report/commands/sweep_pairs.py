"""The sweep's image-by-image views: every pair of runs on the same images compared sample by sample
(an N×N agreement matrix with McNemar's p), the interval columns, the Pareto front of accuracy
against latency, and latency distributions drawn from the per-invoke samples.

A scatter of point estimates invites ranking noise: two delegates 0.02 apart on 50 images are one
image apart. The matrix says which pairs really differ (the task's own agreement and paired test,
:meth:`Comparison.agreement`), the interval bars say how far each point could move.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evalharness.core.numbers import fmt
from evalharness.core.tables import Section
from evalharness.report.runs import definition_of
from evalharness.report.views.latency_rows import samples
from evalharness.stats.paired import format_p
from evalharness.tasks.definition import comparer

INTERVAL_METRICS = ("top1", "top5", "AP", "AP50")


def add_interval_columns(
    jobs: list[dict[str, Any]], rows: list[dict[str, Any]], metrics: list[str]
) -> list[str]:
    """``<metric>_ci_low``/``_ci_high`` from each run's ``metrics.intervals`` (schema 2 runs)."""
    by_name = {j["run"]: j["doc"] for j in jobs}
    columns = []
    for metric in (m for m in metrics if m in INTERVAL_METRICS):
        for row in rows:
            run = by_name.get(row["run"])
            interval = run.document.metrics.intervals.get(metric) if run else None
            if isinstance(interval, list):
                row[f"{metric}_ci_low"], row[f"{metric}_ci_high"] = interval
        if any(f"{metric}_ci_low" in r for r in rows):
            columns += [f"{metric}_ci_low", f"{metric}_ci_high"]
    return columns


def _groups(jobs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Scored jobs by (task, images): only runs on the same images are compared."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for job in jobs:
        run = job["doc"]
        if run is None or run.status != "complete" or not run.task:
            continue
        groups.setdefault((run.task, run.provenance.dataset.manifest_sha256), []).append(job)
    return [g for g in groups.values() if len(g) > 1]


def agreement_sections(jobs: list[dict[str, Any]], label: Callable[[dict[str, Any]], str]) -> list[Section]:
    """One N×N table per group of runs on the same images: agreement, and McNemar p where the task
    has a paired test. ``label(job)``: the row/column name."""
    out = []
    for group in _groups(jobs):
        paired = comparer(definition_of(group[0]["doc"]))
        found = paired.agreements([j["doc"] for j in group]) if paired else {}
        if not found or any(v is None for v in found.values()):
            continue
        names = [label(j) for j in group]
        cells, kind = [], None
        for i, a in enumerate(group):
            row = [label(a)]
            for j in range(len(group)):
                pair = found.get((i, j))
                if pair is None:
                    row.append("—")
                    continue
                kind = pair["name"]
                text = fmt(pair["value"], ".3f")
                row.append(text if pair["p"] is None else f"{text} (p {format_p(pair['p'])})")
            cells.append(row)
        if kind is None:
            continue
        notes = [
            f"{kind} of every pair of runs on the same {group[0]['doc'].document.metrics.num_scored} "
            "images; in brackets McNemar's exact p on the paired correctness (p >= 0.05: the pair's "
            "accuracies are not distinguishable on these images)"
        ]
        out.append(Section(f"{kind.capitalize()} matrix", ["run", *names], cells, notes, key="agreement"))
    return out


def pareto_front(points: list[tuple[str, float, float]]) -> list[str]:
    """Labels of the points no other point beats on both latency (lower) and accuracy (higher)."""
    front = []
    for label, x, y in points:
        beaten = any(
            (ox <= x and oy >= y) and (ox < x or oy > y) for other, ox, oy in points if other != label
        )
        if not beaten:
            front.append(label)
    return front


def latency_samples(
    jobs: list[dict[str, Any]], label: Callable[[dict[str, Any]], str]
) -> list[tuple[str, list[float]]]:
    """(label, per-invoke latencies in ms) of every scored job that stored them."""
    out = []
    for job in jobs:
        run = job["doc"]
        if run is None or run.status not in ("complete", "partial") or not run.task:
            continue
        values = samples(run)
        if values.size:
            out.append((label(job), values.tolist()))
    return out
