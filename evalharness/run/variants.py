"""``quant=<variant>``: derive a quantized variant of the float model, cached, and run that instead.

The variant is built by :mod:`evalharness.runtime.quantize` (ai-edge-quantizer) and cached under
``<paths.cache_dir>/quant/<key>/`` where the key hashes the source model's sha256, the recipe, the
quantizer version and, for calibrated recipes, the calibration manifest (relative name + sha256 of
every image), the preprocessing that turns those images into tensors and the rule that merges their
ranges (:data:`evalharness.runtime.quantize.RANGE_RULE`). A changed calibration set
is a new key, so it rebuilds; an identical one is a cache hit. Files are written atomically (temp
file + rename), and a cached model whose sha256 no longer matches its record is rebuilt.

Calibration images must be disjoint from the evaluation set: an image of the evaluation folder
(``dataset.root``) with the same file name or the same bytes (sha256) as a calibration image is an
error before anything is built. Tasks that feed random tensors (benchmark, inference_diff) have no
evaluation images, so nothing can overlap. Both manifests go into ``provenance.model.quant``.
``quant/calibration=dataset`` draws the calibration images from the dataset itself: the dataset is
then split (``quant.search``, :class:`evalharness.data.shard.Split`) and the run reports on the
held-out part only, as it does when ``quant.max_drop`` searches a variant (:mod:`evalharness.run.repair`).

``quant.recipe`` is a recipe name or the quantizer's JSON recipe file (what ``quant.max_drop``
writes); a recipe file is keyed by the sha256 of its canonical JSON, so the file a repair wrote,
given back, hits the variant the repair cached, and built afresh gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import ConfigError, DataError
from evalharness.core.variant_cache import cached_model
from evalharness.data.ground_truth import DEFAULT_EXTENSIONS
from evalharness.data.listing import list_images
from evalharness.data.manifest import manifest_hash
from evalharness.data.preprocess import InputSpec, preprocess_file, spec_from_config
from evalharness.run.groups import CalibrationSchema, DatasetSchema, QuantSchema

IO_DTYPES = {"static_wi8_ai8": "int8", "static_wi8_ai16": "int16"}  # what ai-edge-quantizer emits


def repair_requested(quant: QuantSchema) -> bool:
    return quant.max_drop is not None or quant.max_drop_relative is not None


def from_dataset(quant: QuantSchema) -> bool:
    return quant.calibration is not None and quant.calibration.source == "dataset"


def with_integer_input(preprocess: dict[str, Any] | None, quant: QuantSchema) -> dict[str, Any] | None:
    """The model's preprocessing with ``quant.integer_input``, which applies to integer inputs only
    (a variant whose input stays float is fed as the float model is)."""
    if not quant.integer_input:
        return preprocess
    return {**(preprocess or {}), "integer_input": quant.integer_input}


def split_of(quant: QuantSchema) -> dict[str, Any] | None:
    """The dataset split a quant setting implies (a repair search, calibration drawn from the
    dataset, a layer search of pruning or clustering), without its part; None: the whole list."""
    quantized = quant.recipe and (repair_requested(quant) or from_dataset(quant))
    if not (quantized or layer_search(quant)):
        return None
    return {"fraction": float(quant.search.fraction), "scheme": quant.search.scheme}


def layer_search(quant: QuantSchema) -> bool:
    """The run searches which weight tensors to edit: a sensitivity scan, or a drop to hold."""
    return quant.weights.method != "none" and (quant.weights.scan or repair_requested(quant))


def check_quant(quant: QuantSchema, definition: Any, dataset: DatasetSchema) -> None:
    """Rules between the quant fields and the rest of the config (exit 2 before anything runs)."""
    repair, edit = repair_requested(quant), quant.weights.method != "none"
    if repair and quant.max_drop is not None and quant.max_drop_relative is not None:
        raise ConfigError("quant.max_drop and quant.max_drop_relative: give one (absolute or relative drop)")
    recipe = quant.recipe
    if quant.weights.scan and not edit:
        raise ConfigError("quant.weights.scan needs pruning or clustering: quant=prune or quant=cluster")
    splits = repair or from_dataset(quant) or layer_search(quant)
    what = "quant.max_drop" if repair else "quant.weights.scan" if edit else "quant/calibration=dataset"
    if splits and not recipe and not edit:
        raise ConfigError(f"{what} needs a quantized variant: quant=int8 or int16x8 (quant={quant.name})")
    if recipe:
        from evalharness.runtime.quantize import check_recipe

        check_recipe(recipe)
    if layer_search(quant) and recipe:
        raise ConfigError(
            f"{what} with quant={quant.name}: the layer search of pruning and clustering runs on the float "
            "model only; use quant=prune or quant=cluster (then quantize the chosen layers' model)"
        )
    if (repair or layer_search(quant)) and definition.abilities.repair_metric is None:
        raise ConfigError(
            f"{what}: task={definition.name} offers no repair (its definition names no "
            "repair_metric with a paired comparison of records; classification does)"
        )
    if splits:  # a recipe or a weight edit is set by now
        if not definition.abilities.reads_dataset:
            raise ConfigError(f"{what}: task={definition.name} reads no dataset to split")
        if not 0 < float(quant.search.fraction) < 1:
            raise ConfigError(f"quant.search.fraction={quant.search.fraction}: use a value in (0, 1)")
        if dataset.shard.count > 1:
            raise ConfigError(f"{what} splits the dataset: use dataset.shard.count=1")


def recipe_key(recipe: str | list[Any]) -> dict[str, Any]:
    """What the cache key says of a recipe: a name, or the sha256 of a recipe list's canonical JSON."""
    if isinstance(recipe, str):
        return {"recipe": recipe}
    text = json.dumps(recipe, sort_keys=True, separators=(",", ":"))
    return {"recipe_sha256": hashlib.sha256(text.encode()).hexdigest()}


