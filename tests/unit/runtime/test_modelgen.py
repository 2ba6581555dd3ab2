"""modelgen writes real models: LiteRT loads and runs them and returns the constants we put in."""

from __future__ import annotations

import flatbuffers
import numpy as np
import pytest

from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.modelgen import constant_output_model

CPU = plan_delegate({"name": "cpu", "num_threads": 1})
REFERENCE = plan_delegate({"name": "reference", "num_threads": 1, "op_resolver": "builtin_ref"})


def run(path: str, image: np.ndarray, plan=CPU):
    model = load_model(path, plan)
    model.set_inputs([image])
    model.invoke()
    return model, model.get_outputs()


def test_header_is_tfl3_schema_version_3(tmp_path):
    path = constant_output_model(str(tmp_path / "m.tflite"), [np.zeros((1, 2), np.float32)])
    with open(path, "rb") as f:
        buf = bytearray(f.read())
    assert buf[4:8] == b"TFL3"
    table = flatbuffers.table.Table(buf, flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0))
    offset = table.Offset(4)  # Model.version, the first field
    assert table.Get(flatbuffers.number_types.Uint32Flags, offset + table.Pos) == 3


@pytest.mark.parametrize("plan", [CPU, REFERENCE], ids=["xnnpack", "builtin_ref"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "float32"])
def test_float_outputs_are_exact_and_input_is_as_requested(tmp_path, dtype, plan):
    rng = np.random.default_rng(0)
    values = [rng.normal(0, 300, (1, 84, 16)).astype(np.float32), np.array([7.0], np.float32)]
    path = constant_output_model(
        str(tmp_path / "m.tflite"),
        values,
        input_shape=(1, 24, 40, 3),
        input_dtype=dtype,
        output_names=["a", "b"],
    )
    image = np.full((1, 24, 40, 3), 100, dtype)
    model, outputs = run(path, image, plan)
    (inp,) = model.inputs
    assert (inp.shape, inp.dtype, inp.quantized) == ((1, 24, 40, 3), dtype, False)
    assert [(o.name, o.shape, o.dtype) for o in model.outputs] == [
        ("a", (1, 84, 16), "float32"),
        ("b", (1,), "float32"),
    ]
    for got, want in zip(outputs, values, strict=True):
        np.testing.assert_array_equal(got, want)


def test_input_is_consumed_by_the_graph(tmp_path):
    path = constant_output_model(
        str(tmp_path / "m.tflite"), [np.ones((1, 3), np.float32)], output_quant=[(0.1, 0)]
    )
    model, _ = run(path, np.zeros((1, 64, 64, 3), np.uint8))
    # CAST, REDUCE_MAX, MUL, ADD, QUANTIZE: the outputs are computed from the input, not stored.
    assert model.coverage["ops_total"] == 5


def test_input_quantization_is_only_annotated(tmp_path):
    path = constant_output_model(
        str(tmp_path / "m.tflite"), [np.ones((1, 3), np.float32)], input_quant=(0.0078125, 128)
    )
    model, outputs = run(path, np.zeros((1, 64, 64, 3), np.uint8))
    assert (model.inputs[0].scale, model.inputs[0].zero_point) == (0.0078125, 128)
    np.testing.assert_array_equal(outputs[0], np.ones((1, 3), np.float32))


@pytest.mark.parametrize(("spec", "dtype"), [((0.01, 3), "int8"), ((0.02, 128, "uint8"), "uint8")])
def test_quantized_outputs_within_half_a_step(tmp_path, spec, dtype):
    values = np.linspace(-1.2, 1.2, 40, dtype=np.float32).reshape(1, 4, 10)
    path = constant_output_model(str(tmp_path / "m.tflite"), [values], output_quant=[spec])
    model, (raw,) = run(path, np.zeros((1, 64, 64, 3), np.uint8))
    info = model.outputs[0]
    assert (raw.dtype, info.dtype, info.zero_point) == (np.dtype(dtype), dtype, spec[1])
    assert info.scale == pytest.approx(spec[0])
    assert np.max(np.abs(info.dequantize(raw) - values)) <= info.scale / 2 + 1e-6


@pytest.mark.parametrize("spec", [(0.0, 0), (0.1, 200), (0.1, 0, "int16")])
def test_bad_quant_spec_is_rejected(tmp_path, spec):
    with pytest.raises(ValueError, match="output_quant"):
        constant_output_model(str(tmp_path / "m.tflite"), [np.ones(3)], output_quant=[spec])
