"""delegate=gpu for real: the LiteRT GPU accelerator over Vulkan (lavapipe on a host without a GPU).

Skipped, with the reason printed, only where no Vulkan driver exists (.ci/install-vulkan.sh
installs Mesa's lavapipe in CI). On lavapipe the first invoke compiles shaders (tens of seconds)
and invokes run at software speed: these tests check results and records, never speed.
"""

from __future__ import annotations

import json

import pytest
from conftest import ASSETS, CLASSIFIERS, MODELS, VAL50, run_inprocess, task_lines

from evalharness.core.errors import DelegateUnavailableError
from evalharness.runtime.compiled import check_vulkan, parse_gpu_log

try:
    check_vulkan()
    NO_VULKAN = None
except DelegateUnavailableError as exc:
    NO_VULKAN = str(exc)
    print(f"GPU tests skipped: {NO_VULKAN}")

pytestmark = pytest.mark.skipif(NO_VULKAN is not None, reason=NO_VULKAN or "")

FULLY_ACCELERATED = {
    "mobilenet_v1_0.25_128_quant",
    "mobilenet_v2_1.0_224_quant",
    "tf2_mobilenet_v2_1.0_224_ptq",
    "efficientnet_lite0_fp32",
}


# val50's first images on the software renderer: lavapipe runs a 224 px model at a few images per
# second, so the whole 50 cost minutes of CI per model; the CPU side is the same images' predictions
GPU_IMAGES = 20


@pytest.fixture(scope="module")
def gpu_runs(tmp_path_factory):
    cache: dict = {}

    def get(model: str) -> dict:
        if model not in cache:
            run_dir = tmp_path_factory.mktemp(model)
            overrides = [*VAL50, f"model={model}", "delegate=gpu", f"task.num_images={GPU_IMAGES}"]
            cache[model] = run_inprocess(overrides, run_dir)
            cache[model]["_dir"] = run_dir
        return cache[model]

    return get


def _top1_right(predictions: list[dict], ids: set[str]) -> int:
    return sum(1 for p in predictions if p["id"] in ids and p["rank"] == 0)


@pytest.mark.parametrize("model", [*CLASSIFIERS, "efficientnet_lite0_fp32"])
def test_gpu_top1_within_one_image_of_cpu(gpu_runs, val50_runs, model):
    gpu = gpu_runs(model)
    gpu_preds = [json.loads(line) for line in (gpu["_dir"] / "predictions.jsonl").read_text().splitlines()]
    ids = {p["id"] for p in gpu_preds}
    _, cpu_preds = val50_runs(model, "cpu")
    assert len(ids) == GPU_IMAGES and ids <= {p["id"] for p in cpu_preds}
    assert abs(_top1_right(gpu_preds, ids) - _top1_right(cpu_preds, ids)) <= 1
    d = gpu["provenance"]["delegate"]
    assert d["name"] == "gpu" and d["coverage"]["device"]["adapter"]
    assert "readback" in gpu["latency_ms"]["timed_region"]


@pytest.mark.parametrize("model", sorted(FULLY_ACCELERATED - {"efficientnet_lite0_fp32"}))
def test_quantized_mobilenets_fully_on_gpu(gpu_runs, model):
    cov = gpu_runs(model)["provenance"]["delegate"]["coverage"]
    assert cov["fully_accelerated"] is True
    assert cov["ops_delegated"] == cov["ops_total"] and cov["unsupported_ops"] == []


def test_edgetpu_partial_coverage_names_the_cpu_op(gpu_runs):
    cov = gpu_runs("mobilenet_edgetpu_224_1.0_uint8")["provenance"]["delegate"]["coverage"]
    assert (cov["ops_delegated"], cov["ops_total"]) == (75, 78)
    assert cov["fully_accelerated"] is False
    assert cov["unsupported_ops"] == ["SQUEEZE: Operation is not supported."]
    assert cov["ops_on_cpu_by_type"] is None  # the accelerator does not say which 3 ops: unknown, not guessed


