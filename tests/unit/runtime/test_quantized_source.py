"""Quantization starts from a float model: a source that already holds quantized tensors is refused
before any variant is built or a cached one used (a dynamic-range YOLO export cast to fp16 gave NaN
on every image). Real models written by modelgen, no shared assets."""

from __future__ import annotations

import numpy as np
import pytest

from evalharness.core.errors import EvalHarnessError
from evalharness.runtime.modelgen import constant_output_model
from evalharness.runtime.quantize import refuse_quantized_source


def test_a_float_model_is_a_source(tmp_path):
    path = constant_output_model(
        str(tmp_path / "m.tflite"), [np.ones((1, 3), np.float32)], input_dtype="float32"
    )
    refuse_quantized_source(path)


def test_a_model_holding_quantized_tensors_is_refused_naming_them(tmp_path):
    values = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(1, 12)
    path = constant_output_model(str(tmp_path / "m.tflite"), [values], output_quant=[(0.01, 3)])
    with pytest.raises(EvalHarnessError) as exc:
        refuse_quantized_source(path)
    message = str(exc.value)
    assert message.startswith(f"quant: {path} is already quantized (") and "int8 tensors" in message
    assert "give the float .tflite" in message and "\n" not in message
