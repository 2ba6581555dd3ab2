"""The command line as a user runs it: default run, multirun, and a non-editable install."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO, VAL50, run_cli

from evalharness.rundir.document import MAP_FIELDS


def _keys(value, prefix=""):
    """Every key path of a JSON document (lists collapsed, run-dependent maps opaque)."""
    if isinstance(value, dict) and prefix.lstrip(".") not in MAP_FIELDS:
        return {k for key, v in value.items() for k in _keys(v, f"{prefix}.{key}")} | {prefix}
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return _keys(value[0], prefix + "[]")
    return {prefix}


def test_default_run_uses_bundled_sample(tmp_path):
    proc = run_cli([], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "Top-1 Accuracy: 0.6"  # 3 of the 5 bundled photos (see datasets/sample)
    assert lines[4] == "Top-5 Accuracy: 0.8"
    metrics_path = Path(lines[-1].removeprefix("metrics: "))
    assert metrics_path.is_relative_to(tmp_path / "outputs/imagenet/mobilenet_v1_0.25_128_quant/cpu")
    doc = json.loads(metrics_path.read_text())
    assert doc["schema_version"] == 4 and doc["status"] == "complete"  # 2: intervals, 3: cache, 4: analysis
    assert doc["provenance"]["model"]["sha256"] == (
        "cb273c23ee76374b05b9583177e28aa19744858a7679c56a250e83d0333da785"
    )
    # the summary block ends what the terminal shows and heads results.txt, above the same lines
    start = lines.index(next(line for line in lines if line.startswith("== summary: imagenet")))
    block, detail = lines[start:-1], lines[:start]
    heads = [line.split(":")[0].strip() for line in block[1:]]
    assert heads == ["Accuracy", "Speed", "Latency", "Delegate", "Status", "Run"]
    assert "5 invokes < min_invokes 20" in block[3]  # 5 photos are no latency measurement, and it says so
    assert "top-1 0.6000, 95% interval [0.2307, 0.8824] (Wilson" in block[1]
    speed = r"ms preprocess, [\d.]+ ms invoke \(p50 [\d.]+\), [\d.]+ ms postprocess per image"
    assert re.search(speed, block[2])
    assert "29/31 ops delegated in 2 partition(s)" in block[4] and "device: CPU" in block[4]
    assert block[5].endswith("complete") and block[6].endswith(str(metrics_path.parent))
    assert (metrics_path.parent / "results.txt").read_text().splitlines() == [*block, "", *detail]
    stages = doc["throughput"]["per_image_ms"]
    assert all(stages[k] > 0 for k in ("preprocess", "invoke", "postprocess"))


def test_multirun_cpu_and_reference_have_same_schema_and_dataset(tmp_path):
    proc = run_cli(
        ["-m", *VAL50, "model=mobilenet_v1_0.25_128_quant", "delegate=cpu,reference", "task.num_images=10"],
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    docs = sorted(
        (json.loads(p.read_text()) for p in (tmp_path / "outputs/multirun").rglob("metrics.json")),
        key=lambda d: d["provenance"]["delegate"]["name"],
    )
    assert [d["provenance"]["delegate"]["name"] for d in docs] == ["cpu", "reference"]
    assert _keys(docs[0]) == _keys(docs[1])
    a, b = (d["provenance"]["dataset"] for d in docs)
    assert a["manifest_sha256"] == b["manifest_sha256"] and a["count"] == b["count"] == 10
    assert a["ground_truth_sha256"] == b["ground_truth_sha256"]
    sweep = next((tmp_path / "outputs/multirun").iterdir()) / "sweep.csv"  # written by the default callback
    rows = sweep.read_text().splitlines()
    assert len(rows) == 3 and "delegate" in rows[0]


def test_non_editable_install_runs_from_another_directory(tmp_path):
    """conf/ and the bundled sample ship inside the wheel: nothing depends on the checkout or cwd."""
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    for source, installed in (
        (REPO / "conf", target / "evalharness/conf"),
        (REPO / "datasets/sample", target / "evalharness/bundled"),
    ):
        files = {p.relative_to(source) for p in source.rglob("*") if p.is_file()}
        assert files and files <= {p.relative_to(installed) for p in installed.rglob("*") if p.is_file()}
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {"PYTHONPATH": str(target), "PYTHONSAFEPATH": "1"}
    proc = run_cli(["task.num_images=2"], cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(Path(proc.stdout.splitlines()[-1].removeprefix("metrics: ")).read_text())
    assert doc["provenance"]["model"]["path"].startswith(str(target))
    assert os.path.isdir(work / "outputs")
