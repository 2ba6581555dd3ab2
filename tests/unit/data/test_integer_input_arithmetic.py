"""``model.preprocess.integer_input=auto``: the tool's pixels where the file's own arithmetic gives
them within one step, else the file's quantization, and what the run records of it."""

from __future__ import annotations

import numpy as np
import pytest

from evalharness.data.fed_input import arithmetic, auto_assumption, fed_record, recorded_spec
from evalharness.data.preprocess import (
    InputSpec,
    PreprocessSpec,
    fitted_integer_input,
    fitted_spec,
    image_input_spec,
    pixels_as_they_are,
    preprocessing_provenance,
    to_input_tensor,
)

AUTO = PreprocessSpec(integer_input="auto")
LITE0 = PreprocessSpec(mean=(127.0,) * 3, std=(128.0,) * 3, integer_input="auto")  # its metadata


def _input(dtype: str, scale: float, zero_point: int) -> InputSpec:
    return InputSpec(2, 2, 3, dtype, scale, zero_point)


@pytest.mark.parametrize(
    "dtype,scale,zero_point",
    [
        ("uint8", 1 / 128, 128),  # MobileNet v1/v2 quant, the SSD
        ("uint8", float(np.float32(1 / 127)), 128),  # MobileNet-EdgeTPU
        ("uint8", float(np.float32(1 / 127.5)), 127),  # TF2 MobileNet v2 PTQ
        ("uint8", 1.0, 0),  # the graph normalises: the tensor holds pixels
        ("int8", 1.0, -128),
        ("int8", 1 / 128, 0),  # the tool's x - 128
        ("uint8", 0.0, 0),  # no quantization recorded
    ],
)
def test_inputs_that_hold_pixels_as_they_are_keep_the_tool_recipe(dtype, scale, zero_point):
    inp = _input(dtype, scale, zero_point)
    assert pixels_as_they_are(AUTO, inp)
    assert fitted_integer_input(AUTO, inp) == "tool" and fitted_spec(AUTO, inp).integer_input == "tool"
    pixels = np.array([[[0.0, 127.7, 255.0]] * 2] * 2, dtype=np.float32)
    tool = to_input_tensor(pixels, PreprocessSpec(integer_input="tool"), inp)
    assert np.array_equal(to_input_tensor(pixels, AUTO, inp), tool)
    assert auto_assumption(fitted_spec(AUTO, inp), inp, "auto") is None


def test_an_input_range_that_is_not_pixels_is_quantized_as_the_file_says():
    inp = _input("uint8", 0.012566, 131)  # the official EfficientNet-Lite0 int8's input
    assert not pixels_as_they_are(LITE0, inp)
    fitted = fitted_spec(LITE0, inp)
    assert fitted.integer_input == "quantize" and fitted.mean == LITE0.mean
    pixels = np.array([[[0.0, 127.0, 255.0]] * 2] * 2, dtype=np.float32)
    fed = to_input_tensor(pixels, LITE0, inp)[0, 0, 0]
    assert fed.tolist() == [52, 131, 211]  # round((x - 127) / 128 / 0.012566) + 131; the tool: 0, 127, 255
    assert np.array_equal(to_input_tensor(pixels, fitted, inp), to_input_tensor(pixels, LITE0, inp))
    tool = to_input_tensor(pixels, PreprocessSpec(integer_input="tool"), inp)[0, 0, 0]
    assert tool.tolist() == [0, 127, 255]
    assumed = auto_assumption(fitted, inp, "auto")
    assert assumed is not None and assumed["what"] == "model.preprocess.integer_input"
    assert assumed["assumed"] == "quantize: (x - 127) / 128 at scale 0.012566, zero point 131"
    assert "integer_input=tool for results comparable with TFLite's eval tool" in assumed["fix"]
    assert auto_assumption(fitted, inp, "quantize") is None  # asked for: nothing assumed


def test_a_given_mode_is_kept_and_floats_and_int16_decide_alone():
    inp = _input("uint8", 0.012566, 131)
    for mode in ("tool", "quantize"):
        spec = PreprocessSpec(integer_input=mode)
        assert fitted_spec(spec, inp) is spec
    assert fitted_integer_input(AUTO, _input("float32", 0.0, 0)) == "tool"  # read by no float input
    int16 = image_input_spec((1, 1, 1, 3), "int16", (0.5, 0), "m.tflite", AUTO)  # no tool form: quantized
    assert fitted_integer_input(AUTO, int16) == "quantize"


def test_the_record_says_what_was_fed_and_where_each_value_came_from():
    inp = _input("uint8", 0.012566, 131)
    sources = {"mean": "model file (NormalizationOptions)", "std": "preset", "integer_input": "preset"}
    fitted = fitted_spec(LITE0, inp)
    record = fed_record(fitted, inp, "auto", sources)
    assert record["arithmetic"] == "uint8 = clip(round((x - 127) / 128 / 0.012566) + 131, 0, 255)"
    assert record["values"] == {
        "mean": [127.0] * 3,
        "std": [128.0] * 3,
        "integer_input": "quantize",
        "scale": 0.012566,
        "zero_point": 131,
    }
    said = record["sources"]
    assert said["mean"] == "model file (NormalizationOptions)" and said["std"] == "preset"
    assert said["scale"] == said["zero_point"] == "model file (input tensor)"
    assert said["integer_input"] == "preset: auto, the file's uint8 input does not hold pixels as they are"
    tool = fed_record(PreprocessSpec(integer_input="tool"), _input("int8", 1 / 128, 0), "tool", sources)
    assert tool["arithmetic"].startswith("int8 = trunc(x - 128): pixels as they are")
    assert tool["values"] == {"integer_input": "tool"} and tool["sources"] == {"integer_input": "preset"}
    torchvision = PreprocessSpec(mean=(123.675, 116.28, 103.53))
    floats = fed_record(torchvision, _input("float32", 0.0, 0), "auto", sources)
    assert floats["arithmetic"] == "float32 = (x - [123.675, 116.28, 103.53]) / 127.5"
    assert set(floats["values"]) == {"mean", "std"}


def test_a_recorded_recipe_is_read_back():
    inp = _input("uint8", 0.012566, 131)
    spec = fitted_spec(LITE0, inp)
    assert recorded_spec({**preprocessing_provenance(spec, inp), "fed": {}}) == (spec, inp)
    assert recorded_spec({**preprocessing_provenance(spec, None)}) is None
    assert recorded_spec({"crop": "mine", "input": {"height": 2}}) is None  # a plug-in's own record
    assert arithmetic(spec, inp).startswith("uint8 = clip(")


@pytest.mark.parametrize(("dtype", "shift"), [("uint8", 0.0), ("int8", 128.0)])
def test_the_tools_pixels_are_truncated_toward_zero_as_its_static_cast(dtype, shift):
    """The tool's uint8 pixel is static_cast<uint8_t>(x), its int8 one static_cast<int8_t>(x - 128):
    numpy's cast truncates toward zero in one pass, the same bits as np.trunc first."""
    rng = np.random.default_rng(0)
    edges = [0.0, 0.4999, 127.5, 128.0, 254.99998, 255.0]
    values = np.concatenate([rng.random(3000, dtype=np.float32) * 256, edges])
    pixels = values.astype(np.float32)[: 3 * 1002].reshape(1002, 1, 3)
    inp = InputSpec(1002, 1, 3, dtype, 1.0, 0)
    fed = to_input_tensor(pixels, PreprocessSpec(integer_input="tool"), inp)[0]
    assert np.array_equal(fed, np.trunc(pixels - np.float32(shift)).astype(dtype))
