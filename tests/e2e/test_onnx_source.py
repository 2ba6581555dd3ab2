"""The source model as a run: EfficientNet-Lite0 as ONNX (NCHW, ONNX Runtime) against the same
weights as .tflite (NHWC, LiteRT) on real images: the inputs are proved identical by hash, the
answers agree, and a preprocessing drift on one side is caught by the input hash, naming the image.
Lean on purpose: 8 images of val50 (the full val50 figure is in docs/source-models.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MODELS, lite0_on_val50, run_cli, runs_fixture

from evalharness.report.commands.entry import main as report_main

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed (pip install 'evalharness[onnx]')")
pytest.importorskip("onnx", reason="the onnx extra is not installed (pip install 'evalharness[onnx]')")

ONNX = MODELS / "efficientnet_lite0_fp32_nchw.onnx"
TFLITE = MODELS / "efficientnet_lite0_fp32.tflite"
IMAGES = 8
COMMON = lite0_on_val50(IMAGES)


def _records(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


runs = runs_fixture(
    COMMON,
    {
        "tflite": [f"model.path={TFLITE}"],
        "onnx": [f"model.path={ONNX}"],
        "onnx_drift": [f"model.path={ONNX}", "model.preprocess.resize=pil_bilinear"],
    },
)


def _diff(capsys, a: Path, b: Path) -> dict:
    assert report_main(["diff", str(a), str(b), "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_onnx_runs_as_any_run_with_its_runtime_recorded(runs):
    doc = json.loads((runs["onnx"] / "metrics.json").read_text())
    runtime = doc["provenance"]["runtime"]
    assert runtime["name"] == "onnxruntime" and runtime["version"]
    assert doc["provenance"]["preprocessing"]["input"]["layout"] == "nchw"
    said = [a for a in doc["provenance"]["assumptions"] if a["what"] == "backend"]
    assert len(said) == 1 and said[0]["assumed"].startswith("ONNX Runtime ")
    assert (runs["onnx"] / "results.txt").read_text().count("Assumed:  backend = ONNX Runtime") == 1


def test_inputs_identical_by_hash_and_top5_equal(runs, capsys):
    diff = _diff(capsys, runs["tflite"], runs["onnx"])
    assert diff["inputs"]["identical"] == diff["inputs"]["paired"] == IMAGES
    assert diff["inputs"]["summary"].startswith(f"inputs identical on {IMAGES}/{IMAGES} images")
    assert "layout nhwc vs nchw" in diff["inputs"]["summary"]  # the tensors differ in form only
    lite, onnx = _records(runs["tflite"]), _records(runs["onnx"])
    assert lite.keys() == onnx.keys()
    for key in lite:
        assert lite[key]["input_float_sha256"] == onnx[key]["input_float_sha256"]
        assert lite[key]["input_sha256"] != onnx[key]["input_sha256"]  # NHWC vs NCHW bytes
        assert lite[key]["topk"][:5] == onnx[key]["topk"][:5], key
        assert onnx[key]["scores"][:5] == pytest.approx(lite[key]["scores"][:5], abs=1e-3)


def test_a_resize_drift_is_caught_by_the_input_hash(runs, capsys):
    diff = _diff(capsys, runs["onnx"], runs["onnx_drift"])
    first = sorted(_records(runs["onnx"]))[0]
    found = diff["inputs"]["first_differing"]
    assert found["id"] == first
    assert "preprocess.resize pil_bicubic vs pil_bilinear" in found["how"]
    assert "values: max abs diff" in found["how"]  # both inputs rebuilt to their recorded hashes
    assert diff["inputs"]["summary"].startswith(f"inputs differ on {IMAGES}/{IMAGES} images; first: {first}")


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("delegate=gpu", "delegate=gpu"),
        ("quant=int8", "quant=int8"),
        ("loop.op_profile=true", "loop.op_profile"),
    ],
)
def test_what_only_a_tflite_has_is_one_error_line(tmp_path, override, key):
    done = run_cli([f"model.path={ONNX}", *COMMON, override, f"hydra.run.dir={tmp_path / 'r'}"], tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {key}") and "ONNX" in errors[0]
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_inspect_says_a_source_model_in_one_line(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "evalharness", "inspect", str(ONNX)], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert (
        done.stderr.count("error:") == 1
        and "is an ONNX model" in done.stderr
        and "Traceback" not in done.stderr
    )


@pytest.fixture(scope="module")
def defect_onnx(tmp_path_factory) -> Path:
    """The ONNX model with one initializer scaled (the stem's 3x3 kernels x2): a conversion defect."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(ONNX))
    weight = next(t for t in model.graph.initializer if tuple(t.dims) == (32, 1, 3, 3))
    weight.CopyFrom(
        numpy_helper.from_array(numpy_helper.to_array(weight).astype(np.float32) * 2, weight.name)
    )
    path = tmp_path_factory.mktemp("defect") / "converted_defect.onnx"
    onnx.save(model, str(path))
    return path


def test_the_chain_names_the_step_with_the_planted_defect(tmp_path, defect_onnx):
    """source.onnx -> a converted copy with a scaled initializer -> the real .tflite: the waterfall
    names the defect's step as the one that loses most, with its changed images."""
    out = tmp_path / "chain"
    chain = f"model.path={ONNX},{defect_onnx},{TFLITE}"
    done = run_cli(["compare", "--chain", chain, *COMMON, "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads((out / "chain.json").read_text())
    source, defect, tflite = doc["rows"]
    changes = [r["change"] for r in doc["rows"]]
    assert changes == [f"model.path={p.stem}" for p in (ONNX, defect_onnx, TFLITE)]
    assert defect["delta"] < 0 and defect["answers_changed"] > 0 and tflite["delta"] > 0
    assert defect["inputs"]["identical"] == tflite["inputs"]["identical"] == IMAGES  # same inputs throughout
    assert defect["snr_db"] < 30 and tflite["snr_db"] < 30
    loser = doc["loses_most"]
    assert loser["step"] == 1 and loser["changed_samples"] == defect["changed_samples"]
    assert "loses most: step 1 (model.path=converted_defect)" in done.stdout
    assert defect["changed_samples"][0] in done.stdout


def test_a_chain_step_that_cannot_run_is_one_error_before_anything_runs(tmp_path):
    out = tmp_path / "chain"
    done = run_cli(["compare", "--chain", f"model.path={ONNX},{TFLITE}", "delegate=gpu,cpu", *COMMON,
                    "--out", str(out)], tmp_path)  # fmt: skip
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: chain step 0") and "delegate=gpu" in errors[0]
    assert not out.exists()
