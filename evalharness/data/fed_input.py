"""What an image input was fed, said in numbers and words: ``provenance.preprocessing.fed`` and the
``Assumed:`` line of ``model.preprocess.integer_input=auto`` where it quantizes.

The recipe's fields alone do not say it: a uint8 input fed as TFLite's eval tool feeds it (pixels as
they are) never reads mean/std, and ``auto`` is decided per input (:func:`evalharness.data.preprocess.
fitted_integer_input`). So the run records the arithmetic that made the tensor, the values it used
and where each came from (model file, preset, command line), from the recipe it recorded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from evalharness.core.documents import Assumed
from evalharness.core.errors import ConfigError
from evalharness.data.preprocess import InputSpec, PreprocessSpec, spec_from_config, tool_offset

INPUT_TENSOR = "model file (input tensor)"
TOOL_FIX = "model.preprocess.integer_input=tool for results comparable with TFLite's eval tool"


def recorded_spec(preprocessing: Mapping[str, Any]) -> tuple[PreprocessSpec, InputSpec] | None:
    """The recipe and input a run recorded (``provenance.preprocessing``); None without an input, or
    for a plug-in's record that is not this recipe (its own keys, its own values)."""
    fitted = preprocessing.get("input")
    if not isinstance(fitted, Mapping):
        return None
    names = {f.name for f in dataclasses.fields(PreprocessSpec)}
    fields = {f.name for f in dataclasses.fields(InputSpec)}
    try:
        spec = spec_from_config({k: v for k, v in preprocessing.items() if k in names})
        return spec, InputSpec(**{k: v for k, v in fitted.items() if k in fields})
    except (ConfigError, TypeError, ValueError):
        return None


def _values(values: tuple[float, ...]) -> str:
    """One number where every channel has it, else the list."""
    return f"{values[0]:g}" if len(set(values)) == 1 else "[" + ", ".join(f"{v:g}" for v in values) + "]"


def normalised(spec: PreprocessSpec) -> str:
    return f"(x - {_values(spec.mean)}) / {_values(spec.std)}"


def arithmetic(spec: PreprocessSpec, inp: InputSpec) -> str:
    """The tensor as a function of ``x``, the resized pixel in [0, 255] (``spec`` fitted: no auto)."""
    if inp.dtype.startswith("float"):
        return f"{inp.dtype} = {normalised(spec)}"
    if spec.integer_input == "quantize" and inp.scale > 0:
        info = range_of(inp.dtype)
        return (
            f"{inp.dtype} = clip(round({normalised(spec)} / {inp.scale:.6g}) + {inp.zero_point}, "
            f"{info[0]}, {info[1]})"
        )
    offset = tool_offset(inp.dtype)
    what = "trunc(x)" if not offset else f"trunc(x - {offset})"
    return f"{inp.dtype} = {what}: pixels as they are, as TFLite's eval tool feeds them (mean/std unused)"


def range_of(dtype: str) -> tuple[int, int]:
    return {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767)}.get(dtype, (0, 0))


def fed_record(
    spec: PreprocessSpec, inp: InputSpec, requested: str, sources: Mapping[str, str]
) -> dict[str, Any]:
    """``provenance.preprocessing.fed``: dtype, arithmetic, the values it used and each one's source
    (``sources``: mean, std, integer_input, as the settings say; the input tensor's own scale and
    zero point are the model file's). ``requested``: integer_input as configured (``auto`` says
    what it decided and why)."""
    values: dict[str, Any] = {}
    if inp.dtype.startswith("float") or spec.integer_input == "quantize":
        values |= {"mean": list(spec.mean), "std": list(spec.std)}
    if not inp.dtype.startswith("float"):
        values["integer_input"] = spec.integer_input
        if spec.integer_input == "quantize":
            values |= {"scale": inp.scale, "zero_point": inp.zero_point}
    used = {k: sources.get(k, INPUT_TENSOR) for k in values}
    if "integer_input" in used and requested == "auto":
        used["integer_input"] = f"{used['integer_input']}: auto, {auto_reason(spec, inp)}"
    return {"dtype": inp.dtype, "arithmetic": arithmetic(spec, inp), "values": values, "sources": used}


def auto_reason(spec: PreprocessSpec, inp: InputSpec) -> str:
    """Why ``auto`` fed this input as it did (``spec`` fitted)."""
    if spec.integer_input == "tool":
        return "the file's input quantization holds pixels as they are (within one step)"
    return f"the file's {inp.dtype} input does not hold pixels as they are"


def auto_assumption(spec: PreprocessSpec, inp: InputSpec, requested: str) -> Assumed | None:
    """The ``Assumed:`` line of an ``auto`` that quantizes (nothing where it fed the tool's pixels)."""
    if requested != "auto" or spec.integer_input != "quantize" or inp.dtype.startswith("float"):
        return None
    return {
        "what": "model.preprocess.integer_input",
        "assumed": f"quantize: {normalised(spec)} at scale {inp.scale:.6g}, zero point {inp.zero_point}",
        "why": auto_reason(spec, inp),
        "fix": TOOL_FIX,
    }
