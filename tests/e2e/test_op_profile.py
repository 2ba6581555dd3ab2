"""The per-op profile on real models: per-op times against the whole invoke, placements against the
coverage record, the CSV and Model Explorer files, and ``report diff`` per-type speed-ups.

Lean on purpose (few repeats): the acceptance figures on whole models, EfficientNet-Lite0 on the
GPU included, come from ``benchmarks/bench_op_profile.py`` (docs/performance.md)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from conftest import MODELS, run_inprocess
from test_report_classification import report

from evalharness.core.errors import DelegateUnavailableError
from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.compiled import check_vulkan
from evalharness.runtime.op_profile import profile_ops
from evalharness.runtime.subgraph import ModelGraph

MNV2 = [
    f"paths.models_dir={MODELS}",
    "model=mobilenet_v2_1.0_224_quant",
    "task=benchmark",
    "task.num_runs=5",
    "task.min_secs=0",
    "task.op_profile=true",
    "loop.op_profile_repeats=10",
]


def _agrees_or_says_why(profile: dict) -> None:
    assert profile["placements"]["agree"] is True, profile["placements"]
    assert profile["adds_up"] == (abs(profile["sum_over_invoke"] - 1) <= profile["tolerance"])
    assert profile["adds_up"] or "sum to" in profile["note"]


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("mnv2")
    run_inprocess([*MNV2, "delegate.num_threads=2"], run)
    return run


def test_cpu_profile_sums_places_and_writes(cpu_run):
    run = cpu_run
    profile = json.loads((run / "metrics.json").read_text())["metrics"]["op_profile"]
    _agrees_or_says_why(profile)
    assert profile["placements"]["ops_delegated_by_coverage"] == 64  # XNNPACK: all but 2 of 66
    assert set(profile["by_backend"]) == {"XNNPACK", "builtin kernel"}
    # the runtime's own profiler times the CPU kinds: its op events lie inside the interpreter's Invoke
    # event of the same invoke, so their sum cannot exceed it; how close it comes (within 10 % on a
    # quiet machine) is a speed figure, printed by benchmarks/bench_op_profile.py, not asserted here
    assert profile["source"].startswith("LiteRT runtime profiler") and profile["nodes_mapped"]
    assert profile["sum_basis"] == "per invoke, the interpreter's Invoke"
    assert 0.5 < profile["sum_over_invoke"] <= 1.01, profile["note"]
    rows = list(csv.DictReader((run / "op_profile.csv").open()))
    assert [int(r["index"]) for r in rows] == list(range(66))
    assert rows[0]["kernel"].startswith("Convolution (NHWC, QU8)") and rows[-1]["kernel"] == "SOFTMAX"
    assert sum(float(r["median_ms"]) for r in rows) == pytest.approx(profile["sum_median_ms"], rel=1e-4)
    explorer = json.loads((run / "op_profile.model_explorer.json").read_text())
    assert len(explorer["results"]) == 66
    assert "source: LiteRT runtime profiler" in (run / "results.txt").read_text()


def test_diff_of_two_profiled_runs_gives_per_type_speedups(cpu_run, capsys):
    """The run against itself: every per-type and per-op speed-up is exactly 1 (the arithmetic and
    the plumbing; real speed-ups between runs are in docs/performance.md)."""
    code, out, _ = report(capsys, "diff", cpu_run, cpu_run, "--format", "json")
    assert code == 0
    ops = json.loads(out)["op_profile"]
    assert ops["same_graph"] and len(ops["ops"]) == 66
    assert {r["speedup"] for r in ops["by_type"].values()} == {1.0}
    code, out, _ = report(capsys, "diff", cpu_run, cpu_run)
    assert "Op profile: per op type" in out
    code, out, _ = report(capsys, "analysis", cpu_run, "--format", "html")  # benchmark: the profile only
    assert code == 0 and "Op profile: top 20 of 66 ops" in out and "Op profile: per backend" in out


def test_gpu_profile_of_efficientnet_lite0s_first_ops(tmp_path):
    """The first 4 ops of EfficientNet-Lite0 (the whole model takes minutes on lavapipe). The WebGPU
    accelerator does not implement profiling, so the record falls back to sub-model timing and
    says why."""
    try:
        check_vulkan()
    except DelegateUnavailableError as exc:
        pytest.skip(str(exc))
    path = ModelGraph(str(MODELS / "efficientnet_lite0_fp32.tflite")).write(
        str(tmp_path / "cut.tflite"), 0, 4
    )
    plan = plan_delegate({"name": "gpu", "use_gpu": True})
    whole = load_model(path, plan)
    image = np.random.default_rng(0).random(whole.inputs[0].shape, dtype=np.float32)
    profile = profile_ops(path, lambda p: load_model(p, plan), whole, [image], repeats=3, plan=plan)
    _agrees_or_says_why(profile)
    assert profile["source"].startswith("sub-model timing (the runtime's profiler was not used: a profiled")
    assert set(profile["by_backend"]) == {"GPU"} and profile["placement_source"] == "each op's own sub-model"
