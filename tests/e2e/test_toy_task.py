"""A task added from outside: one folder (tests/plugins/toy_mse/: two source files + one conf file)
gets run, resume, shard + merge, rescore, diff (+ gate), sweep and the quantization table, with no
other module touched; its dataset field is its own (``dataset.targets``), declared by its
definition (architecture acceptance)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MODELS

from evalharness.core.paths import BUNDLED_DIR

PLUGINS = Path(__file__).parents[1] / "plugins"
TOY = PLUGINS / "toy_mse"
IMAGES = sorted(p.name for p in (BUNDLED_DIR / "images").iterdir())


def _env() -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")])),
        "EVALHARNESS_PLUGINS": "toy_mse.definition",
    }


@pytest.fixture(scope="module")
def targets(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("toy") / "targets.csv"
    rows = [f"{name},{0.1 * (i + 1):.1f}" for i, name in enumerate(IMAGES)]
    path.write_text("filename,target\n" + "\n".join(rows) + "\n")
    return path


def evalharness(targets: Path, cwd: Path, *args: str, multirun: bool = False) -> subprocess.CompletedProcess:
    base = [f"hydra.searchpath=[file://{TOY / 'conf'}]", "task=toy_mse", f"dataset.targets={targets}"]
    mode = ["-m"] if multirun else []
    return subprocess.run(
        [sys.executable, "-m", "evalharness", *mode, *base, "loop.progress=false", *args],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def report(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalharness.report", *map(str, args)],
        env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _doc(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


@pytest.fixture(scope="module")
def runs(targets, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("toy_runs")
    out = {}
    for delegate in ("cpu", "reference"):
        out[delegate] = root / delegate
        proc = evalharness(targets, root, f"delegate={delegate}", f"hydra.run.dir={out[delegate]}")
        assert proc.returncode == 0, proc.stderr
    return out


def test_run_scores_with_the_plugin_scorer(runs):
    doc = _doc(runs["cpu"])
    preds = [json.loads(line) for line in (runs["cpu"] / "predictions.jsonl").read_text().splitlines()]
    want = sum((p["prediction"] - p["target"]) ** 2 for p in preds) / len(preds)
    assert doc["task"] == "toy_mse" and doc["status"] == "complete" and len(preds) == len(IMAGES)
    assert doc["metrics"]["mse"] == pytest.approx(want, rel=1e-12) and doc["metrics"]["mse"] > 0
    assert (runs["cpu"] / "results.txt").read_text() == f"MSE: {doc['metrics']['mse']:.6g}\n"


def test_resume_after_a_hard_kill_equals_the_whole_run(runs, targets, tmp_path):
    run_dir = tmp_path / "killed"
    proc = evalharness(targets, tmp_path, f"hydra.run.dir={run_dir}")
    assert proc.returncode == 0, proc.stderr
    (run_dir / "metrics.json").unlink()  # the state a SIGKILL leaves: two finished lines, a torn one
    lines = (run_dir / "predictions.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "predictions.jsonl").write_text("".join(lines[:2]) + lines[2][:7])
    proc = evalharness(targets, tmp_path, f"hydra.run.dir={run_dir}", "loop.resume=true")
    assert proc.returncode == 0, proc.stderr
    resumed = _doc(run_dir)
    assert resumed["resumed_samples"] == 2 and resumed["metrics"] == _doc(runs["cpu"])["metrics"]


def test_shards_merge_into_the_unsharded_metrics(runs, targets, tmp_path):
    shards = []
    for i in range(2):
        shards.append(tmp_path / f"shard{i}")
        args = [f"dataset.shard.index={i}", "dataset.shard.count=2", f"hydra.run.dir={shards[-1]}"]
        proc = evalharness(targets, tmp_path, *args)
        assert proc.returncode == 0, proc.stderr
    proc = report("merge", *shards, "--out", tmp_path / "merged")
    assert proc.returncode == 0, proc.stderr
    merged = _doc(tmp_path / "merged")
    assert merged["metrics"] == _doc(runs["cpu"])["metrics"] and merged["merged"]["shards"] == 2
    assert (tmp_path / "merged" / "results.txt").read_text() == (runs["cpu"] / "results.txt").read_text()


def test_rescore_reproduces_the_plugin_metrics(runs):
    proc = report("rescore", runs["cpu"], "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["reproduced"] and doc["compared"] == 2, proc.stderr


def test_diff_uses_the_plugin_comparison_and_gates_on_its_metric(runs):
    proc = report("diff", runs["reference"], runs["cpu"], "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [r["name"] for r in doc["metrics"]] == ["mse"]
    assert doc["squared_error"]["paired_images"] == len(IMAGES)
    assert doc["verdict"] == f"{doc['squared_error']['predictions_changed']} prediction(s) changed"
    gate = report("diff", runs["reference"], runs["cpu"], "--fail-if", "paired_images<100")
    assert gate.returncode == 1 and "regression: paired_images<100" in gate.stderr
    text = report("diff", runs["reference"], runs["cpu"]).stdout
    assert "Changed predictions" in text


def test_sweep_tabulates_the_plugin_metric(targets, tmp_path):
    sweep_dir = tmp_path / "sweep"
    proc = evalharness(
        targets, tmp_path, "delegate=cpu,reference", f"hydra.sweep.dir={sweep_dir}", multirun=True
    )
    assert proc.returncode == 0, proc.stderr
    table = (sweep_dir / "sweep.csv").read_text().splitlines()
    assert "mse" in table[0].split(",") and len(table) == 3


def test_the_plugin_is_unknown_without_its_module(runs):
    env = {k: v for k, v in _env().items() if k != "EVALHARNESS_PLUGINS"}
    proc = subprocess.run(
        [sys.executable, "-m", "evalharness.report", "rescore", str(runs["cpu"])],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "task 'toy_mse' has no definition here" in proc.stderr
    assert "EVALHARNESS_PLUGINS" in proc.stderr


def test_the_dataset_field_is_the_plugins_own(targets, tmp_path):
    """``dataset.targets`` is checked by the plug-in's declaration: missing, it is the usual one line."""
    proc = subprocess.run(
        [sys.executable, "-m", "evalharness", f"hydra.searchpath=[file://{TOY / 'conf'}]", "task=toy_mse",
         f"hydra.run.dir={tmp_path / 'run'}", "loop.progress=false"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and "targets" in proc.stderr, proc.stderr
    assert proc.stderr.count("error:") == 1 and "Traceback" not in proc.stderr


@pytest.mark.skipif(not (MODELS / "efficientnet_lite0_fp32.tflite").is_file(), reason="shared assets")
def test_quantization_table_shows_the_plugin_metric(targets, tmp_path):
    pytest.importorskip("ai_edge_quantizer")
    sweep_dir = tmp_path / "quant"
    proc = evalharness(
        targets, tmp_path, "quant=none,fp16", "model=efficientnet_lite0_fp32", f"paths.models_dir={MODELS}",
        f"paths.cache_dir={tmp_path / 'cache'}", f"hydra.sweep.dir={sweep_dir}", multirun=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    md = (sweep_dir / "sweep.md").read_text()
    assert "Table 1: quantization variants" in md and "Δ mse vs float" in md and "same prediction" in md
    header, *rows = (sweep_dir / "sweep.csv").read_text().splitlines()
    assert "d_mse_vs_float" in header.split(",") and len(rows) == 2
