"""An integer input fed as its file says (``model.preprocess.integer_input=auto``, the presets' value).

The bundled MobileNet's uint8 input (scale 1/128, zero point 128, mean/std 127.5) holds pixels as
they are, so TFLite's eval tool's recipe stays (every figure of the tool's e2e tests is unchanged).
The same network re-exported with the official EfficientNet-Lite0 int8's input range (scale 0.012566,
zero point 131: pixels as they are would span [-1.65, 1.56], not [-1, 1]) is fed the file's
arithmetic by default, says so in one ``Assumed:`` line, and ``integer_input=tool`` still feeds the
tool's pixels (the very tensors the bundled model's run fed)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli, run_inprocess

from evalharness.core.paths import bundled
from evalharness.runtime.modelgen import with_input_quantization

LITE0_INPUT = (0.012566, 131)  # the official EfficientNet-Lite0 int8's uint8 input


def _records(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def lite0_range(tmp_path_factory):
    """(folder, the default run's document, the tool run's document, its printed output)."""
    folder = tmp_path_factory.mktemp("lite0_range")
    model = with_input_quantization(
        bundled("mobilenet_v1_0.25_128_quant.tflite"), str(folder / "lite0_range.tflite"), *LITE0_INPUT
    )
    default = run_inprocess(["model=file", f"model.path={model}"], folder / "default")
    tool = run_cli(
        [f"model.path={model}", "model.preprocess.integer_input=tool", "hydra.run.dir=tool"], cwd=folder
    )
    assert tool.returncode == 0, tool.stderr
    tool_doc = json.loads((folder / "tool/metrics.json").read_text())
    return folder, default, tool_doc, tool.stdout


def test_default_feeds_the_files_arithmetic_and_says_so(lite0_range, sample_run):
    folder, doc, _, _ = lite0_range
    pre = doc["provenance"]["preprocessing"]
    assert (
        pre["integer_input"] == "quantize"
        and doc["provenance"]["config"]["model"]["preprocess"]["integer_input"] == "auto"
    )
    fed = pre["fed"]
    assert fed["dtype"] == "uint8"
    assert fed["arithmetic"] == "uint8 = clip(round((x - 127.5) / 127.5 / 0.012566) + 131, 0, 255)"
    assert fed["values"]["zero_point"] == 131 and fed["values"]["mean"] == [127.5] * 3
    assert fed["sources"]["mean"] == fed["sources"]["std"] == "model file (NormalizationOptions)"
    assert fed["sources"]["scale"] == "model file (input tensor)"
    assert fed["sources"]["integer_input"].startswith("preset: auto, the file's uint8 input does not hold")
    summary = (folder / "default/results.txt").read_text()
    assert summary.count("Assumed:  model.preprocess.integer_input = quantize") == 1
    assert "else set model.preprocess.integer_input=tool for results comparable with TFLite's" in summary
    # the network sees the range it was made for: its answers are the bundled model's, nearly
    original = {r["id"]: r["topk"][:5] for r in _records(sample_run)}
    quantized = {r["id"]: r["topk"][:5] for r in _records(folder / "default")}
    tool = {r["id"]: r["topk"][:5] for r in _records(folder / "tool")}
    overlap = {
        name: sum(len(set(run[i]) & set(original[i])) for i in original)
        for name, run in (("quantized", quantized), ("tool", tool))
    }
    assert overlap["quantized"] > overlap["tool"], overlap


def test_integer_input_tool_feeds_the_tools_pixels(lite0_range, sample_run):
    folder, default, doc, stdout = lite0_range
    pre = doc["provenance"]["preprocessing"]
    assert pre["integer_input"] == "tool"
    assert pre["fed"]["arithmetic"].startswith("uint8 = trunc(x): pixels as they are")
    assert pre["fed"]["sources"] == {"integer_input": "command line"}
    assert "Assumed:  model.preprocess.integer_input" not in stdout
    fed = {r["id"]: r["input_sha256"] for r in _records(folder / "tool")}
    assert fed == {r["id"]: r["input_sha256"] for r in _records(sample_run)}  # the tool's very tensors
    assert fed != {r["id"]: r["input_sha256"] for r in _records(folder / "default")}
    # the key given replaces that key only: mean/std stay the file's, the rest the preset's
    sources = doc["provenance"]["model"]["settings_source"]
    assert sources["preprocess.integer_input"] == "command line"
    assert sources["preprocess.mean"] == sources["preprocess.std"] == "model file (NormalizationOptions)"
    assert sources["preprocess.crop"] == "preset"
    assert sources["preprocess"] == (
        "mean, std: model file (NormalizationOptions); integer_input: command line; the rest: preset"
    )


def test_the_bundled_models_input_keeps_the_tool_recipe(sample_run):
    doc = json.loads((sample_run / "metrics.json").read_text())
    pre = doc["provenance"]["preprocessing"]
    assert pre["integer_input"] == "tool" and pre["fed"]["values"] == {"integer_input": "tool"}
    assert "holds pixels as they are" in pre["fed"]["sources"]["integer_input"]
    assert not [a for a in doc["provenance"]["assumptions"] if a["what"] == "model.preprocess.integer_input"]
