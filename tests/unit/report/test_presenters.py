"""The generic presenters make a task's summary, headline, diff rows, verdict and sweep columns from
its declared metrics alone (no assets, no run directory)."""

from __future__ import annotations

from evalharness.report import presenters
from evalharness.report.summary import results_lines
from evalharness.rundir.metrics_file import Metrics, parse_document
from evalharness.tasks.definition import Abilities, TaskDefinition
from evalharness.tasks.metrics import Metric
from evalharness.tasks.view import TaskView


class Toy(TaskDefinition):
    name = "toy"
    metrics = (
        Metric("err", label="Error", format=".3f", higher_is_better=False, headline=True, sweep=True,
               interval=True, interval_how="{method}, {num_scored} runs"),
        Metric("hits", title="hit count"),
        Metric("deep", path="nested.value", sweep=True),
    )  # fmt: skip


class Speed(TaskDefinition):
    name = "speed"
    abilities = Abilities(latency_only=True)


METRICS = {
    "err": 0.25,
    "hits": 3,
    "nested": {"value": 0.5},
    "num_scored": 4,
    "intervals": {"method": "normal", "confidence": 0.95, "err": [0.2, 0.3]},
}
LATENCY = [{"name": "latency_p50", "a": 2.0, "b": 1.0, "speedup": 2.0}]


def _diff(a: float, b: float) -> dict:
    rows = [{"name": "err", "a": a, "b": b, "delta": b - a, "delta_pct": None}]
    return {"task": "toy", "metrics": rows, "latency": LATENCY}


def test_summary_lines_are_one_per_declared_metric_then_the_intervals():
    assert results_lines(Toy({}), parse_document({"metrics": METRICS})) == [
        "Error: 0.250",
        "hits: 3",
        "deep: 0.5",
        "95% intervals (normal, 4 runs): err [0.2, 0.3]",
    ]


def test_a_view_extends_the_generic_lines():
    class Shown(TaskView):
        def summary_lines(self, doc, lines):
            return [*lines, "and more"]

    class WithView(Toy):
        view = Shown

    assert results_lines(WithView({}), parse_document({"metrics": {"err": 1}}))[-1] == "and more"


def test_headline_names_and_accuracy():
    assert presenters.headline(Toy({}), METRICS) == {"err": 0.25, "hits": 3, "deep": 0.5}
    lead = presenters.headline_accuracy(Toy({}), Metrics.parse(METRICS))
    assert lead == ("err", 0.25, [0.2, 0.3], "normal")
    assert presenters.headline_accuracy(Speed({}), Metrics.parse({"num_scored": 3})) is None
    assert presenters.headline(Speed({}), {"num_scored": 3, "x": {"y": 1.5}}) == {"num_scored": 3, "x.y": 1.5}


def test_a_second_headline_the_result_holds_is_said_after_the_lead():
    """A seg model's mask AP beside its box AP: the lead first, then each other headline the result
    holds, with its interval; absent from a result (a box model), nothing is added."""

    class TwoHeads(Toy):
        metrics = (*Toy.metrics, Metric("mask", title="mask AP", headline=True, interval=True))

    both = Metrics.parse({**METRICS, "mask": 0.4, "intervals": {**METRICS["intervals"], "mask": [0.3, 0.5]}})
    assert presenters.headline_accuracy(TwoHeads({}), both) == ("err", 0.25, [0.2, 0.3], "normal")
    assert presenters.beside_headline(TwoHeads({}), both) == [("mask AP", 0.4, [0.3, 0.5])]
    assert presenters.beside_headline(TwoHeads({}), Metrics.parse(METRICS)) == []
    # compare's column: the last headline figure held (a seg model's mask AP), else the first sweep column
    assert presenters.judged_metric(TwoHeads({}), {**METRICS, "mask": 0.4}) == "mask"
    assert presenters.judged_metric(TwoHeads({}), METRICS) == "err"


def test_verdict_reads_the_better_direction():
    assert presenters.verdict(Toy({}), _diff(0.3, 0.2)).startswith(
        "B's err is 0.2 vs A's 0.3 (-0.1: better, lower is better); B's invoke() p50 is 1.000 ms"
    )
    assert "(+0.1: worse, lower is better)" in presenters.verdict(Toy({}), _diff(0.2, 0.3))
    speed = {"task": "speed", "metrics": [], "latency": LATENCY}
    assert presenters.verdict(Speed({}), speed).startswith("B's invoke() p50 is 1.000 ms vs A's 2.000 ms")


def test_sweep_columns_and_values():
    assert presenters.sweep_metrics(Toy({})) == ("err", "deep")
    assert presenters.sweep_values(Toy({}), METRICS) == {"err": 0.25, "deep": 0.5}
    assert presenters.paired_of(Toy({}), {"x": {}}) is None
