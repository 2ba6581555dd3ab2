"""``evalharness inspect``: the file's own facts, the inferred configuration, and what each delegate
really took when it prepared the model (measured by the runtime, on every shared model)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path

import cli_fork
import pytest
from conftest import MODELS

from evalharness.core.errors import DelegateUnavailableError
from evalharness.runtime.compiled import check_vulkan
from evalharness.runtime.delegates import DELEGATES

SHARED = sorted(p.name for p in MODELS.glob("*.tflite"))


def _vulkan_missing() -> str | None:
    try:
        check_vulkan()
    except DelegateUnavailableError as exc:
        return str(exc)
    return None


def _inspect(*args: str) -> subprocess.CompletedProcess:
    return cli_fork.run(
        [sys.executable, "-m", "evalharness", "inspect", *args], capture_output=True, text=True, timeout=300
    )


def _inspect_into(name: str, folder: Path) -> None:
    r = _inspect(str(MODELS / name), "--json")
    assert r.returncode == 0, r.stderr
    folder.mkdir()
    (folder / "inspect.json").write_text(r.stdout)


@pytest.fixture
def reports(run_store) -> dict:
    """model name -> its ``inspect --json`` report, made once per session when a test first asks
    (each model's on whichever worker runs its test: every delegate is prepared, the GPU's shaders
    compiled, so the models are spread, not inspected one after another in one module fixture)."""

    class Reports(dict):
        def __missing__(self, name: str) -> dict:
            folder = run_store.once(f"inspect-{name}", functools.partial(_inspect_into, name))
            self[name] = json.loads((folder / "inspect.json").read_text())
            return self[name]

    return Reports()


@pytest.mark.parametrize("name", SHARED)
def test_json_fields_on_every_shared_model(reports, name):
    doc = reports[name]
    assert doc["bytes"] == (MODELS / name).stat().st_size
    (inp,) = doc["inputs"]
    assert set(inp) == {"name", "shape", "dtype", "quantization"} and len(inp["shape"]) == 4
    assert doc["inferred"]["layout"] == ("nchw" if "nchw" in name else "nhwc")
    assert set(doc["delegates"]) == set(DELEGATES.names())  # every registered delegate, generically
    total = sum(doc["op_histogram"].values())
    cpu = doc["delegates"]["cpu"]
    assert cpu["status"] == "prepared" and cpu["coverage"]["ops_total"] == total
    ref = doc["delegates"]["reference"]["coverage"]
    assert ref["ops_delegated"] == 0 and sum(ref["ops_on_cpu_by_type"].values()) == total
    for report in doc["delegates"].values():
        assert report["status"] in ("prepared", "unavailable", "error")
        assert report["status"] == "prepared" or (report.get("reason") or report.get("error"))
    if name.startswith(("mobilenet_v", "tf2_")):
        assert doc["labels"] == {"count": 1001, "source": "imagenet_labels.txt"}
        assert doc["normalization"] == {"mean": [127.5], "std": [127.5]}
        assert doc["metadata"]["name"] == "ImageClassifier" and doc["inferred"]["kind"] == "classifier"
        assert doc["inferred"]["settings_source"]["labels"] == "model file (imagenet_labels.txt)"
    else:
        assert doc["labels"] is None and doc["normalization"] is None


def test_ssd_is_a_detector_and_the_gpu_leaves_its_post_process_on_the_cpu(reports):
    doc = reports["ssd_mobilenet_v1_coco_quant_postprocess.tflite"]
    assert doc["op_histogram"]["TFLite_Detection_PostProcess"] == 1
    assert doc["inferred"]["kind"] == "detector"
    assert doc["inferred"]["settings"]["decoder"]["name"] == "ssd_postprocess"
    assert doc["inferred"]["settings"]["preprocess"]["crop"] == "none"  # stretched, not cropped
    cpu = doc["delegates"]["cpu"]["coverage"]
    assert cpu["ops_on_cpu_by_type"]["TFLite_Detection_PostProcess"] == 1
    gpu = doc["delegates"]["gpu"]
    if (missing := _vulkan_missing()) is not None:
        assert gpu["status"] == "unavailable" and gpu["reason"], missing
        return
    assert gpu["status"] == "prepared"
    assert gpu["coverage"]["ops_total"] == 64 and gpu["coverage"]["ops_delegated"] == 63
    assert any("TFLite_Detection_PostProcess" in op for op in gpu["coverage"]["unsupported_ops"])


def test_text_report(tmp_path):
    r = _inspect(str(MODELS / "mobilenet_v2_1.0_224_quant.tflite"), "--delegate", "cpu")
    assert r.returncode == 0, r.stderr
    assert "labels: 1001 from imagenet_labels.txt" in r.stdout
    assert "  cpu: 64/66 ops delegated, 2 partition(s)" in r.stdout
    assert "normalization: {'mean': [127.5], 'std': [127.5]}" in r.stdout


def test_not_a_model_is_one_error_line(tmp_path):
    bad = tmp_path / "x.tflite"
    bad.write_text("hello")
    r = _inspect(str(bad))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"error: model.path={bad}: not a .tflite flatbuffer (no TFL3 identifier)"
    ]
