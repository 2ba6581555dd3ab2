"""A new metric on an existing task is one declaration: the toy plug-in's definition subclassed
with one more :class:`Metric` shows it in the summary, ``report diff`` (its rows, the names
``--fail-if`` may use, the text), the sweep table and the quantization table, with nothing in
``report/`` touched (no assets: run documents and records are written here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_runs import fake_run_dir

from evalharness.core.tables import render_text
from evalharness.report.commands.diff import build_diff, quantities
from evalharness.report.commands.sweep import job_row, metric_columns
from evalharness.report.runs import comparability, definition_of
from evalharness.report.summary import results_lines
from evalharness.report.views import diff_view
from evalharness.report.views.quant_table import add_quant_columns, quant_sections
from evalharness.rundir.reader import Run
from evalharness.tasks.definition import DEFINITIONS
from evalharness.tasks.metrics import Metric

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
MAE = Metric("mae", label="MAE", format=".4g", higher_is_better=False, sweep=True)


@pytest.fixture
def plus(monkeypatch):
    """toy_mse plus one declared metric, registered as task ``toy_mse_plus`` for this test."""
    monkeypatch.syspath_prepend(str(PLUGINS))
    from toy_mse.definition import ToyMseDefinition

    class ToyMsePlus(ToyMseDefinition):
        name = "toy_mse_plus"
        metrics = (*ToyMseDefinition.metrics, MAE)

    monkeypatch.setitem(DEFINITIONS._items, ToyMsePlus.name, ToyMsePlus)
    return ToyMsePlus


def _run(tmp_path: Path, label: str, mse: float, mae: float, quant: str) -> Run:
    records = [{"id": f"img{i}", "prediction": 0.5 + (i == 0) * mae, "target": 0.5} for i in range(3)]
    run_dir = fake_run_dir(tmp_path / label, predictions=records)
    doc = {
        "task": "toy_mse_plus",
        "status": "complete",
        "metrics": {"mse": mse, "mae": mae, "num_scored": 3},
        "latency_ms": {"inference": {"mean": 1.0, "p50": 1.0}},
        "provenance": {"model": {"name": "m", "bytes": 1000, "quant": {"name": quant}}, "config": {}},
    }
    return Run(label, str(run_dir), doc)


def test_one_declared_metric_shows_in_summary_diff_sweep_and_quant_table(plus, tmp_path):
    a, b = _run(tmp_path, "A", 0.04, 0.2, "none"), _run(tmp_path, "B", 0.09, 0.3, "dynamic")
    assert results_lines(definition_of(a), a.document) == ["MSE: 0.04", "MAE: 0.2"]

    doc = build_diff(a, b, comparability(a, b))
    row = next(r for r in doc["metrics"] if r["name"] == "mae")
    assert (row["a"], row["b"]) == (0.2, 0.3)
    assert "mae" in quantities(doc)[0]  # a --fail-if rule may name it
    assert "mae" in render_text("diff", diff_view.sections(doc))

    sides = ((a, "none"), (b, "dynamic"))
    jobs = [{"run": r.label, "dir": r.dir, "params": {"quant": q}, "doc": r} for r, q in sides]
    rows = [job_row(job, ["quant"]) for job in jobs]
    assert metric_columns(jobs, rows) == ["mse", "mae"]
    assert "d_mae_vs_float" in add_quant_columns(jobs, rows, ["quant"])
    headers = quant_sections(jobs, rows, ["quant"])[0].headers
    assert "mae" in headers and "Δ mae vs float" in headers
