"""report diff's Inputs line: a float input against an int8 one says how much the int8 input's
quantization explains (rounding, or values clipped to the calibrated range)."""

from __future__ import annotations

from evalharness.report.input_check import _quantization_note
from evalharness.rundir.reader import Run


def _run(inp: dict) -> Run:
    """A run whose record holds only the model input its preprocessing filled."""
    return Run("A", "/runs/a", {"provenance": {"preprocessing": {"input": inp}}})


FLOAT = _run({"dtype": "float32"})
INT8 = _run({"dtype": "int8", "scale": 2 / 255, "zero_point": 0})


def test_rounding_within_half_a_step():
    assert "rounding: half a step is 0.00392157" in _quantization_note(FLOAT, INT8, 0.0039)


def test_clipping_beyond_half_a_step_names_the_range():
    note = _quantization_note(INT8, FLOAT, 0.04)
    assert "clipped to the calibrated input range [-1.004, 0.9961]" in note


def test_nothing_to_say_between_two_float_inputs():
    assert _quantization_note(FLOAT, FLOAT, 0.5) == ""