def calibration_files(
    cal: CalibrationSchema, dataset_files: list[str] | None = None
) -> list[tuple[str, Path]]:
    """(manifest key, path) of the calibration images: every root listed (or the dataset's search
    part, ``source: dataset``), first ``num_images`` kept."""
    if cal.source == "dataset":
        files: list[tuple[str, Path]] = [
            (f"dataset/{os.path.basename(f)}", Path(f)) for f in dataset_files or []
        ]
        num = cal.num_images
        files = files[:num] if num > 0 else files
        if not files:
            raise DataError("quant.calibration source=dataset: the dataset's search part has no image files")
        return files
    roots = cal.roots
    if not roots:
        raise ConfigError("quant.calibration.roots is empty; give one or more image folders")
    files = []
    for i, root in enumerate(roots):
        if not Path(root).is_dir():
            raise DataError(f"quant.calibration.roots[{i}]={root} is not a directory")
        files += [(f"{i}/{name}", Path(root, name)) for name in list_images(Path(root), DEFAULT_EXTENSIONS)]
    num = cal.num_images
    files = files[:num] if num > 0 else files
    if not files:
        raise DataError(f"quant.calibration.roots {list(roots)}: no images ({', '.join(DEFAULT_EXTENSIONS)})")
    return files


def refuse_overlap(calibration: list[dict[str, Any]], eval_root: str) -> dict[str, Any]:
    """The eval folder's manifest; DataError if any of its images shares a name or bytes with calibration."""
    names = list_images(Path(eval_root), DEFAULT_EXTENSIONS) if Path(eval_root).is_dir() else []
    images = {name: Path(eval_root, name) for name in names}
    by_name = {Path(c["key"]).name: c for c in calibration}
    by_hash = {c["sha256"]: c for c in calibration}
    sizes = {c["bytes"] for c in calibration}
    for name, path in sorted(images.items()):
        clash = by_name.get(name)
        if clash is None and path.stat().st_size in sizes:  # hash only what could be equal
            clash = by_hash.get(sha256_file(str(path)))
        if clash is not None:
            raise DataError(
                f"quant: calibration image {clash['path']} is also in the evaluation set ({path}); "
                "calibration and evaluation images must be disjoint: set quant.calibration.roots"
            )
    entries = [(name, str(path)) for name, path in images.items()]
    return {
        "root": os.path.abspath(eval_root),
        "count": len(entries),
        "manifest_sha256": manifest_hash(entries),
        "manifest_kind": "relative path + size",
        "overlap_checked_by": "file name, and sha256 of same-size files",
    }


def calibration_record(
    cal: CalibrationSchema, reads_dataset: bool, eval_root: str, dataset_files: list[str] | None = None
) -> tuple[dict[str, Any], list[Path]]:
    """(``provenance.model.quant.calibration``, image paths): manifest, source, size, and the
    evaluation set it was checked disjoint from."""
    files = calibration_files(cal, dataset_files)
    entries: list[dict[str, Any]] = [
        {"key": key, "path": str(path), "bytes": path.stat().st_size, "sha256": sha256_file(str(path))}
        for key, path in files
    ]
    record = {
        "name": cal.name,
        "source": cal.source,
        "roots": [os.path.abspath(r) for r in cal.roots],
        "count": len(entries),
        "manifest_sha256": manifest_hash([(e["key"], e["path"]) for e in entries], content=True),
        "manifest_kind": "relative path + sha256",
        "files": [{"key": e["key"], "sha256": e["sha256"]} for e in entries],
    }
    if not reads_dataset:
        record["eval_set"] = None  # random input tensors: no evaluation image to overlap with
    elif record["source"] == "dataset":  # the run's own samples are the split's held-out part
        record["eval_set"] = {"disjoint_by": "split: calibration from the search part, evaluation held out"}
    else:
        record["eval_set"] = refuse_overlap(entries, eval_root)
    return record, [path for _, path in files]


def calibration_tensors(paths: list[Path], model_path: str, preprocess: dict[str, Any] | None) -> list[Any]:
    from evalharness.runtime.quantize import float_input

    _, _, shape, dtype = float_input(model_path)
    if len(shape) != 4 or dtype != "float32":
        raise ConfigError(f"quant: {model_path} input {list(shape)} {dtype} is not a float NHWC image")
    inp = InputSpec(shape[1], shape[2], shape[3], "float32")
    spec = spec_from_config(preprocess)
    return [preprocess_file(str(p), spec, inp) for p in paths]


