"""How Inference Diff results pair and read: each output's mean error of two runs side by side
(``report diff``), and results.txt as TFLite's inference_diff tool prints it, then the intervals,
the decoded comparison and the raw checks judged decoded instead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalharness.core.tables import Section
from evalharness.rundir.metrics_file import Document
from evalharness.rundir.reader import Run
from evalharness.stats.decoded import summary as decoded_summary
from evalharness.stats.intervals import CONFIDENCE, fmt_interval, interval_lines
from evalharness.tasks.comparison import Comparison
from evalharness.tasks.view import TaskView


class OutputErrorsComparison(Comparison):
    key = "output_errors"

    def compare(self, a: Run, b: Run, options: Mapping[str, Any]) -> dict[str, Any]:
        """Per output: each run's mean error with its interval (runs made before schema 2: none)."""
        rows = []
        for side, run in (("a", a), ("b", b)):
            intervals = run.document.metrics.interval_part("avg_error")
            for out in run.metrics.get("outputs") or []:
                if side == "a":
                    rows.append({"name": out["name"]})
                row = next((r for r in rows if r["name"] == out["name"]), None)
                if row is not None:
                    row[side], row[f"{side}_interval"] = out["avg_error"], intervals.get(out["name"])
        return {"outputs": rows, "decoded": {"a": a.metrics.get("decoded"), "b": b.metrics.get("decoded")}}


class InferenceDiffView(TaskView):
    def diff_sections(self, comparison: dict[str, Any], max_rows: int) -> list[Section]:
        cells = [
            [r["name"], f"{r.get('a', 0):.4g} {fmt_interval(r.get('a_interval'), '.4g')}",
             f"{r.get('b', 0):.4g} {fmt_interval(r.get('b_interval'), '.4g')}"]
            for r in comparison["outputs"]
        ]  # fmt: skip
        notes = [f"mean absolute error against the reference pass, {CONFIDENCE:.0%} interval over the runs"]
        headers = ["output", "A avg_error", "B avg_error"]
        sections = [Section("Output errors", headers, cells, notes, key="errors")]
        decoded = comparison.get("decoded") or {}
        if decoded.get("a") or decoded.get("b"):
            rows = [[side.upper(), decoded_summary(decoded.get(side))] for side in ("a", "b")]
            headers = ["run", "decoded answers against its reference pass"]
            sections.append(Section("Decoded outputs", headers, rows, key="decoded"))
        return sections

    def summary_lines(self, doc: Document, lines: list[str]) -> list[str]:
        metrics = doc.metrics.values
        ref, test = metrics.get("reference_latency_us", {}), metrics.get("test_latency_us", {})
        lines = [
            f"Num evaluation runs: {metrics['num_scored']}",
            f"Reference run latency: avg={ref.get('mean', 0):g}(us), std_dev={ref.get('std', 0):g}(us)",
            f"Test run latency: avg={test.get('mean', 0):g}(us), std_dev={test.get('std', 0):g}(us)",
        ]
        for i, out in enumerate(metrics["outputs"]):
            lines.append(f"OutputDiff[{i}]: avg_error={out['avg_error']:g}, std_dev={out['std_dev']:g}")
        intervals = doc.metrics.intervals
        errors = doc.metrics.interval_part("avg_error")
        shown = [(f"OutputDiff[{i}]", errors.get(out["name"])) for i, out in enumerate(metrics["outputs"])]
        lines += interval_lines(intervals, f"avg_error, {metrics['num_scored']} runs", shown)
        lines.append(decoded_summary(metrics.get("decoded")))
        if metrics.get("informational_checks"):
            lines.append(
                "Raw checks judged decoded instead (a detector's box lists): "
                + "; ".join(metrics["informational_checks"])
            )
        return lines
