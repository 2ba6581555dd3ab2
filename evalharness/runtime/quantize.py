"""Post-training quantization of a float ``.tflite`` with ai-edge-quantizer (no TensorFlow).

The only module that imports ``ai_edge_quantizer`` (optional extra ``[quant]``). It maps the
recipe names of ``conf/quant/*.yaml`` to the quantizer's recipes and returns the variant's bytes;
caching, calibration data and provenance live in :mod:`evalharness.transforms.quantized`.

A recipe is either a name of :data:`RECIPES` or the quantizer's own JSON recipe (a list of op
configs, ``quant.recipe=FILE``: what ``quant.max_drop`` writes). Ops are kept in float by the
quantizer's per-op selection: one ``no_quantize`` entry per op whose regex matches exactly that op's
scope (its output tensor names joined by ``;``, as the quantizer scopes ops), after the base entries
(the quantizer applies the last matching entry). :class:`VariantBuilder` calibrates once and builds
many variants of one model from that calibration (the repair search); a tensor's calibrated range
is the min/max over all images (:func:`calibrate_ranges`), not the quantizer's moving average.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
from collections.abc import Iterator
from importlib import metadata
from typing import Any, cast

import numpy as np

from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.core.untrusted import read_json

# recipe name (conf/quant/*.yaml) -> what it does
RECIPES = {
    "float_casting_fp16": "weight-only float16 weights (FLOAT_CASTING), float activations",
    "dynamic_wi8_afp32": "int8 channelwise weights, activations quantized at run time",
    "weight_only_wi8_afp32": "int8 weights dequantized before float compute",
    "static_wi8_ai8": "full integer: int8 weights, int8 activations (calibrated), int8 I/O",
    "static_wi8_ai16": "int8 weights, int16 activations (calibrated), int16 I/O",
}
CALIBRATED = ("static_wi8_ai8", "static_wi8_ai16")
Recipe = list[
    dict[str, Any]
]  # the quantizer's JSON recipe: its op configs (regex, operation, algorithm_key, ...)


def quantizer_version() -> str:
    try:
        return metadata.version("ai-edge-quantizer")
    except metadata.PackageNotFoundError:
        raise EvalHarnessError(
            "quant: ai-edge-quantizer is not installed; pip install 'evalharness[quant]'"
        ) from None


def _recipe(name: str) -> Any:  # the quantizer's recipe object
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


def is_recipe_file(name: str) -> bool:
    """``quant.recipe`` names a JSON recipe file (a path) rather than one of :data:`RECIPES`."""
    return name not in RECIPES and (name.endswith(".json") or "/" in name or "\\" in name)


def check_recipe(name: str) -> None:
    if is_recipe_file(name):
        load_recipe_file(name)
    elif name not in RECIPES:
        raise ConfigError(
            f"quant.recipe={name!r}: unknown; use one of {', '.join(RECIPES)}, or a recipe .json file"
        )


def load_recipe_file(path: str) -> Recipe:
    """The quantizer's JSON recipe in ``path`` (a list of op configs), checked by the quantizer's own
    recipe manager; a missing, unreadable or malformed file is a ConfigError (exit 2)."""
    fix = "give an ai-edge-quantizer recipe"
    recipe = read_json(path, "quant.recipe=", top=list, error=ConfigError, fix=fix)
    keys = ("regex", "operation", "algorithm_key")
    if not recipe or not all(isinstance(e, dict) and all(k in e for k in keys) for e in recipe):
        raise ConfigError(
            f"quant.recipe={path}: not an ai-edge-quantizer recipe (a non-empty list of op configs with "
            f"{', '.join(keys)}); give such a file, or a recipe name"
        )
    for number, entry in enumerate(recipe, start=1):
        _check_regex(path, number, entry["regex"])
    quantizer_version()
    from ai_edge_quantizer import recipe_manager

    try:
        recipe_manager.RecipeManager().load_quantization_recipe(recipe)
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"quant.recipe={path}: the quantizer refuses it: {exc}; fix the recipe") from None
    return cast(Recipe, recipe)  # checked above: a list of op configs


def _check_regex(path: str, number: int, pattern: object) -> None:
    """The quantizer matches op names with ``re``: a pattern that does not compile is the recipe's
    error, named here, not a crash inside the quantizer."""
    if not isinstance(pattern, str):
        raise ConfigError(f"quant.recipe={path}: op config {number}: regex is not a string; fix the recipe")
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ConfigError(
            f"quant.recipe={path}: op config {number}: regex {pattern!r} does not compile ({exc}); "
            "fix the pattern"
        ) from None


def recipe_ops(recipe: str | Recipe) -> Recipe:
    """The JSON recipe (list of op configs) of a recipe name, a recipe file, or a recipe list."""
    if isinstance(recipe, list):
        return recipe
    if is_recipe_file(recipe):
        return load_recipe_file(recipe)
    check_recipe(recipe)
    quantizer_version()
    ops: Recipe = json.loads(json.dumps(_recipe(recipe)))
    return ops


def needs_calibration(recipe: str | Recipe) -> bool:
    """The recipe quantizes activations statically (it needs calibration images)."""
    if isinstance(recipe, str) and not is_recipe_file(recipe):
        return recipe in CALIBRATED
    from ai_edge_quantizer import recipe_manager

    manager = recipe_manager.RecipeManager()
    manager.load_quantization_recipe(recipe_ops(recipe))
    return bool(manager.need_calibration())


def keep_float(recipe: Recipe, scopes: list[str]) -> Recipe:
    """``recipe`` with the ops of ``scopes`` kept in float (``no_quantize``, exact scope match)."""
    extra = [
        {"regex": "^" + re.escape(scope) + "$", "operation": "*", "algorithm_key": "no_quantize"}
        for scope in scopes
    ]
    return [*recipe, *extra]


def quantized_ops(model_path: str, recipe: Recipe) -> list[tuple[int, str, str]]:
    """(op index, op type, scope) of the ops ``recipe`` quantizes, as the quantizer scopes and
    selects them (its recipe manager: the last matching entry wins; unsupported ops stay float)."""
    from ai_edge_quantizer import algorithm_manager, recipe_manager
    from ai_edge_quantizer.utils import tfl_flatbuffer_utils as tfl

    manager = recipe_manager.RecipeManager()
    manager.load_quantization_recipe(recipe)
    model = tfl.read_model(model_path)
    if len(model.subgraphs) != 1:
        raise EvalHarnessError(
            f"quant: {model_path} has {len(model.subgraphs)} subgraphs; repair needs one: give a "
            "one-subgraph float model in model.path, or leave quant.max_drop unset"
        )
    sub, codes = model.subgraphs[0], model.operatorCodes
    found: list[tuple[int, str, str]] = []
    for i, op in enumerate(sub.operators):
        code = codes[op.opcodeIndex].builtinCode
        name = tfl.TFL_OP_CODE_TO_NAME.get(code)
        if name is None:
            continue
        scope = tfl.get_op_scope(op, sub.tensors)
        algorithm, _ = manager.get_quantization_configs(name, scope)
        if algorithm != algorithm_manager.AlgorithmName.NO_QUANTIZE:
            found.append((i, str(name.value if hasattr(name, "value") else name), scope))
    return found


def float_input(model_path: str) -> tuple[str, str, tuple[int, ...], str]:
    """(signature key, input name, shape, dtype) of a one-input float model, for calibration."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=model_path)
    signatures = interpreter.get_signature_list()
    if len(signatures) != 1:
        raise EvalHarnessError(
            f"quant: {model_path} has {len(signatures)} signatures; calibration needs one (a float model, "
            "not one already quantized): give the float .tflite in model.path"
        )
    (key, sig) = next(iter(signatures.items()))
    if len(sig["inputs"]) != 1:
        raise EvalHarnessError(
            f"quant: {model_path} has {len(sig['inputs'])} inputs; calibration needs one: give a one-input "
            "model in model.path, or use a recipe without calibration (quant=fp16, dynamic_int8)"
        )
    detail = interpreter.get_signature_runner(key).get_input_details()[sig["inputs"][0]]
    return key, sig["inputs"][0], tuple(int(s) for s in detail["shape"]), np.dtype(detail["dtype"]).name


