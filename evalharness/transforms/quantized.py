"""``quant=<variant>``: a quantized variant of the float model (or of its pruned or clustered edit),
cached, and the model settings that run it.

The variant is built by :mod:`evalharness.runtime.quantize` (ai-edge-quantizer) and cached under
``<paths.cache_dir>/quant/<key>/`` where the key hashes the source model's sha256, the recipe, the
quantizer version and, for calibrated recipes, the calibration manifest (relative name + sha256 of
every image, :mod:`evalharness.transforms.calibration`), the preprocessing that turns those images
into tensors and the rule that merges their ranges (:data:`evalharness.runtime.quantize.RANGE_RULE`).
A changed calibration set is a new key, so it rebuilds; an identical one is a cache hit. Files are
written atomically (temp file + rename), and a cached model whose sha256 no longer matches its
record is rebuilt.

``quant/calibration=dataset`` draws the calibration images from the dataset itself: the dataset is
then split (``quant.search``, :class:`evalharness.data.shard.Split`) and the run reports on the
held-out part only, as it does when ``quant.max_drop`` searches a variant
(:mod:`evalharness.transforms.repair`). ``quant.integer_input`` is the variant's preprocessing for its
integer inputs (:func:`integer_input`).

``quant.recipe`` is a recipe name or the quantizer's JSON recipe file (what ``quant.max_drop``
writes); a recipe file is keyed by the sha256 of its canonical JSON, so the file a repair wrote,
given back, hits the variant the repair cached, and built afresh gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from typing import Any, TypedDict

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import ConfigError, DataError
from evalharness.core.variant_cache import cached_model
from evalharness.data.preprocess import PreprocessSpec, validate_spec
from evalharness.data.sample_image import SampleImage
from evalharness.settings.groups import ModelSchema, QuantSchema
from evalharness.settings.quant_rules import from_dataset
from evalharness.transforms.calibration import (
    EvalMembers,
    calibration_record,
    calibration_tensors,
    dataset_members,
)
from evalharness.transforms.variant import CachedFile, Request, Variant

IO_DTYPES = {"static_wi8_ai8": "int8", "static_wi8_ai16": "int16"}  # what ai-edge-quantizer emits


def integer_input(preprocess: PreprocessSpec, quant: QuantSchema) -> PreprocessSpec:
    """The model's preprocessing with ``quant.integer_input``, which applies to integer inputs only
    (a variant whose input stays float is fed as the float model is)."""
    if not quant.integer_input:
        return preprocess
    spec = dataclasses.replace(preprocess, integer_input=quant.integer_input)
    validate_spec(spec)
    return spec


class RecipeKey(TypedDict, total=False):
    """A recipe in a cache key: its name, or the sha256 of a recipe list (one of the two)."""

    recipe: str
    recipe_sha256: str


def recipe_key(recipe: str | list[Any]) -> RecipeKey:
    """What the cache key says of a recipe: a name, or the sha256 of a recipe list's canonical JSON."""
    if isinstance(recipe, str):
        return {"recipe": recipe}
    text = json.dumps(recipe, sort_keys=True, separators=(",", ":"))
    return {"recipe_sha256": hashlib.sha256(text.encode()).hexdigest()}


def make_variant(request: Request) -> Variant:
    """The registered transform of ``quantize``, ``prune`` and ``cluster`` (:mod:`.variant`)."""
    settings, images = request.settings, None
    if request.split is not None and from_dataset(request.quant):  # the search part calibrates
        from evalharness.transforms.repair_eval import Part

        images = Part(settings, request.source, request.split, "search", None).images()
    return quantize_model(
        request.quant,
        request.source,
        settings.dataset.root,
        settings.definition.abilities.reads_dataset,
        settings.paths.cache_dir,
        images,
        dataset_members(settings),
    )


def quantize_model(
    quant: QuantSchema,
    source: ModelSchema,
    dataset_root: str,
    reads_dataset: bool,
    cache_dir: str,
    dataset_images: list[SampleImage] | None = None,
    eval_members: EvalMembers | None = None,
) -> Variant:
    """Build or reuse the variant of ``source`` (pruned or clustered first, quantized after: the
    guide's order). ``dataset_root``: the evaluation folder; ``reads_dataset``: the task scores dataset
    images (so calibration must not overlap them); ``dataset_images``: the search part's images, read
    by id through the dataset's reader (calibration ``source: dataset``); ``eval_members``: a
    container's listed samples, which other calibration images must not be."""
    recipe, edit = quant.recipe, quant.weights.method != "none"
    if not os.path.isfile(source.path):
        raise DataError(f"quant: float model {source.path} not found; set model.path or paths.models_dir")
    edited: dict[str, Any] | None = None
    key: dict[str, Any] | None = None
    if edit:
        from evalharness.transforms.weight_variants import weight_variant

        made = weight_variant(source.path, quant.weights, cache_dir)
        edited, key = made.provenance, made.key
        source = dataclasses.replace(source, path=made.path)
    if not recipe:
        return Variant(source, {"name": quant.name, "recipe": None, "weights": edited}, key)
    variant = quantized_variant(
        quant, source, dataset_root, reads_dataset, cache_dir, dataset_images, eval_members
    )
    if edited is not None:
        from evalharness.transforms.weight_variants import check_kept

        edited = {**edited, "after_quantization": check_kept(variant.path, edited)}
    return dataclasses.replace(variant, provenance={**variant.provenance, "weights": edited})


