"""A run directory has one identity: a resume refuses inputs that changed, a refused command writes
nothing, a torn line anywhere in predictions.jsonl resumes from the consistent prefix."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from evalharness.core.paths import BUNDLED_DIR


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture()
def sample(tmp_path) -> dict:
    """A private copy of the bundled sample (model, labels, images) and a finished run on it."""
    data = tmp_path / "data"
    shutil.copytree(BUNDLED_DIR, data)
    args = [
        f"model.path={data / 'mobilenet_v1_0.25_128_quant.tflite'}",
        f"dataset.root={data / 'images'}",
        f"dataset.ground_truth={data / 'labels.csv'}",
        f"model.labels={data / 'imagenet_labels_1001.txt'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    proc = run_cli(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
    return {"data": data, "run": tmp_path / "run", "args": args, "cwd": tmp_path}


def _interrupt(run: Path, keep: int) -> None:
    """The state a hard kill leaves: ``keep`` finished lines, a torn one, no metrics.json."""
    (run / "metrics.json").unlink()
    lines = (run / "predictions.jsonl").read_text().splitlines(keepends=True)
    (run / "predictions.jsonl").write_text("".join(lines[:keep]) + lines[keep][:9])


def _errors(proc) -> list[str]:
    return [line for line in proc.stderr.splitlines() if line.startswith("error:")]


def test_a_refused_command_leaves_a_finished_run_untouched(sample):
    before = _tree(sample["run"])
    proc = run_cli([*sample["args"], "task.top_k=5"], sample["cwd"])
    assert proc.returncode == 2 and len(_errors(proc)) == 1 and "already holds a complete run" in proc.stderr
    assert "Traceback" not in proc.stderr and _tree(sample["run"]) == before


@pytest.mark.parametrize(
    "change, named",
    [
        ("model", "model_sha256"),
        ("labels", "labels_sha256"),
        ("image", "dataset_files_stat"),
    ],
)
def test_resume_refuses_inputs_that_changed_since_the_interruption(sample, change, named):
    _interrupt(sample["run"], 2)
    data = sample["data"]
    if change == "model":
        path = data / "mobilenet_v1_0.25_128_quant.tflite"
        blob = bytearray(path.read_bytes())
        blob[-1] ^= 1  # one bit of the last weight byte
        path.write_bytes(bytes(blob))
    elif change == "labels":
        path = data / "imagenet_labels_1001.txt"
        path.write_text(path.read_text().replace("\ntench, Tinca tinca\n", "\ntench\n"))  # no image's label
    else:
        path = data / "images" / "parrot.jpg"
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    before = _tree(sample["run"])
    proc = run_cli([*sample["args"], "loop.resume=true"], sample["cwd"])
    assert proc.returncode == 2 and len(_errors(proc)) == 1, proc.stderr
    assert named in _errors(proc)[0] and "changed since the interrupted run" in _errors(proc)[0]
    assert _tree(sample["run"]) == before  # the refusal wrote nothing


def test_a_torn_line_inside_predictions_resumes_from_the_prefix(sample):
    whole = json.loads((sample["run"] / "metrics.json").read_text())
    (sample["run"] / "metrics.json").unlink()
    lines = (sample["run"] / "predictions.jsonl").read_text().splitlines(keepends=True)
    lines[2] = lines[2][:20] + "\n"  # a damaged line in the middle, complete lines after it
    (sample["run"] / "predictions.jsonl").write_text("".join(lines))
    proc = run_cli([*sample["args"], "loop.resume=true"], sample["cwd"])
    assert proc.returncode == 0, proc.stderr
    assert (
        "line 3 is torn; resuming from the 2 records before it (3 line(s) dropped"
        in proc.stdout + proc.stderr
    )
    resumed = json.loads((sample["run"] / "metrics.json").read_text())
    assert resumed["resumed_samples"] == 2 and resumed["metrics"] == whole["metrics"]
