"""Outputs are checked on real data in every task: NaN/Inf or input-independent outputs make a run
``invalid`` (exit 1, numbers kept, never scored as if fine), and every file stays strict JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import run_cli, task_lines

from evalharness.core.paths import BUNDLED_DIR
from evalharness.loop.checks import OutputChecks
from evalharness.runtime.modelgen import constant_output_model

LABELS = f"model.labels={BUNDLED_DIR / 'imagenet_labels_1001.txt'}"  # a bare test model carries none


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def _model(tmp_path, scores: np.ndarray) -> str:
    """A real classifier (1001 scores) whose output ignores its input."""
    return constant_output_model(
        str(tmp_path / "m.tflite"), [scores.reshape(1, 1001)], input_shape=(1, 128, 128, 3)
    )


def _run(tmp_path, model: str, *extra: str) -> tuple[object, dict]:
    """``python -m evalharness`` on the bundled sample with ``model``: (process, metrics.json)."""
    proc = run_cli([f"model.path={model}", LABELS, *extra, f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    return proc, _strict((tmp_path / "run" / "metrics.json").read_text())


@pytest.fixture()
def constant(tmp_path) -> str:
    return _model(tmp_path, np.linspace(0, 1, 1001, dtype=np.float32))


def test_same_output_for_every_image_is_invalid_not_a_score(tmp_path, constant):
    proc, doc = _run(tmp_path, constant)
    assert proc.returncode == 1 and doc["status"] == "invalid" and "Traceback" not in proc.stderr
    assert "same output for every input" in doc["stop_reason"]
    assert doc["output_checks"]["outputs"][0]["same_for_every_input"] is True
    assert task_lines(tmp_path / "run")[0].startswith("INVALID: ")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "invalid" in errors[0]


def test_allowing_constant_outputs_records_the_check_and_completes(tmp_path, constant):
    proc, doc = _run(tmp_path, constant, "loop.allow_constant_outputs=true")
    assert proc.returncode == 0 and doc["status"] == "complete", proc.stderr
    assert doc["output_checks"]["failed"] == ["output_0: same output for every input (5 samples)"]


def test_nonfinite_outputs_are_invalid_and_files_stay_strict_json(tmp_path):
    scores = np.linspace(0, 1, 1001, dtype=np.float32)
    scores[[3, 500]] = [np.nan, np.inf]
    proc, doc = _run(tmp_path, _model(tmp_path, scores), "loop.allow_constant_outputs=true")
    out = doc["output_checks"]["outputs"][0]
    assert proc.returncode == 1 and doc["status"] == "invalid" and "nonfinite" in doc["stop_reason"]
    assert (out["nonfinite_samples"], out["nonfinite_values"]) == (5, 10)
    records = [_strict(line) for line in (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()]
    assert len(records) == 5 and all(None in r["scores"] for r in records)  # inf ranks first -> null


def test_output_checks_count_per_output():
    checks = OutputChecks()
    a, b = np.zeros((1, 4), np.uint8), np.ones((1, 4), np.uint8)
    checks.add_inputs([a])
    checks.add_outputs([np.array([0.0, np.nan], np.float32), np.zeros(3)])
    checks.add_inputs([b])
    checks.add_outputs([np.array([1.0, 2.0], np.float32), np.zeros(3)])
    record = checks.record(["x", "y"])
    assert record["samples"] == 2 and record["distinct_inputs"]
    assert record["outputs"][0] | {"name": "x"} == {
        "name": "x",
        "nonfinite_samples": 1,
        "nonfinite_values": 1,
        "all_zero_samples": 0,
        "same_for_every_input": False,
    }
    assert record["outputs"][1]["all_zero_samples"] == 2 and record["outputs"][1]["same_for_every_input"]
    assert record["failed"] == ["x: nonfinite (1 of 2 samples)"]  # one constant output of two is normal
    both = OutputChecks()
    both.add_inputs([a])
    both.add_outputs([np.ones(2), np.zeros(3)])
    both.add_inputs([b])
    both.add_outputs([np.ones(2), np.zeros(3)])
    assert both.record(["x", "y"])["failed"] == ["x, y: same output for every input (2 samples)"]
