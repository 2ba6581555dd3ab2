"""What every task's results look like, made from its declared metrics (:mod:`evalharness.tasks.metrics`)
alone: the ``results.txt`` lines, the headline figure, the numbers ``--fail-if`` and ``report diff``
name, the verdict sentence, the sweep and quantization-table columns.

A task's view (:mod:`evalharness.tasks.view`) may extend or replace a summary or a verdict where its
own story differs; nothing here knows a task by name, so a metric declared on a task shows up in
all of these without a change to ``report/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalharness.rundir.metrics_file import Metrics
from evalharness.rundir.reader import flatten
from evalharness.stats.intervals import interval_lines
from evalharness.tasks.definition import TaskDefinition, view_of
from evalharness.tasks.metrics import Metric, sweep_names, values


def headline(definition: TaskDefinition, metrics: Mapping[str, Any]) -> dict[str, float]:
    """Per-run metrics in display order, by the names ``--fail-if`` rules and diff rows use: the
    declared ones; a task that declares none shows every number of its result."""
    if definition.metrics:
        return values(definition.metrics, metrics)
    return {
        k: v for k, v in flatten(metrics).items() if isinstance(v, int | float) and not isinstance(v, bool)
    }


def _headlines(definition: TaskDefinition, metrics: Mapping[str, Any]) -> list[tuple[Metric, str]]:
    """The headline metrics the result holds, each with the member of it held, in declaration order
    (box AP, then a seg or pose model's mask or keypoint AP); none for a speed-only task."""
    if definition.abilities.latency_only:
        return []
    return [(m, p[0]) for m in definition.metrics if m.headline and (p := m.picked(metrics))]


def _lead(definition: TaskDefinition, metrics: Mapping[str, Any]) -> tuple[Metric, str] | None:
    """The headline metric that leads (the first the result holds); None: no headline declared."""
    held = _headlines(definition, metrics)
    return held[0] if held else None


def judged_metric(definition: TaskDefinition, metrics: Mapping[str, Any]) -> str | None:
    """The metric a comparison of such runs is judged by (``compare``'s and ``--chain``'s column):
    the last headline figure the result holds — a seg or pose model's mask or keypoint AP after its
    box AP, what the model is for and what ``report diff``'s verdict leads with —, else the first
    sweep column; None: neither."""
    held = _headlines(definition, metrics)
    if held:
        return held[-1][1]
    columns = sweep_metrics(definition)
    return columns[0] if columns else None


def headline_accuracy(
    definition: TaskDefinition, metrics: Metrics
) -> tuple[str, float, list[float] | None, str] | None:
    """The figure a run's summary leads with: (title, value, its interval or None, how that interval
    was made); None for a task without a headline metric (speed only, output errors)."""
    lead = _lead(definition, metrics.values)
    if lead is None:
        return None
    metric, name = lead
    intervals = metrics.intervals
    interval = intervals.get(name) if metric.interval or name in intervals else None
    how = _fill(metric.interval_method, intervals)
    return metric.text(metric.title, name), metric.number(metrics.values, name), interval, how


def beside_headline(
    definition: TaskDefinition, metrics: Metrics
) -> list[tuple[str, float, list[float] | None]]:
    """The other headline figures a result holds, shown after the lead one (a seg model's mask AP
    beside its box AP): (title, value, interval or None) each, in declaration order."""
    return [
        (
            metric.text(metric.title, name),
            metric.number(metrics.values, name),
            metrics.intervals.get(name) if metric.interval else None,
        )
        for metric, name in _headlines(definition, metrics.values)[1:]
    ]


def _fill(template: str, intervals: Mapping[str, Any]) -> str:
    """An interval template filled from ``metrics.intervals`` (a missing field reads ``None``)."""
    return template.format_map(_Missing(intervals)) if intervals or "{" not in template else ""


class _Missing(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "None"


def metric_lines(definition: TaskDefinition, result: Metrics) -> list[str]:
    """The generic ``results.txt`` lines of a result (:func:`evalharness.report.summary.results_lines`
    adds the task view's): a line per declared metric, the interval line of those that have one; a
    task that declares none, a line per number."""
    metrics = result.values
    if not definition.metrics:
        return [f"{k}: {v:g}" for k, v in headline(definition, metrics).items()]
    lines = [
        f"{m.text(m.label, name)}: {m.number(metrics, name) * m.scale:{m.format}}"
        for m in definition.metrics
        for name in m.members(metrics)
    ]
    intervals = result.intervals
    with_interval = [m for m in definition.metrics if m.interval]
    if with_interval:
        how = _fill(with_interval[0].interval_how, {**metrics, **intervals})
        shown = [(m.text(m.title, n), intervals.get(n)) for m in with_interval for n in m.picked(metrics)]
        lines += interval_lines(intervals, how, shown)
    return lines


def verdict(definition: TaskDefinition, diff: Mapping[str, Any]) -> str:
    """One line a reader can act on: the task view's own, else the headline metric's change by its
    better direction, else speed (no per-sample pairing)."""
    own = view_of(definition).verdict(diff)
    if own is not None:
        return own
    rows = {r["name"]: r for r in diff["metrics"]}
    lead = _lead(definition, {n: (r["a"] if r["a"] is not None else r["b"]) for n, r in rows.items()})
    speed = _speed(diff)
    if lead is None or rows[lead[1]]["delta"] is None:
        return speed
    metric, name = lead
    row = rows[name]
    better = row["delta"] > 0 if metric.higher_is_better else row["delta"] < 0
    change = "no change" if row["delta"] == 0 else ("better" if better else "worse")
    direction = "higher" if metric.higher_is_better else "lower"
    return (
        f"B's {metric.text(metric.title, name)} is {row['b']:.4g} vs A's {row['a']:.4g} "
        f"({row['delta']:+.4g}: {change}, {direction} is better); {speed}"
    )


def _speed(diff: Mapping[str, Any]) -> str:
    """Speed is the story where nothing is paired per sample."""
    p50 = next(r for r in diff["latency"] if r["name"] == "latency_p50")
    if p50["speedup"] is None:
        return f"no per-image comparison for task {diff['task']}; no latency to compare"
    return (
        f"B's invoke() p50 is {p50['b']:.3f} ms vs A's {p50['a']:.3f} ms (speed-up "
        f"{p50['speedup']:.3f}, sequential: no interval); no per-image comparison for task {diff['task']}"
    )


def sweep_metrics(definition: TaskDefinition) -> tuple[str, ...]:
    """The metric columns of sweep tables and of the quantization tables (with Δ vs float)."""
    return sweep_names(definition.metrics)


def sweep_values(definition: TaskDefinition, metrics: Mapping[str, Any]) -> dict[str, float]:
    """A run's values of its sweep columns (a declared ``path`` walked)."""
    declared = {n: m for m in definition.metrics if m.sweep for n in m.members(metrics)}
    return {n: declared[n].number(metrics, n) for n in sweep_metrics(definition) if n in declared}


def paired_of(definition: TaskDefinition, diff: Mapping[str, Any]) -> dict[str, Any] | None:
    """The paired comparison a ``report diff`` document holds for the task; None: none."""
    return diff.get(definition.comparison.key) if definition.comparison else None