QUANTIZED_DTYPES = ("int8", "uint8", "int16", "float16")  # a weight stored so was quantized already


def refuse_quantized_source(model_path: str) -> None:
    """Quantization starts from a float model: a source that already holds quantized tensors (a
    dynamic-range export's int8 weights, an fp16 model's half weights, a full-integer model) is
    refused, because the quantizer casts or re-quantizes what is already quantized and the variant's
    outputs are garbage (a dynamic-range YOLO export cast to fp16 gives NaN on every image)."""
    from collections import Counter

    from ai_edge_litert.interpreter import Interpreter

    found: Counter[str] = Counter()
    for detail in Interpreter(model_path=model_path).get_tensor_details():
        name = np.dtype(detail["dtype"]).name
        if name in QUANTIZED_DTYPES and (
            name == "float16" or detail["quantization_parameters"]["scales"].size
        ):
            found[name] += 1
    if found:
        held = ", ".join(f"{n} {dtype}" for dtype, n in sorted(found.items()))
        raise EvalHarnessError(
            f"quant: {model_path} is already quantized ({held} tensors); quantizing it again makes a "
            "broken model: give the float .tflite (float32 weights) it was made from in model.path, "
            "or run it with quant=none"
        )


def quantize(
    model_path: str, recipe_name: str | Recipe, calibration: list[np.ndarray] | None
) -> tuple[bytes, Recipe]:
    """The quantized model's bytes and the exact recipe (list of op configs) that made it.
    ``recipe_name``: a name of :data:`RECIPES`, a recipe file, or a recipe list; calibrated with
    that recipe (what a ``quant.recipe=FILE`` run does)."""
    builder = VariantBuilder(model_path, recipe_name, calibration)
    return builder.build(builder.recipe)


