"""explain across a conversion: an ONNX source run against the .tflite converted from it. Every
.tflite op is mapped to its ONNX tensor and compared on the same images; a planted conversion defect
(the first depthwise kernels scaled x2 in the ONNX file) is named as the op where the two diverge,
with the changed images at the outputs. Lean: 5 images of val50."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ASSETS, MODELS, make_runs

from evalharness.core.paths import BUNDLED_DIR
from evalharness.explain.__main__ import main

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed (pip install 'evalharness[onnx]')")
pytest.importorskip("onnx", reason="the onnx extra is not installed (pip install 'evalharness[onnx]')")

ONNX = MODELS / "efficientnet_lite0_fp32_nchw.onnx"
TFLITE = MODELS / "efficientnet_lite0_fp32.tflite"
COMMON = [
    f"paths.data_dir={ASSETS}",
    "dataset=imagenet_val50",
    "task.num_images=5",
    f"model.labels={BUNDLED_DIR / 'imagenet_classes.txt'}",
    "model/preprocess=efficientnet",
]


def _plant_defect(folder: Path) -> None:
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(ONNX))
    weight = next(t for t in model.graph.initializer if tuple(t.dims) == (32, 1, 3, 3))
    scaled = numpy_helper.to_array(weight).astype(np.float32) * 2
    weight.CopyFrom(numpy_helper.from_array(scaled, weight.name))
    folder.mkdir()
    onnx.save(model, str(folder / "converted_defect.onnx"))


@pytest.fixture(scope="module")
def runs(run_store) -> dict[str, Path]:
    defect = run_store.once("explain_conversion_defect", _plant_defect) / "converted_defect.onnx"
    paths = {"tflite": TFLITE, "source": ONNX, "defect": defect}
    return make_runs(run_store, COMMON, {name: [f"model.path={path}"] for name, path in paths.items()})


def _explain(runs, a: str, b: str, tmp_path: Path, capsys) -> tuple[dict, str]:
    out = tmp_path / f"explain_{a}"
    assert main([str(runs[a]), str(runs[b]), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "error:" not in captured.err
    return json.loads((out / "explain.json").read_text()), captured.out


def test_a_planted_defect_is_named_where_the_graphs_diverge(runs, tmp_path, capsys):
    doc, text = _explain(runs, "defect", "tflite", tmp_path, capsys)
    mapping = doc["mapping"]
    assert mapping["mapped"] == mapping["tflite_ops"] == 60 and mapping["by_name"] == 60
    diverged = doc["diverges_at"]
    assert diverged["op"] == 1 and diverged["type"] == "DEPTHWISE_CONV_2D" and diverged["snr_db"] < 20
    assert doc["ops"][0]["controls"]["snr_db"] > 80  # the stem before it: the same numbers
    changed = doc["images"]["changed"]
    assert changed and {o["id"] for o in doc["outputs"] if o["group"] == "changed"} == set(changed)
    assert "mapped 60/60 .tflite ops to ONNX tensors" in text
    assert "diverges (first op below 40 dB): op 1 DEPTHWISE_CONV_2D" in text


def test_a_faithful_conversion_diverges_nowhere(runs, tmp_path, capsys):
    doc, text = _explain(runs, "source", "tflite", tmp_path, capsys)
    assert doc["diverges_at"] is None and doc["images"]["changed"] == []
    assert all(r["controls"]["snr_db"] > 80 for r in doc["ops"])
    assert all(o["source_top1"] == o["tflite_top1"] for o in doc["outputs"])
    assert "diverges: no mapped op falls below 40 dB" in text