def quantized_variant(
    quant: QuantSchema,
    source: ModelSchema,
    dataset_root: str,
    reads_dataset: bool,
    cache_dir: str,
    dataset_images: list[SampleImage] | None,
    eval_members: EvalMembers | None = None,
) -> Variant:
    """The recipe applied to ``source`` (the float model, or its pruned/clustered edit), cached."""
    from evalharness.runtime.quantize import (
        check_recipe,
        is_recipe_file,
        needs_calibration,
        recipe_ops,
        refuse_quantized_source,
    )

    recipe = quant.recipe
    check_recipe(recipe)
    refuse_quantized_source(source.path)  # before calibration is chosen: no other fix helps first
    io_dtype = quant.io_dtype
    if io_dtype and not is_recipe_file(recipe) and io_dtype != IO_DTYPES.get(recipe):
        raise ConfigError(
            f"quant.io_dtype={io_dtype}: ai-edge-quantizer recipe {recipe} makes "
            f"{IO_DTYPES.get(recipe, 'float32')} inputs/outputs; other I/O types are not supported yet; "
            "leave quant.io_dtype unset (null)"
        )
    calibration: dict[str, Any] | None = None
    images: list[SampleImage] = []
    if needs_calibration(recipe):
        if not quant.calibration:
            raise ConfigError(
                f"quant={quant.name}: recipe {recipe} needs quant.calibration; set quant/calibration=auto "
                "(or bundled, or dataset)"
            )
        cal = quant.calibration
        calibration, images = calibration_record(
            cal, reads_dataset, dataset_root, dataset_images, eval_members
        )
    ops = recipe_ops(recipe) if is_recipe_file(recipe) else recipe
    if quant.weights.method == "cluster":  # shared values stay shared: per-tensor weight scales
        from evalharness.transforms.weight_variants import tensorwise

        ops = tensorwise(recipe_ops(recipe))
    built = build_variant(source.path, ops, calibration, images, source.preprocess, cache_dir)
    out = {"name": quant.name, "recipe": recipe, **built.provenance}
    if is_recipe_file(recipe):
        out["recipe_file"] = {"path": os.path.abspath(recipe), **recipe_key(ops)}
    model = dataclasses.replace(source, path=built.path, preprocess=integer_input(source.preprocess, quant))
    return Variant(model, out, built.key)


def build_variant(
    source: str,
    recipe: Any,
    calibration: dict[str, Any] | None,
    images: list[SampleImage],
    preprocess: PreprocessSpec,
    cache_dir: str,
) -> CachedFile:
    """The variant of ``source`` made by ``recipe`` (a name or a recipe list), calibrated with that
    recipe on ``images`` prepared with ``preprocess`` (the float model's), cached: the one way a
    variant is built (a run, a recipe file given back, the variant a repair chose)."""
    from evalharness.runtime.quantize import RANGE_RULE, VariantBuilder, quantizer_version

    source_sha = sha256_file(source)
    key = {
        "source_sha256": source_sha,
        **recipe_key(recipe),
        "quantizer": quantizer_version(),
        "calibration_manifest_sha256": calibration and calibration["manifest_sha256"],
        # the spec's fields in order, as JSON (the key's text is what older caches were built for)
        "calibration_preprocess": calibration and dataclasses.asdict(preprocess),
        "calibration_ranges": calibration and RANGE_RULE,  # a changed merge rule is another variant
    }

    def build(folder: str) -> tuple[bytes, dict[str, Any]]:
        tensors = calibration_tensors(images, source, preprocess) if calibration else None
        builder = VariantBuilder(source, recipe, tensors)
        data, recipe_ops = builder.build(builder.recipe)
        return data, {"recipe_ops": recipe_ops, "calibration_ranges": builder.range_rule}

    record = cached_model(cache_dir, "quant", key, build, record_name="variant.json")
    provenance = {
        "recipe_ops": record["recipe_ops"],
        "quantizer": {"name": "ai-edge-quantizer", "version": key["quantizer"]},
        "source": {"path": os.path.abspath(source), "sha256": source_sha, "bytes": os.path.getsize(source)},
        "variant_sha256": record["sha256"],
        "variant_bytes": record["bytes"],
        "cache": {
            "status": record["cache"],
            "dir": record["dir"],
            "build_s": record["build_s"],
            "rebuilt": record["rebuilt"],
        },
        "calibration": calibration and {**calibration, "ranges": record.get("calibration_ranges")},
    }
    return CachedFile(provenance, record["path"], record["dir"], key)
