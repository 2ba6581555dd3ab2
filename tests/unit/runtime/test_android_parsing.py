"""benchmark_model's line formats (verbatim samples of each generation) and the delegate flag map."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import compose_config

from evalharness.core.errors import ConfigError, DelegateUnavailableError, EvalHarnessError
from evalharness.runtime import plan_delegate
from evalharness.runtime.android import benchmark_model as bm
from evalharness.settings.validate import validate

SAMPLES = Path(__file__).resolve().parents[2] / "fake_android" / "samples"
NEW_LOG = (SAMPLES / "benchmark_model_new.log").read_text()  # verbatim device logs of each generation
OLD_LOG = (SAMPLES / "benchmark_model_old.log").read_text()


def nnapi_plan(**flags):
    return plan_delegate({"name": "nnapi", **flags}, runner="adb")


def test_stat_line_forms():
    full = bm.parse_stat(
        "INFO: count=50 first=900416 curr=898333 min=898007 max=906121 avg=899641 std=1549 "
        "p5=898333 median=899281 p95=904305"
    )
    assert (
        full["count"] == 50 and full["mean"] == pytest.approx(899.641) and full["std"] == pytest.approx(1.549)
    )
    assert (full["min"], full["max"], full["p5"], full["p50"], full["p95"]) == pytest.approx(
        (898.007, 906.121, 898.333, 899.281, 904.305)
    )
    plain = bm.parse_stat("count=215 first=12231 curr=2106 min=2065 max=12231 avg=2331.42 std=746")
    assert (
        plain["mean"] == pytest.approx(2.33142)
        and "p50" not in plain
        and plain["first"] == pytest.approx(12.231)
    )
    same = bm.parse_stat("count=100 curr=2500(all same)")
    assert same == {
        "count": 100,
        "mean": 2.5,
        "std": 0.0,
        "min": 2.5,
        "max": 2.5,
        "first": 2.5,
        "last": 2.5,
        "p50": 2.5,
    }
    one = bm.parse_stat("INFO: count=1 curr=905463 p5=905463 median=905463 p95=905463")
    assert (
        one["count"] == 1 and one["mean"] == pytest.approx(905.463) and one["p95"] == pytest.approx(905.463)
    )
    assert bm.parse_stat("INFO: count=0") == {"count": 0}
    assert bm.parse_stat("INFO: Loaded model x.tflite") is None


def test_new_generation_summary_and_memory():
    lat = bm.parse_latency(NEW_LOG)
    assert lat["init"] == pytest.approx(66.002) and lat["first_inference"] == pytest.approx(637.079)
    assert lat["warmup"]["count"] == 9 and lat["inference"]["count"] == 520
    assert lat["inference"]["mean"] == pytest.approx(1.88574)
    mem = bm.parse_memory(NEW_LOG)
    assert (mem["init_delta"], mem["overall_delta"], mem["peak"]) == (55.4961, 55.4961, 62.1094)


def test_old_generation_summary():
    lat = bm.parse_latency(OLD_LOG)
    assert lat["init"] == pytest.approx(38.467) and lat["inference"]["mean"] == pytest.approx(79.732)
    assert lat["warmup"]["count"] == 1 and lat["first_inference"] == pytest.approx(83.235)
    no_stats = bm.parse_latency(
        "Average inference timings in us: Warmup: 2331.42, Init: 896, no stats: 2177.1"
    )
    assert no_stats["init"] == pytest.approx(0.896) and no_stats["inference"]["mean"] == pytest.approx(2.1771)
    assert bm.parse_memory(OLD_LOG) == {"note": bm.parse_memory("")["note"]}


def test_single_run_with_no_warmup_has_nan_warmup():
    lat = bm.parse_latency(
        "INFO: count=0\nINFO: count=1 curr=7000\n"
        "INFO: Inference timings in us: Init: 5000, First inference: 0, Warmup (avg): nan, "
        "Inference (avg): 7000"
    )
    assert (
        lat["first_inference"] is None and lat["inference"]["mean"] == 7.0 and lat["warmup"] == {"count": 0}
    )
    with pytest.raises(EvalHarnessError, match="Inference timings"):
        bm.parse_latency("INFO: STARTING!\nSegmentation fault")


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            "INFO: Replacing 31 node(s) with delegate (TfLiteNnapiDelegate) node, yielding 1 partitions.",
            (31, None, "TfLiteNnapiDelegate", 1),
        ),
        (
            "Replacing 60 out of 66 node(s) with delegate (TfLiteGpuDelegateV2) node, yielding 2 partitions.",
            (60, 66, "TfLiteGpuDelegateV2", 2),
        ),
        (
            "VERBOSE: Replacing 31 out of 31 node(s) with delegate (TfLiteNnapiDelegate) node, "
            "yielding 1 partitions "
            "for the whole graph.",
            (31, 31, "TfLiteNnapiDelegate", 1),
        ),
        (
            "INFO: Replacing 64 out of 66 node(s) with delegate (TfLiteXNNPackDelegate) node, "
            "yielding 2 partitions "
            "for subgraph 0.",
            (64, 66, "TfLiteXNNPackDelegate", 2),
        ),
    ],
)
def test_replacing_line_forms(line, expected):
    (r,) = bm.parse_delegation(line)["replacing"]
    assert (r["nodes"], r["of"], r["delegate"], r["partitions"]) == expected


def test_applied_lines_and_coverage():
    info = bm.check_log(NEW_LOG, nnapi_plan())
    assert info["applied"] == ("NNAPI", "completely") and info["accelerators"] == [
        "synap-npu",
        "nnapi-reference",
    ]
    cov = bm.coverage(info, nnapi_plan(), 31)
    assert (cov["ops_delegated"], cov["partitions"], cov["fraction"], cov["fully_accelerated"]) == (
        31,
        1,
        1.0,
        True,
    )
    partial = bm.check_log(OLD_LOG, nnapi_plan())
    assert partial["applied"] == ("NNAPI", "partially") and partial["kernels"] == 2
    assert bm.coverage(partial, nnapi_plan(), 40)["ops_delegated"] == 31  # old form: no "out of M"
    assert bm.coverage(partial, nnapi_plan(), 40)["fully_accelerated"] is False
    disagree = bm.coverage(info, nnapi_plan(), 35)  # device graph != host graph: unknown, not a guess
    assert disagree["ops_delegated"] is None and disagree["fraction"] is None


@pytest.mark.parametrize(
    "log, plan_flags, match",
    [
        ("WARNING: Unconsumed cmdline flags: --delegate_serialize_dir=cache\n" + NEW_LOG, {}, "Unconsumed"),
        ("STARTING!\nUnconsumed cmdline flags: --allow_fp16\n" + OLD_LOG, {}, "--allow_fp16"),
        (NEW_LOG, {"nnapi_accelerator_name": "google-edgetpu"}, "google-edgetpu.*synap-npu, nnapi-reference"),
        (
            "INFO: Though NNAPI delegate is explicitly applied, the model graph will not be executed by the "
            "delegate.\nINFO: Inference timings in us: Init: 1, First inference: 2, Warmup (avg): 2, "
            "Inference (avg): 2",
            {},
            "took no node",
        ),
        (
            "INFO: Use NNAPI: [1]\nWARNING: NNAPI acceleration is unsupported on this platform.\n",
            {},
            "did not apply",
        ),
    ],
)
def test_what_benchmark_model_only_warns_about_is_an_error(log, plan_flags, match):
    with pytest.raises(DelegateUnavailableError, match=match) as info:
        bm.check_log(log, nnapi_plan(**plan_flags))
    assert len(str(info.value).splitlines()) == 1


def test_flag_mapping_mirrors_the_registrar():
    assert bm.device_flags(
        nnapi_plan(
            nnapi_accelerator_name="qti-dsp",
            nnapi_execution_preference="sustained_speed",
            max_delegated_partitions=3,
        )
    ) == [
        "--num_threads=1",
        "--use_nnapi=true",
        "--nnapi_accelerator_name=qti-dsp",
        "--nnapi_execution_preference=sustained_speed",
        "--disable_nnapi_cpu=true",
        "--nnapi_allow_fp16=false",
        "--max_delegated_partitions=3",
    ]
    gpu = plan_delegate(
        {"name": "gpu", "gpu_backend": "cl", "gpu_precision_loss_allowed": False}, runner="adb"
    )
    assert bm.device_flags(gpu) == [
        "--num_threads=1",
        "--use_gpu=true",
        "--gpu_precision_loss_allowed=false",
        "--gpu_experimental_enable_quant=true",
        "--gpu_backend=cl",
    ]
    hexagon = plan_delegate(
        {"name": "hexagon", "num_threads": 4, "require_full_delegation": True}, runner="adb"
    )
    assert bm.device_flags(hexagon) == [
        "--num_threads=4",
        "--require_full_delegation=true",
        "--use_hexagon=true",
        "--hexagon_lib_path=/data/local/tmp",
    ]
    assert bm.device_flags(plan_delegate({"name": "reference"}, runner="adb"))[-1] == "--use_xnnpack=false"
    assert bm.device_flags(plan_delegate({"name": "xnnpack", "xnnpack_force_fp16": True}, runner="adb"))[
        1:
    ] == ["--use_xnnpack=true", "--xnnpack_force_fp16=true"]
    ext = plan_delegate(
        {
            "name": "external",
            "external_delegate_path": "/data/local/tmp/libd.so",
            "external_delegate_options": "a:1;b:2",
        },
        runner="adb",
    )
    assert bm.device_flags(ext)[1:] == [
        "--external_delegate_path=/data/local/tmp/libd.so",
        "--external_delegate_options=a:1;b:2",
    ]
    assert bm.device_flags(plan_delegate({"name": "cpu"}, runner="adb")) == ["--num_threads=1"]


@pytest.mark.parametrize(
    "raw, error",
    [
        ({"name": "coreml"}, DelegateUnavailableError),
        ({"name": "gpu", "gpu_backend": "webgpu"}, ConfigError),
        ({"name": "nnapi", "nnapi_execution_preference": "fastest"}, ConfigError),
        ({"name": "external", "external_delegate_path": "libd.so"}, ConfigError),
        ({"name": "cpu", "num_threads": 0}, ConfigError),  # the host's thread check holds on the phone too
    ],
)
def test_device_plans_refuse_what_benchmark_model_cannot_do(raw, error):
    with pytest.raises(error):
        plan_delegate(raw, runner="adb")


def test_runner_config_validates(tmp_path):
    binary = tmp_path / "benchmark_model"
    binary.write_bytes(b"\x7fELF")
    rc = validate(compose_config(["delegate=nnapi", "runner=adb", f"runner.benchmark_binary={binary}"]))
    assert rc.delegate_plan.backend == "adb" and rc.runner.device_dir == "/data/local/tmp/evalharness"
    with pytest.raises(DelegateUnavailableError, match="runner=adb"):  # on the host NNAPI is still refused
        validate(compose_config(["delegate=nnapi"]))
    with pytest.raises(ConfigError, match="task=benchmark"):
        validate(compose_config(["task=benchmark", "runner=adb", f"runner.benchmark_binary={binary}"]))
    with pytest.raises(ConfigError, match="not found"):
        validate(compose_config(["runner=adb", f"runner.benchmark_binary={tmp_path}/missing"]))


def test_a_devices_output_file_is_split_by_the_models_output_sizes():
    from types import SimpleNamespace

    import numpy as np

    from evalharness.core.tensors import TensorInfo
    from evalharness.runtime.android.backend import AdbModel

    outputs = [TensorInfo("boxes", 0, (1, 2), "float32"), TensorInfo("count", 1, (1,), "uint8")]
    model = SimpleNamespace(outputs=outputs)
    raw = np.array([1.5, -2.0], np.float32).tobytes() + bytes([7])
    boxes, count = AdbModel._split(model, raw, 0)  # type: ignore[arg-type]
    assert boxes.tolist() == [[1.5, -2.0]] and count.tolist() == [7]
    with pytest.raises(EvalHarnessError, match=r"image #3: benchmark_model wrote 8 output bytes, .* take 9"):
        AdbModel._split(model, raw[:8], 3)  # type: ignore[arg-type]
