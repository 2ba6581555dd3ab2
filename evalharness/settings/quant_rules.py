"""The quant settings' own rules: which split of the dataset a ``quant`` setting implies, whether it
asks for a repair or a layer search, and the checks between the quant fields and the rest of the
config (exit 2 before anything runs). Read by validation (:mod:`evalharness.settings.validate`) and
by the transforms that make the variant (:mod:`evalharness.transforms`), so both read one answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from evalharness.core.errors import ConfigError
from evalharness.settings.groups import DatasetSchema, ModelSchema, QuantSchema
from evalharness.tasks.comparison import RepairMetric
from evalharness.tasks.definition import comparer


def repair_requested(quant: QuantSchema) -> bool:
    return quant.max_drop is not None or quant.max_drop_relative is not None


def from_dataset(quant: QuantSchema) -> bool:
    return quant.calibration is not None and quant.calibration.source == "dataset"


class SearchSplit(TypedDict):
    """How the dataset is split for a search or a calibration drawn from it (``quant.search``); a
    run on one part adds ``part`` (``search`` | ``held_out``)."""

    fraction: float
    scheme: str


def split_of(quant: QuantSchema) -> SearchSplit | None:
    """The dataset split a quant setting implies (a repair search, calibration drawn from the
    dataset, a layer search of pruning or clustering), without its part; None: the whole list."""
    quantized = quant.recipe and (repair_requested(quant) or from_dataset(quant))
    if not (quantized or layer_search(quant)):
        return None
    return {"fraction": float(quant.search.fraction), "scheme": quant.search.scheme}


def layer_search(quant: QuantSchema) -> bool:
    """The run searches which weight tensors to edit: a sensitivity scan, or a drop to hold."""
    return quant.weights.method != "none" and (quant.weights.scan or repair_requested(quant))


def _a_recipe(recipe: object) -> bool:
    """``quant.recipe``'s type: a name or a file (text), or the quantizer's list of op configs."""
    listed = isinstance(recipe, list | tuple) and all(isinstance(e, Mapping) for e in recipe)
    return isinstance(recipe, str) or listed


def repair_metric(quant: QuantSchema, definition: Any, model: ModelSchema) -> RepairMetric:
    """The metric a repair or a layer search bounds and why (said once, recorded): ``quant.metric``,
    else what the task's comparison picks for this model (COCO: by the model's head), else the
    task's ``repair_metric``. One error line when the task offers none or cannot pair the one asked."""
    compare = comparer(definition) if definition.abilities.repair_metric is not None else None
    if compare is None:
        raise ConfigError(
            f"{_what(quant)}: task={definition.name} offers no repair (its definition names no "
            "repair_metric with a paired comparison of records; classification and COCO do)"
        )
    return compare.repair_metric(model.decoder, quant.metric)


def _what(quant: QuantSchema) -> str:
    if repair_requested(quant):
        return "quant.max_drop"
    return "quant.weights.scan" if quant.weights.method != "none" else "quant/calibration=dataset"


def check_quant(quant: QuantSchema, definition: Any, dataset: DatasetSchema, model: ModelSchema) -> None:
    """Rules between the quant fields and the rest of the config (exit 2 before anything runs)."""
    repair, edit = repair_requested(quant), quant.weights.method != "none"
    if repair and quant.max_drop is not None and quant.max_drop_relative is not None:
        raise ConfigError("quant.max_drop and quant.max_drop_relative: give one (absolute or relative drop)")
    recipe = quant.recipe
    if quant.weights.scan and not edit:
        raise ConfigError("quant.weights.scan needs pruning or clustering: quant=prune or quant=cluster")
    splits = repair or from_dataset(quant) or layer_search(quant)
    what = _what(quant)
    if quant.metric is not None and not (repair or layer_search(quant)):
        raise ConfigError(
            f"quant.metric={quant.metric} names what quant.max_drop (or a quant.weights.scan) bounds: "
            "give one of them, or leave quant.metric out"
        )
    if splits and not recipe and not edit:
        raise ConfigError(f"{what} needs a quantized variant: quant=int8 or int16x8 (quant={quant.name})")
    if recipe is not None and not _a_recipe(recipe):
        shown = list(recipe) if isinstance(recipe, tuple) else recipe
        raise ConfigError(
            f"quant.recipe={shown!r} is not a recipe; give a recipe name (e.g. quant.recipe=static_wi8_ai8), "
            "a recipe .json file or a list of op configs"
        )
    if recipe:
        from evalharness.runtime.quantize import check_recipe

        check_recipe(recipe)
    if layer_search(quant) and recipe:
        raise ConfigError(
            f"{what} with quant={quant.name}: the layer search of pruning and clustering runs on the float "
            "model only; use quant=prune or quant=cluster (then quantize the chosen layers' model)"
        )
    if repair or layer_search(quant):
        repair_metric(quant, definition, model)
    if splits:  # a recipe or a weight edit is set by now
        if not definition.abilities.reads_dataset:
            raise ConfigError(f"{what}: task={definition.name} reads no dataset to split")
        if not 0 < float(quant.search.fraction) < 1:
            raise ConfigError(f"quant.search.fraction={quant.search.fraction}: use a value in (0, 1)")
        if dataset.shard.count > 1:
            raise ConfigError(f"{what} splits the dataset: use dataset.shard.count=1")
