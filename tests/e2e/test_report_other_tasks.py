"""Runs without per-image predictions to pair (benchmark): diff compares speed, rescore refuses."""

from __future__ import annotations

import json

from conftest import MODELS, runs_fixture
from test_report_classification import report

BENCH = [f"paths.models_dir={MODELS}", "task=benchmark", "task.num_runs=5", "task.min_secs=0"]


runs = runs_fixture(BENCH, {d: [f"delegate={d}"] for d in ("reference", "cpu")})


def test_benchmark_diff_compares_latency_and_gates_on_it(runs, capsys):
    code, out, _ = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "json")
    doc = json.loads(out)
    assert code == 0 and "classification" not in doc and "detection" not in doc
    assert [r["name"] for r in doc["metrics"]] == ["num_images", "num_scored", "num_skipped"]
    p50 = next(r for r in doc["latency"] if r["name"] == "latency_p50")
    assert doc["verdict"].startswith(f"B's invoke() p50 is {p50['b']:.3f} ms vs A's {p50['a']:.3f} ms")
    assert doc["verdict"].endswith("no per-image comparison for task benchmark")
    code, _, err = report(capsys, "diff", runs["reference"], runs["cpu"], "--fail-if", "coverage<-1%")
    assert (code, err) == (0, "")  # reference 0 -> cpu 0.97: coverage went up
    code, _, err = report(capsys, "diff", runs["cpu"], runs["reference"], "--fail-if", "num_scored<0")
    assert (code, err) == (0, "")


def test_rescore_refuses_tasks_without_stored_predictions_to_score(runs, capsys):
    code, _, err = report(capsys, "rescore", runs["cpu"])
    assert code == 2 and "rescore recomputes imagenet and coco metrics" in err
