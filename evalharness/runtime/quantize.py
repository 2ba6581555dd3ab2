"""Post-training quantization of a float ``.tflite`` with ai-edge-quantizer (no TensorFlow).

The only module that imports ``ai_edge_quantizer`` (optional extra ``[quant]``). It maps the
recipe names of ``conf/quant/*.yaml`` to the quantizer's recipes and returns the variant's bytes;
caching, calibration data and provenance live in :mod:`evalharness.run.variants`.
"""

from __future__ import annotations

import contextlib
import io
import logging
from importlib import metadata

import numpy as np

from evalharness.core.errors import ConfigError, EvalHarnessError

# recipe name (conf/quant/*.yaml) -> what it does
RECIPES = {
    "float_casting_fp16": "weight-only float16 weights (FLOAT_CASTING), float activations",
    "dynamic_wi8_afp32": "int8 channelwise weights, activations quantized at run time",
    "weight_only_wi8_afp32": "int8 weights dequantized before float compute",
    "static_wi8_ai8": "full integer: int8 weights, int8 activations (calibrated), int8 I/O",
    "static_wi8_ai16": "int8 weights, int16 activations (calibrated), int16 I/O",
}
CALIBRATED = ("static_wi8_ai8", "static_wi8_ai16")


def quantizer_version() -> str:
    try:
        return metadata.version("ai-edge-quantizer")
    except metadata.PackageNotFoundError:
        raise EvalHarnessError(
            "quant: ai-edge-quantizer is not installed; pip install 'evalharness[quant]'"
        ) from None


def _recipe(name: str):
    from ai_edge_quantizer import recipe

    if name == "float_casting_fp16":
        from ai_edge_quantizer import algorithm_manager, qtyping, recipe_manager

        manager = recipe_manager.RecipeManager()
        manager.add_weight_only_config(
            regex=".*",
            operation_name=qtyping.TFLOperationName.ALL_SUPPORTED,
            num_bits=16,
            algorithm_key=algorithm_manager.AlgorithmName.FLOAT_CASTING,
        )
        return manager.get_quantization_recipe()
    return getattr(recipe, name)()


def check_recipe(name: str) -> None:
    if name not in RECIPES:
        raise ConfigError(f"quant.recipe={name!r}: unknown; valid: {', '.join(RECIPES)}")


def float_input(model_path: str) -> tuple[str, str, tuple[int, ...], str]:
    """(signature key, input name, shape, dtype) of a one-input float model, for calibration."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=model_path)
    signatures = interpreter.get_signature_list()
    if len(signatures) != 1:
        raise EvalHarnessError(f"quant: {model_path} has {len(signatures)} signatures; calibration needs one")
    (key, sig) = next(iter(signatures.items()))
    if len(sig["inputs"]) != 1:
        raise EvalHarnessError(f"quant: {model_path} has {len(sig['inputs'])} inputs; calibration needs one")
    detail = interpreter.get_signature_runner(key).get_input_details()[sig["inputs"][0]]
    return key, sig["inputs"][0], tuple(int(s) for s in detail["shape"]), np.dtype(detail["dtype"]).name


def quantize(model_path: str, recipe_name: str, calibration: list[np.ndarray] | None) -> tuple[bytes, list]:
    """The quantized model's bytes and the exact recipe (list of op configs) that made it."""
    check_recipe(recipe_name)
    quantizer_version()
    from ai_edge_quantizer import quantizer

    q = quantizer.Quantizer(model_path, _recipe(recipe_name))
    calibration_result = None
    # The quantizer logs and prints progress bars; keep the run's output to our own lines.
    logging.getLogger("absl").setLevel(logging.ERROR)
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        if q.need_calibration:
            if not calibration:
                raise EvalHarnessError(f"quant: recipe {recipe_name} needs calibration images; none given")
            key, name, shape, dtype = float_input(model_path)
            data = [{name: np.asarray(t, dtype=dtype).reshape(shape)} for t in calibration]
            calibration_result = q.calibrate({key: data}, num_threads=1)
        try:
            result = q.quantize(calibration_result, enable_progress_bar=False, enable_progress_report=False)
        except (ValueError, RuntimeError) as exc:
            raise EvalHarnessError(f"quant: ai-edge-quantizer failed on {model_path}: {exc}") from None
    return bytes(result.quantized_model), list(result.recipe)
