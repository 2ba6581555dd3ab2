"""Tasks added from outside: one folder each (tests/plugins/toy_mse/: definition + live half + one
conf file; tests/plugins/toy_boxes/: the same plus its own output decoder) gets run, resume,
shard + merge, rescore, diff (+ gate), sweep and the quantization table, with no other module
touched; each declares its own dataset field (``dataset.targets``, ``dataset.boxes``) in its
definition (architecture acceptance). The toy tasks measure nothing real: they prove the plumbing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import cli_fork
import pytest
from conftest import MODELS, make_runs, task_lines

from evalharness.core.escape import md_text
from evalharness.core.paths import BUNDLED_DIR

PLUGINS = Path(__file__).parents[1] / "plugins"
IMAGES = sorted(p.name for p in (BUNDLED_DIR / "images").iterdir())


@dataclass(frozen=True)
class Plugin:
    name: str
    field: str  # its own dataset field
    header: str  # of the CSV that field names
    row: str  # format of a CSV row, from the image index i and name
    metrics: tuple[str, ...]  # headline, in order
    comparison: str
    changed: str  # the comparison's count of changed samples
    verdict: str  # how the verdict ends
    section: str  # a diff section title
    agreement: str  # the agreement's name in the quantization table

    @property
    def conf(self) -> Path:
        return PLUGINS / self.name / "conf"


TOY_MSE = Plugin("toy_mse", "targets", "filename,target", "{name},{t:.1f}", ("mse",), "squared_error",
                 "predictions_changed", "prediction(s) changed", "Changed predictions", "same prediction")
TOY_BOXES = Plugin("toy_boxes", "boxes", "filename,x1,y1,x2,y2", "{name},0.1,0.25,{x2:.2f},0.75",
                   ("mean_iou", "hit_rate"), "box_change", "boxes_moved", "box(es) moved", "Moved boxes",
                   "same box (IoU >= 0.5)")  # fmt: skip
PLUGIN_LIST = [TOY_MSE, TOY_BOXES]


def _env(plugin: Plugin) -> dict:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")])),
        "EVALHARNESS_PLUGINS": f"{plugin.name}.definition",
    }


@pytest.fixture(scope="module", params=PLUGIN_LIST, ids=lambda p: p.name)
def plugin(request) -> Plugin:
    return request.param


@pytest.fixture(scope="module")
def data_file(plugin, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp(plugin.name) / f"{plugin.field}.csv"
    rows = [plugin.row.format(name=name, t=0.1 * (i + 1), x2=0.3 + 0.1 * i) for i, name in enumerate(IMAGES)]
    path.write_text(plugin.header + "\n" + "\n".join(rows) + "\n")
    return path


def evalharness(plugin: Plugin, data: Path, cwd: Path, *args: str, multirun: bool = False):
    base = [f"hydra.searchpath=[file://{plugin.conf}]", f"task={plugin.name}"]
    base.append(f"dataset.{plugin.field}={data}")
    mode = ["-m"] if multirun else []
    return cli_fork.run(
        [sys.executable, "-m", "evalharness", *mode, *base, "loop.progress=false", *args],
        cwd=cwd, env=_env(plugin), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def report(plugin: Plugin, *args) -> subprocess.CompletedProcess:
    return cli_fork.run(
        [sys.executable, "-m", "evalharness.report", *map(str, args)],
        env=_env(plugin), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _doc(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


@pytest.fixture(scope="module")
def runs(plugin, data_file, run_store) -> dict[str, Path]:
    def make(overrides: list[str], run_dir: Path) -> None:
        proc = evalharness(plugin, data_file, run_dir.parent, *overrides, f"hydra.run.dir={run_dir}")
        assert proc.returncode == 0, proc.stderr

    variants = {delegate: [f"delegate={delegate}"] for delegate in ("cpu", "reference")}
    return make_runs(run_store, [], variants, make=make, key=f"{plugin.name} {data_file}")


def test_run_scores_with_the_plugin_scorer(plugin, runs):
    doc = _doc(runs["cpu"])
    preds = [json.loads(line) for line in (runs["cpu"] / "predictions.jsonl").read_text().splitlines()]
    assert doc["task"] == plugin.name and doc["status"] == "complete" and len(preds) == len(IMAGES)
    if plugin is TOY_MSE:
        want = sum((p["prediction"] - p["target"]) ** 2 for p in preds) / len(preds)
        assert doc["metrics"]["mse"] == pytest.approx(want, rel=1e-12) and doc["metrics"]["mse"] > 0
        assert task_lines(runs["cpu"]) == [f"MSE: {doc['metrics']['mse']:.6g}"]
    else:  # the plug-in's decoder made every box: 0.5 x 0.5, centred vertically
        assert all(p["box"][3] - p["box"][1] == pytest.approx(0.5) for p in preds)
        assert 0 < doc["metrics"]["mean_iou"] <= 1 and doc["metrics"]["num_scored"] == len(IMAGES)
        assert task_lines(runs["cpu"])[0].startswith("mean IoU: ")


def test_resume_after_a_hard_kill_equals_the_whole_run(plugin, runs, data_file, tmp_path):
    run_dir = tmp_path / "killed"
    proc = evalharness(plugin, data_file, tmp_path, f"hydra.run.dir={run_dir}")
    assert proc.returncode == 0, proc.stderr
    (run_dir / "metrics.json").unlink()  # the state a SIGKILL leaves: two finished lines, a torn one
    lines = (run_dir / "predictions.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "predictions.jsonl").write_text("".join(lines[:2]) + lines[2][:7])
    proc = evalharness(plugin, data_file, tmp_path, f"hydra.run.dir={run_dir}", "loop.resume=true")
    assert proc.returncode == 0, proc.stderr
    resumed = _doc(run_dir)
    assert resumed["resumed_samples"] == 2 and resumed["metrics"] == _doc(runs["cpu"])["metrics"]


def test_shards_merge_into_the_unsharded_metrics(plugin, runs, data_file, tmp_path):
    shards = []
    for i in range(2):
        shards.append(tmp_path / f"shard{i}")
        args = [f"dataset.shard.index={i}", "dataset.shard.count=2", f"hydra.run.dir={shards[-1]}"]
        proc = evalharness(plugin, data_file, tmp_path, *args)
        assert proc.returncode == 0, proc.stderr
    proc = report(plugin, "merge", *shards, "--out", tmp_path / "merged")
    assert proc.returncode == 0, proc.stderr
    merged = _doc(tmp_path / "merged")
    assert merged["metrics"] == _doc(runs["cpu"])["metrics"] and merged["merged"]["shards"] == 2
    assert task_lines(tmp_path / "merged") == task_lines(runs["cpu"])


def test_rescore_reproduces_the_plugin_metrics(plugin, runs):
    proc = report(plugin, "rescore", runs["cpu"], "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["reproduced"], proc.stderr
    assert doc["compared"] == len(plugin.metrics) + 1  # its metrics and num_scored


def test_diff_uses_the_plugin_comparison_and_gates_on_its_metric(plugin, runs):
    proc = report(plugin, "diff", runs["reference"], runs["cpu"], "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [r["name"] for r in doc["metrics"]] == list(plugin.metrics)
    assert doc[plugin.comparison]["paired_images"] == len(IMAGES)
    assert doc["verdict"] == f"{doc[plugin.comparison][plugin.changed]} {plugin.verdict}"
    gate = report(plugin, "diff", runs["reference"], runs["cpu"], "--fail-if", "paired_images<100")
    assert gate.returncode == 1 and "regression: paired_images<100" in gate.stderr
    text = report(plugin, "diff", runs["reference"], runs["cpu"]).stdout
    assert plugin.section in text


def test_sweep_tabulates_the_plugin_metric(plugin, data_file, tmp_path):
    sweep_dir = tmp_path / "sweep"
    proc = evalharness(
        plugin, data_file, tmp_path, "delegate=cpu,reference", f"hydra.sweep.dir={sweep_dir}", multirun=True
    )
    assert proc.returncode == 0, proc.stderr
    table = (sweep_dir / "sweep.csv").read_text().splitlines()
    assert set(plugin.metrics) <= set(table[0].split(",")) and len(table) == 3


def test_the_plugin_is_unknown_without_its_module(plugin, runs):
    env = {k: v for k, v in _env(plugin).items() if k != "EVALHARNESS_PLUGINS"}
    proc = cli_fork.run(
        [sys.executable, "-m", "evalharness.report", "rescore", str(runs["cpu"])],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and f"task '{plugin.name}' has no definition here" in proc.stderr
    assert "EVALHARNESS_PLUGINS" in proc.stderr


def test_the_dataset_field_is_the_plugins_own(plugin, tmp_path):
    """The field is checked by the plug-in's declaration: missing, it is the usual one line."""
    proc = cli_fork.run(
        [sys.executable, "-m", "evalharness", f"hydra.searchpath=[file://{plugin.conf}]",
         f"task={plugin.name}", f"hydra.run.dir={tmp_path / 'run'}", "loop.progress=false"],
        cwd=tmp_path, env=_env(plugin), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2 and plugin.field in proc.stderr, proc.stderr
    assert proc.stderr.count("error:") == 1 and "Traceback" not in proc.stderr


@pytest.mark.skipif(not (MODELS / "efficientnet_lite0_fp32.tflite").is_file(), reason="shared assets")
def test_quantization_table_shows_the_plugin_metric(plugin, data_file, tmp_path):
    pytest.importorskip("ai_edge_quantizer")
    sweep_dir = tmp_path / "quant"
    proc = evalharness(
        plugin, data_file, tmp_path, "quant=none,fp16", "model=efficientnet_lite0_fp32",
        f"paths.models_dir={MODELS}", f"hydra.sweep.dir={sweep_dir}", multirun=True,
    )  # fmt: skip: the session's cache (tests/conftest.py): both plugins' fp16 variant and size figures once
    assert proc.returncode == 0, proc.stderr
    md = (sweep_dir / "sweep.md").read_text()
    assert "Table 1: quantization variants" in md and md_text(plugin.agreement) in md  # escaped for Markdown
    assert all(f"Δ {m} vs float" in md for m in plugin.metrics)
    header, *rows = (sweep_dir / "sweep.csv").read_text().splitlines()
    assert {f"d_{m}_vs_float" for m in plugin.metrics} <= set(header.split(",")) and len(rows) == 2
