"""A task's numbers, declared once with what they mean, apart from how any report shows them.

A definition lists its :class:`Metric` s; the generic presenters (:mod:`evalharness.report.presenters`)
make from them the ``results.txt`` lines, the headline a run's summary leads with, the rows of
``report diff`` and the names ``--fail-if`` rules use, and the sweep and quantization-table columns.
A new metric on a task is therefore one declaration here and its value in the scorer's result: no
report module names it. The result's invariants (:func:`result_problems`) read the same meta, so a
fraction is checked in [0, 1] because it says it is one, not because a list elsewhere remembers it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

FAMILY = "{k}"  # in a name: one metric per k the run scored (``top{k}``: top1, top2, ...)


@dataclass(frozen=True)
class Metric:
    """One number of a task's result and its meta. Where the name holds ``{k}`` it is a family:
    every ``top1``, ``top2``, ... the result has, in k order, with ``{k}`` filled in the labels."""

    name: str  # its key in metrics.json and the name ``--fail-if`` rules and diff rows use
    label: str = ""  # how results.txt names it (default: the name)
    title: str = ""  # how the headline and the interval line name it (default: the name)
    path: str = ""  # dotted place in metrics.json when not the top-level key ``name``
    higher_is_better: bool = True  # the better direction (the verdict says better or worse by it)
    format: str = "g"  # results.txt's format spec of the value
    scale: float = 1.0  # results.txt shows value × scale (e.g. 100 for a percentage)
    fraction: bool = False  # a value outside [0, 1] is undefined: the run is invalid, never scored
    undefined: str = ""  # what such a value means, said after the problem (COCO's -1: no boxes)
    interval: bool = False  # its interval is ``metrics.intervals[<name>]``
    interval_how: str = "{method}"  # results.txt's interval line: how (filled from metrics.intervals)
    interval_method: str = "{method}"  # the headline's: how the interval was made (the same fill)
    headline: bool = False  # the figure a run's summary leads with (the first picked member)
    sweep: bool = False  # a column of sweep tables and of the quantization tables (Δ vs float too)
    pick: tuple[str, ...] = ()  # of a family: the members headline/interval/sweep mean (empty: all)

    def members(self, metrics: Mapping[str, Any]) -> list[str]:
        """The names of this metric that ``metrics`` holds, in display order."""
        if FAMILY not in self.name:
            return [self.name] if isinstance(self.value(metrics, self.name), int | float) else []
        pattern = re.compile(re.escape(self.name).replace(re.escape(FAMILY), r"(\d+)") + "$")
        found = [(int(m.group(1)), key) for key in metrics if (m := pattern.match(key))]
        return [key for _, key in sorted(found) if _is_number(metrics[key])]

    def picked(self, metrics: Mapping[str, Any]) -> list[str]:
        """The members the headline, interval and sweep flags apply to (a family's ``pick``)."""
        members = self.members(metrics)
        if not self.pick:
            return members
        return [m for m in members if m in self.pick] or members[:1]

    def value(self, metrics: Mapping[str, Any], name: str) -> float | None:
        """The value of member ``name`` in ``metrics`` (a dotted ``path`` walked), or None."""
        node: Any = metrics
        for part in self.path.split(".") if self.path and name == self.name else [name]:
            node = node.get(part) if isinstance(node, dict) else None
        return node if _is_number(node) else None

    def number(self, metrics: Mapping[str, Any], name: str) -> float:
        """The value of a member :meth:`members` found (a KeyError if it is not one)."""
        value = self.value(metrics, name)
        if value is None:
            raise KeyError(name)
        return value

    def text(self, template: str, name: str) -> str:
        """``template`` with the family's k (``top5`` -> 5) filled in; the name when empty."""
        if not template:
            return name
        k = name[len(self.name.split(FAMILY)[0]) :] if FAMILY in self.name else ""
        return template.replace(FAMILY, k)


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _undefined(metric: Metric, value: float) -> bool:
    """A fraction outside [0, 1] (pycocotools' -1: nothing of its kind scored) is no value."""
    return metric.fraction and not 0 <= value <= 1


def defined_value(declared: Iterable[Metric], metrics: Mapping[str, Any], name: str) -> float | None:
    """The value of ``name`` (a top-level key of ``metrics``, a family's member included) when it is
    one: a number, within [0, 1] when declared a fraction; else None (what a repair cannot bound)."""
    value = metrics.get(name)
    if not _is_number(value):
        return None
    of = (m for m in declared if m.name == name or (FAMILY in m.name and name in m.members(metrics)))
    meta = next(of, None)
    return None if meta is not None and _undefined(meta, value) else value


MetricValues = dict[str, float]  # metric values by name (``top1``, ``AP``, ...), in declaration order


def values(declared: Iterable[Metric], metrics: Mapping[str, Any]) -> MetricValues:
    """Every declared metric the result holds, by name, in declaration order."""
    return {name: m.number(metrics, name) for m in declared for name in m.members(metrics)}


def sweep_names(declared: Iterable[Metric]) -> tuple[str, ...]:
    """The sweep/quantization-table columns: declared names (a family's picks) of ``sweep`` metrics."""
    return tuple(name for m in declared if m.sweep for name in (m.pick if FAMILY in m.name else (m.name,)))


def result_problems(declared: Iterable[Metric], metrics: Mapping[str, Any]) -> list[str]:
    """Invariants of a result, checked where one is made (a run, a resume, a merge): never more
    samples scored than listed, and every declared fraction in [0, 1] — a value outside is
    undefined and the run ``invalid``, never a score."""
    problems = []
    scored, listed = metrics.get("num_scored"), metrics.get("num_images")
    if isinstance(scored, int) and isinstance(listed, int) and scored > listed:
        problems.append(f"{scored} samples scored of {listed} listed: a sample was counted twice")
    fractions = [m for m in declared if m.fraction]
    outside = [
        f"{name} {value}"
        for m in fractions
        for name in m.members(metrics)
        if _undefined(m, value := m.number(metrics, name))
    ]
    if outside:
        hint = next((m.undefined for m in fractions if m.undefined), "")
        problems.append(f"{', '.join(outside)}: undefined, not in [0, 1]{hint}")
    return problems
