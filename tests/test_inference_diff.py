"""task=inference_diff on the CPU: seed-tool inputs, the seed's output lines, honest errors, checks."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import MODELS, run_cli, run_inprocess

from evalharness.runtime.tensors import TensorInfo
from evalharness.tasks.inference_diff import output_error, seed_tool_inputs


@pytest.mark.parametrize(("dtype", "lo", "hi"), [("uint8", 0, 255), ("int8", -128, 127), ("float32", -1, 1)])
def test_seed_tool_inputs_range_and_determinism(dtype, lo, hi):
    info = TensorInfo("x", 0, (1, 32, 32, 3), dtype)
    a = seed_tool_inputs(np.random.default_rng([0, 1]), info)
    b = seed_tool_inputs(np.random.default_rng([0, 1]), info)
    assert a.dtype == np.dtype(dtype) and a.shape == (1, 32, 32, 3) and np.array_equal(a, b)
    assert a.min() >= lo and a.max() <= hi
    mid = lo + (hi - lo) * 0.5
    assert abs(float(a.astype(np.float64).mean()) - mid) < 0.05 * (hi - lo)  # N(0.5, 1/3) on [0, 1)


def test_output_error_checks_catch_what_an_average_hides():
    ref = np.linspace(-1, 1, 100)
    assert output_error(ref, ref)["avg"] == 0.0 and output_error(ref, ref)["cosine"] == pytest.approx(1.0)
    zero = output_error(ref, np.zeros(100))
    assert zero["test_abs_max"] == 0.0 and zero["avg"] == pytest.approx(0.505, abs=1e-3)
    nan = ref.copy()
    nan[3] = np.nan
    assert output_error(ref, nan)["nonfinite"] == 1
    assert output_error(ref, -ref)["cosine"] == pytest.approx(-1.0)


def test_cpu_vs_reference_on_quantized_model(tmp_path):
    doc = run_inprocess(
        [
            "task=inference_diff",
            "model=mobilenet_v2_1.0_224_quant",
            f"paths.models_dir={MODELS}",
            "task.num_runs=10",
        ],
        tmp_path,
    )
    out = doc["metrics"]["outputs"][0]
    assert doc["metrics"]["num_scored"] == 10
    # XNNPACK vs builtin kernels requantise differently: a few output steps of 1/256 differ, honestly > 0
    assert 0.0 <= out["avg_error"] < 0.01 and out["max_abs_error"] <= 0.1
    # a flat softmax quantised in 1/256 steps: a few flipped steps cost ~1 % cosine (measured min 0.989)
    assert 0.98 < out["min_cosine"] < 1.0 and not doc["metrics"]["failed_checks"]
    assert doc["reference"]["delegate"]["op_resolver"] == "builtin_without_default_delegates"
    assert doc["reference"]["delegate"]["coverage"]["ops_delegated"] == 0
    lines = (tmp_path / "results.txt").read_text().splitlines()
    assert re.fullmatch(r"Reference run latency: avg=[\d.e+]+\(us\), std_dev=[\d.e+]+\(us\)", lines[1])
    assert re.fullmatch(r"OutputDiff\[0\]: avg_error=[\d.e+-]+, std_dev=[\d.e+-]+", lines[3])


def test_tripped_check_exits_nonzero_with_metrics_written(tmp_path):
    proc = run_cli(["task=inference_diff", "task.num_runs=2", "task.min_cosine=1.5"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "check(s) failed" in proc.stderr and "low_cosine" in proc.stderr
    assert list((tmp_path / "outputs").rglob("metrics.json"))
