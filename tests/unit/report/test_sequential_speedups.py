"""A ratio of two timings says how it was measured: a sweep's jobs and report diff's two runs ran
one after the other, so their speed-up is marked sequential and carries no interval (compare's
interleaved one does); a run is never compared with itself (no assets: run documents written here)."""

from __future__ import annotations

from pathlib import Path

from shared_runs import fake_run_dir

from evalharness.core.tables import render_text
from evalharness.report.commands.diff import build_diff, quantities
from evalharness.report.commands.sweep import sections, sweep_table
from evalharness.report.commands.sweep_baseline import speed_note
from evalharness.report.presenters import verdict
from evalharness.report.runs import comparability, definition_of
from evalharness.report.views import diff_view, pr_comment
from evalharness.report.views.quant_table import add_quant_columns
from evalharness.rundir.reader import Run
from evalharness.tasks.definition import Abilities, TaskDefinition

IDS = [f"c{i % 2}/img{i:02d}.png" for i in range(8)]


def _run(tmp_path: Path, label: str, ms: float, wrong: int = 0) -> Run:
    """An ImageNet run on IDS, ``wrong`` first images wrong, every invoke ``ms`` (± a little)."""
    records = [
        {"id": i, "label": i[:2], "label_index": int(i[1]), "latency_ms": ms * (1 + 0.01 * (n % 3)),
         "topk": [1 - int(i[1]), int(i[1])] if n < wrong else [int(i[1]), 1 - int(i[1])]}
        for n, i in enumerate(IDS)
    ]  # fmt: skip
    fake_run_dir(tmp_path / label, predictions=records)
    doc = {
        "task": "imagenet",
        "status": "complete",
        "latency_ms": {"inference": {"mean": ms, "p50": ms}},
        "predictions": {"count": len(IDS)},
        "provenance": {
            "config": {"task": {"name": "imagenet", "top_k": 2, "num_images": 0}},
            "model": {"name": "m", "bytes": 1000},
            "dataset": {"name": "d", "manifest_kind": "relative path + size", "ground_truth_sha256": "g",
                        "count": len(IDS), "manifest_sha256": "w" * 64},
        },
    }  # fmt: skip
    run = Run(label, str(tmp_path / label), doc)  # type: ignore[arg-type]
    doc["metrics"] = definition_of(run).scorer().add_all(run.predictions).result()
    return run


def _jobs(tmp_path: Path, key: str, values: dict[str, tuple[float, int]]) -> list[dict]:
    return [
        {"run": f"{n}_{v}", "dir": "", "params": {key: v}, "doc": _run(tmp_path, f"{n}_{v}", ms, wrong)}
        for n, (v, (ms, wrong)) in enumerate(values.items())
    ]


def test_a_sweeps_speedup_has_no_interval_and_says_how_to_get_one(tmp_path):
    jobs = _jobs(tmp_path, "delegate", {"cpu": (2.0, 0), "xnnpack": (1.6, 1)})
    columns, rows = sweep_table(jobs, {"delegate": "cpu"})
    cpu, xnn = rows
    assert not any(c.startswith("speedup") and c.endswith(("_ci_low", "_ci_high")) for c in columns)
    assert (
        xnn["speedup_p50"] == 2.0 / 1.6 and "d_top1_ci_low" in xnn
    )  # the accuracy change keeps its interval
    # the baseline row is never compared with itself: no change, no speed-up, no interval
    assert not any(k.startswith(("d_", "speedup")) for k in cpu)
    note = speed_note(rows, {"delegate": "cpu"})
    assert note and "measured sequentially" in note and "no interval" in note
    assert "evalharness compare delegate=cpu,xnnpack" in note
    text = render_text("sweep", sections("m", jobs, columns, rows, note))
    assert text.count("measured sequentially") == 1
    assert "compare.txt" in (speed_note(rows, {"delegate": "cpu"}, "compare.txt") or "")
    assert speed_note(rows, None) is None  # no baseline: no speed-up column, no note


def test_the_quant_tables_float_row_is_not_compared_with_itself(tmp_path):
    jobs = _jobs(tmp_path, "quant", {"none": (2.0, 0), "int8": (1.0, 1)})
    columns, rows = sweep_table(jobs)  # a sweep over quant: its quantization columns added
    assert "d_top1_vs_float" in add_quant_columns(jobs, rows, ["quant"])
    by_quant = {r["quant"]: r for r in rows}
    float_row, int8 = by_quant["none"], by_quant["int8"]
    assert "d_top1_vs_float" in int8 and "d_interval_low" in int8
    assert not any(k.endswith("_vs_float") or k.startswith("d_interval") for k in float_row)
    assert "mcnemar_p" not in float_row


def test_report_diff_prints_its_speedup_as_sequential_with_no_interval(tmp_path):
    a, b = _run(tmp_path, "A", 2.0), _run(tmp_path, "B", 1.0, wrong=1)
    doc = build_diff(a, b, comparability(a, b))
    text = render_text("diff", diff_view.sections(doc))
    assert "measured sequentially" in text and "bootstrap interval" not in text
    comment = pr_comment.render_diff(doc, diff_view.sections(doc))
    assert "| speed | A | B | speed-up A / B | measured |" in comment and "| sequential |" in comment
    assert "bootstrap interval" not in comment
    assert doc["latency_speedup"]["measured"] == "sequential"  # kept for --fail-if rules, said so
    assert "speedup_p50_ci_low" in quantities(doc)[1]


def test_a_verdict_of_speed_only_says_sequential():
    class Speed(TaskDefinition):
        name = "speed"
        abilities = Abilities(latency_only=True)

    latency = [{"name": "latency_p50", "a": 2.0, "b": 1.0, "speedup": 2.0}]
    boot = {
        "measured": "sequential",
        "stats": {"p50": {"speedup": 2.0, "interval": [1.9, 2.1], "noise": False}},
    }
    line = verdict(Speed({}), {"task": "speed", "metrics": [], "latency": latency, "latency_speedup": boot})
    assert "(speed-up 2.000, sequential: no interval)" in line and "1.9" not in line