def test_ssd_partial_coverage_63_of_64(tmp_path):
    doc = run_inprocess(
        [
            "task=coco",
            f"paths.models_dir={MODELS}",
            f"paths.data_dir={ASSETS}",
            "dataset=coco_val5",
            "delegate=gpu",
        ],
        tmp_path,
    )
    cov = doc["provenance"]["delegate"]["coverage"]
    assert (cov["ops_delegated"], cov["ops_total"]) == (63, 64)
    assert cov["unsupported_ops"] == ["CUSTOM TFLite_Detection_PostProcess: TFLite_Detection_PostProcess"]
    assert 0.0 < doc["metrics"]["AP"] < 1.0


def test_software_renderer_is_recorded_as_such(gpu_runs):
    """lavapipe (llvmpipe) is recorded as a software renderer, any other adapter as hardware (both
    sides on described adapters: tests/unit/runtime/test_gpu_adapter.py)."""
    device = gpu_runs("mobilenet_v1_0.25_128_quant")["provenance"]["delegate"]["coverage"]["device"]
    assert device["software_renderer"] is ("llvmpipe" in device["adapter"]), device


def test_require_full_delegation_refuses_partial_gpu(tmp_path):
    with pytest.raises(DelegateUnavailableError, match="SQUEEZE"):
        run_inprocess(
            [
                *VAL50,
                "model=mobilenet_edgetpu_224_1.0_uint8",
                "delegate=gpu",
                "delegate.require_full_delegation=true",
                "task.num_images=1",
            ],
            tmp_path,
        )


@pytest.fixture(scope="module")
def float_diff(tmp_path_factory):
    def run(fp32: bool) -> tuple[dict, list[str]]:
        run_dir = tmp_path_factory.mktemp("diff32" if fp32 else "diff16")
        doc = run_inprocess(
            [
                "task=inference_diff",
                "model=efficientnet_lite0_fp32",
                f"paths.models_dir={MODELS}",
                "delegate=gpu",
                f"delegate.gpu_precision_loss_allowed={str(not fp32).lower()}",
                "task.num_runs=5",
            ],
            run_dir,
        )
        return doc, task_lines(run_dir)

    return run


def test_inference_diff_gpu_fp16_error_is_small_but_real(float_diff):
    doc, lines = float_diff(False)
    assert lines[0] == "Num evaluation runs: 5"
    assert lines[1].startswith("Reference run latency: avg=") and lines[1].endswith("(us)")
    assert lines[2].startswith("Test run latency: avg=")
    assert lines[3].startswith("OutputDiff[0]: avg_error=")
    out = doc["metrics"]["outputs"][0]
    # fp16 keeps ~11 significant bits: ~5e-4 relative per op; over ~60 layers on logits of magnitude
    # ~10 that is errors of order 1e-2 (measured 0.017), far below a class-changing 1.0.
    assert 1e-4 < out["avg_error"] < 0.1
    assert out["min_cosine"] > 0.999 and not doc["metrics"]["failed_checks"]


def test_inference_diff_gpu_enforced_fp32_is_orders_tighter(float_diff):
    fp16 = float_diff(False)[0]["metrics"]["outputs"][0]["avg_error"]
    fp32 = float_diff(True)[0]["metrics"]["outputs"][0]["avg_error"]
    assert fp32 < 1e-4 and fp32 < fp16 / 100  # measured 1.9e-6 vs 1.7e-2


def test_parse_gpu_log_lines():
    info = parse_gpu_log(
        [
            "I0000 environment.cc:532] Selected adapter: llvmpipe (LLVM 15.0.6), arch=software, vendor=mesa",
            "ERROR: Following operations are not supported by GPU delegate:",
            "SQUEEZE: Operation is not supported.",
            "75 operations will run on the GPU, and the remaining 3 operations will run on the CPU.",
        ]
    )
    assert info["gpu_ops"] == 75 and info["cpu_ops"] == 3 and info["software_renderer"] is True
    assert info["unsupported"] == ["SQUEEZE: Operation is not supported."]
    assert json.dumps(parse_gpu_log([]))  # nothing printed -> all unknown, still serialisable
