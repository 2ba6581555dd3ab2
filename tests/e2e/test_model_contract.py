"""A model is one contract: every backend is a Model, one Coverage layout, runners apart from delegates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_inprocess

from evalharness.core.errors import ConfigError
from evalharness.core.paths import bundled
from evalharness.runtime import Coverage, Model, backends, check_runner, load_model, plan_delegate, runners
from evalharness.runtime.android import benchmark_model as bm
from evalharness.runtime.runners import HostSettings

SAMPLES = Path(__file__).resolve().parents[1] / "fake_android" / "samples"
LAYOUT = {  # provenance.delegate.coverage in metrics.json
    "ops_total",
    "ops_delegated",
    "partitions",
    "fraction",
    "fully_accelerated",
    "ops_on_cpu_by_type",
    "unsupported_ops",
    "device",
    "source",
}


def test_every_backend_is_a_model():
    assert backends().names() == [
        "adb", "compiled_cpu", "compiled_gpu", "compiled_npu", "interpreter", "onnxruntime", "torch_export",
    ]  # fmt: skip
    for name in backends():
        assert issubclass(backends().get(name), Model), name


def test_interpreter_model_reads_the_contract_defaults():
    model = load_model(bundled("mobilenet_v1_0.25_128_quant.tflite"), plan_delegate({"name": "cpu"}))
    assert (model.timed_region, model.batch_size) == ("invoke() only", 0)
    assert model.reported_latency is None and model.memory is None and model.device is None
    assert set(model.runtime_info()) == {"name", "package", "version"}
    with pytest.raises(NotImplementedError, match="one sample at a time"):
        model.run_batch([])


def test_coverage_as_dict_is_the_metrics_json_block(tmp_path):
    doc = run_inprocess(["task.num_images=1"], tmp_path)
    written = json.loads((tmp_path / "metrics.json").read_text())["provenance"]["delegate"]["coverage"]
    model = load_model(bundled("mobilenet_v1_0.25_128_quant.tflite"), plan_delegate({"name": "cpu"}))
    assert model.coverage.as_dict() == written == doc["provenance"]["delegate"]["coverage"]
    assert set(written) == LAYOUT and set(written["device"]) == {"adapter", "software_renderer"}
    assert model.coverage == written and model.coverage["ops_total"] == 31
    assert model.coverage.get("applied") is None and "fraction" in model.coverage


def test_adb_coverage_keeps_its_extra_keys_at_the_top():
    log = (SAMPLES / "benchmark_model_new.log").read_text()
    plan = plan_delegate({"name": "nnapi"}, runner="adb")
    block = bm.coverage(bm.check_log(log, plan), plan, 31).as_dict()
    assert set(block) == LAYOUT | {"applied", "nnapi_accelerators"}
    assert block["applied"] == "NNAPI completely" and block["nnapi_accelerators"] == [
        "synap-npu",
        "nnapi-reference",
    ]


def _coverage(total, delegated) -> Coverage:
    return Coverage(total, delegated, None, False, None, [], None, None, "test")


def test_coverage_fraction_and_immutability():
    assert _coverage(4, 3).fraction == 0.75 and _coverage(3, 1).fraction == 0.333333
    assert _coverage(0, 0).fraction == 0.0 and _coverage(4, None)["fraction"] is None
    cov = Coverage(2, 1, 1, False, {"ADD": 1}, ["ADD"], "CPU", None, "test")
    cov.as_dict()["ops_on_cpu_by_type"]["MUL"] = 1  # a copy: the record is unchanged
    assert cov["ops_on_cpu_by_type"] == {"ADD": 1}
    with pytest.raises(TypeError):
        cov.ops_on_cpu_by_type["MUL"] = 1


def test_unknown_runner_lists_the_valid_ones():
    assert runners().names() == ["adb", "host"]
    with pytest.raises(ConfigError, match=r"unknown runner 'phone'; valid: adb, host"):
        check_runner({"name": "phone"}, latency_only_task=False)
    with pytest.raises(ConfigError, match=r"unknown runner 'phone'; valid: adb, host"):
        plan_delegate({"name": "cpu"}, runner="phone")


def test_runner_settings_are_checked_by_their_schema():
    assert check_runner({"name": "host"}, latency_only_task=True) == HostSettings()
    with pytest.raises(ConfigError, match="config group 'runner'.*batch_size"):
        check_runner({"name": "host", "batch_size": 4}, latency_only_task=False)


def test_validating_a_config_loads_no_backend():
    """Validation reads the model file through its guard (the flatbuffer schema: pure Python), and
    loads no interpreter, accelerator or backend module."""
    code = (
        "import sys; from conftest import compose_config; "
        "from evalharness.settings.validate import validate; "
        "validate(compose_config(['delegate=xnnpack'])); "
        "print(sorted(m for m in sys.modules if m.startswith(('ai_edge_litert', 'evalharness.runtime.lit'))))"
    )
    cwd = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['ai_edge_litert', 'ai_edge_litert.schema_py_generated']"