class VariantBuilder:
    """Variants of one float model from one calibration: ``recipe`` calibrates (once, here), and
    :meth:`build` quantizes any recipe with that result (a recipe that keeps ops in float needs a
    subset of the base recipe's tensor ranges)."""

    def __init__(self, model_path: str, recipe: str | Recipe, calibration: list[np.ndarray] | None) -> None:
        self.model_path, self.recipe = model_path, recipe_ops(recipe)
        self.calibration_result: dict[str, Any] | None = None  # the merged ranges, per tensor
        self.range_rule: str | None = None  # how the images' ranges were merged (None: no calibration)
        from ai_edge_quantizer import quantizer

        q = quantizer.Quantizer(model_path, self.recipe)
        with _quiet():
            if q.need_calibration:
                if not calibration:
                    raise EvalHarnessError(
                        f"quant: recipe {_label(recipe)} needs calibration images; set "
                        "quant/calibration=auto or give quant.calibration.roots"
                    )
                key, name, shape, dtype = float_input(model_path)
                data = [{name: np.asarray(t, dtype=dtype).reshape(shape)} for t in calibration]
                self.calibration_result, self.range_rule = calibrate_ranges(q, key, data)

    def build(self, recipe: Recipe) -> tuple[bytes, Recipe]:
        from ai_edge_quantizer import quantizer

        q = quantizer.Quantizer(self.model_path, recipe)
        with _quiet():
            try:
                result = q.quantize(
                    self.calibration_result, enable_progress_bar=False, enable_progress_report=False
                )
            except (ValueError, RuntimeError, KeyError) as exc:
                where = self.model_path
                raise EvalHarnessError(f"quant: ai-edge-quantizer failed on {where}: {exc}") from None
        made: Recipe = json.loads(json.dumps(list(result.recipe)))  # the exact recipe, as plain JSON
        return bytes(result.quantized_model), made


RANGE_RULE = "min_max over images"  # how calibration merges the images' ranges (keys the cache)
QUANTIZER_RULE = "the quantizer's moving average"  # statistics min/max cannot merge (recorded so)


def calibrate_ranges(q: Any, key: str, samples: list[dict[str, np.ndarray]]) -> tuple[dict[str, Any], str]:
    """Each tensor's range over all calibration images: the smallest min and the largest max, as
    TFLite's own converter records it (its calibration logger keeps a running min/max).

    ai-edge-quantizer's default merges images with a moving average (0.95 of the range so far,
    0.05 of the new image's) started at the first image: with a few images that is mostly the first
    image's range (66% of it after the 9 bundled photos), whatever the others hold. EfficientNet-
    Lite0's logits then got the range [-3.0, 8.4] from photos whose logits reach [-4.4, 11.4], and
    its int8 output sat at the type's top value on 45 of val50's 50 images (docs/quantization.md).
    Calibrating image by image and merging keeps the extremes every image showed, in any order.
    Statistics other than min/max (a recipe with another algorithm) cannot be merged this way: the
    quantizer's own sequential calibration is kept for those (:func:`merge_ranges` says None), and
    the rule returned with the result says which one made it."""
    per_image = [q.calibrate({key: [sample]}, num_threads=1) for sample in samples]
    merged = merge_ranges(per_image)
    if merged is None:
        return q.calibrate({key: samples}, num_threads=1), QUANTIZER_RULE
    return merged, RANGE_RULE


MERGED = {"min": np.minimum, "max": np.maximum, "num_samples": np.add}


def merge_ranges(per_image: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Per-tensor ``{"min", "max", "num_samples"}`` over the images' calibration results
    (elementwise, so per-channel ranges stay per channel); None when a result holds other
    statistics."""
    merged: dict[str, Any] = {}
    for result in per_image:
        for tensor, qsv in result.items():
            if set(qsv) - set(MERGED):
                return None
            seen = merged.get(tensor)
            if not seen or not qsv or set(seen) != set(qsv):
                if seen and qsv:  # one image recorded a statistic another did not: not mergeable
                    return None
                merged[tensor] = dict(seen or qsv)
                continue
            merged[tensor] = {k: MERGED[k](seen[k], qsv[k]) for k in qsv}
    return merged


def _label(recipe: str | Recipe) -> str:
    return recipe if isinstance(recipe, str) else "(recipe list)"


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The quantizer logs and prints progress bars; keep the run's output to our own lines."""
    logging.getLogger("absl").setLevel(logging.ERROR)
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)  # its "Serializing model..." goes to the root logger (Hydra's handlers)
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        logging.disable(previous)