def prepare_variant(
    quant: QuantSchema,
    model: dict[str, Any],
    dataset_root: str,
    reads_dataset: bool,
    cache_dir: str,
    dataset_files: list[str] | None = None,
) -> dict[str, Any] | None:
    """Build or reuse the variant and point ``model['path']`` at it; returns ``provenance.model.quant``.

    ``model`` is the caller's own scratch copy of the model settings (the run plan gets a new value
    made from it); ``dataset_root``: the evaluation folder; ``reads_dataset``: the task scores dataset
    images (so calibration must not overlap them); ``dataset_files``: the search part's image files
    (calibration ``source: dataset``). ``quant=none`` returns None and changes nothing.
    """
    recipe, edit = quant.recipe, quant.weights.method != "none"
    if not recipe and not edit:
        return None
    source = model["path"]
    if not os.path.isfile(source):
        raise DataError(f"quant: float model {source} not found; set model.path or paths.models_dir")
    edited = None
    if edit:  # pruned or clustered first, quantized after (the guide's order)
        from evalharness.run.weight_variants import weight_variant

        edited = weight_variant(source, quant.weights, cache_dir)
        source = model["path"] = edited.pop("_path")
    if not recipe:
        return {"name": quant.name, "recipe": None, "weights": edited}
    out = quantized_variant(quant, model, source, dataset_root, reads_dataset, cache_dir, dataset_files)
    if edited is not None:
        from evalharness.run.weight_variants import check_kept

        edited["after_quantization"] = check_kept(model["path"], edited)
    return {**out, "weights": edited}


def quantized_variant(
    quant: QuantSchema,
    model: dict[str, Any],
    source: str,
    dataset_root: str,
    reads_dataset: bool,
    cache_dir: str,
    dataset_files: list[str] | None,
) -> dict[str, Any]:
    """The recipe applied to ``source`` (the float model, or its pruned/clustered edit), cached."""
    from evalharness.runtime.quantize import check_recipe, is_recipe_file, needs_calibration, recipe_ops

    recipe = quant.recipe
    check_recipe(recipe)
    io_dtype = quant.io_dtype
    if io_dtype and not is_recipe_file(recipe) and io_dtype != IO_DTYPES.get(recipe):
        raise ConfigError(
            f"quant.io_dtype={io_dtype}: ai-edge-quantizer recipe {recipe} makes "
            f"{IO_DTYPES.get(recipe, 'float32')} inputs/outputs; other I/O types are not supported yet"
        )
    calibration: dict[str, Any] | None = None
    paths: list[Path] = []
    if needs_calibration(recipe):
        if not quant.calibration:
            raise ConfigError(f"quant={quant.name}: recipe {recipe} needs quant.calibration")
        calibration, paths = calibration_record(quant.calibration, reads_dataset, dataset_root, dataset_files)
    ops = recipe_ops(recipe) if is_recipe_file(recipe) else recipe
    if quant.weights.method == "cluster":  # shared values stay shared: per-tensor weight scales
        from evalharness.run.weight_variants import tensorwise

        ops = tensorwise(recipe_ops(recipe))
    built = build_variant(source, ops, calibration, paths, model.get("preprocess"), cache_dir)
    record = built.pop("_cached")
    model["path"] = record["path"]
    if quant.integer_input:
        model["preprocess"] = with_integer_input(model.get("preprocess"), quant)
    out = {"name": quant.name, "recipe": recipe, **built}
    if is_recipe_file(recipe):
        out["recipe_file"] = {"path": os.path.abspath(recipe), **recipe_key(ops)}
    return out


def build_variant(
    source: str,
    recipe: Any,
    calibration: dict[str, Any] | None,
    paths: list[Path],
    preprocess: dict[str, Any] | None,
    cache_dir: str,
) -> dict[str, Any]:
    """The variant of ``source`` made by ``recipe`` (a name or a recipe list), calibrated with that
    recipe on ``paths``, cached: the one way a variant is built (a run, a recipe file given back,
    the variant a repair chose)."""
    from evalharness.runtime.quantize import RANGE_RULE, VariantBuilder, quantizer_version

    source_sha = sha256_file(source)
    key = {
        "source_sha256": source_sha,
        **recipe_key(recipe),
        "quantizer": quantizer_version(),
        "calibration_manifest_sha256": calibration and calibration["manifest_sha256"],
        "calibration_preprocess": calibration and preprocess,
        "calibration_ranges": calibration and RANGE_RULE,  # a changed merge rule is another variant
    }

    def build(folder: str) -> tuple[bytes, dict[str, Any]]:
        tensors = calibration_tensors(paths, source, preprocess) if calibration else None
        builder = VariantBuilder(source, recipe, tensors)
        data, recipe_ops = builder.build(builder.recipe)
        return data, {"recipe_ops": recipe_ops, "calibration_ranges": builder.range_rule}

    record = cached_model(cache_dir, "quant", key, build, record_name="variant.json")
    return {
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
        "_cached": record,
    }
