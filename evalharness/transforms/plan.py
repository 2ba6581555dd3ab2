"""The plan that runs a variant: which transform the quant settings ask for, run on the plan's own
model, and the new plan made from what it returns (:meth:`RunSettings.replace`: the variant's model
settings and the dataset part the run then lists). The one entry of ``run/`` into this package.

``quant/calibration=auto`` is resolved here first (:mod:`evalharness.transforms.calibration_choice`):
against the dataset's list, it becomes a slice of the dataset (a split) or the bundled set. A repair
(``quant.max_drop``), a layer search or calibration drawn from the dataset splits the dataset: the
plan then lists the held-out part only (``RunSettings.split``, :class:`evalharness.data.shard.Split`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from evalharness.settings.groups import RunSettings
from evalharness.settings.quant_rules import split_of
from evalharness.transforms.calibration_choice import Choice, choose, is_auto
from evalharness.transforms.variant import TRANSFORMS, Request, kind_of


def with_quantized_variant(settings: RunSettings) -> tuple[RunSettings, dict[str, Any]]:
    """(plan running the variant, ``provenance.model.quant``); ``quant=none``: unchanged."""
    quant = settings.quant
    split = split_of(quant)
    choice = None
    if split is None and is_auto(quant.calibration) and quant.recipe:  # a repair resolves auto itself
        choice = choose_calibration(settings)
        quant, split = dataclasses.replace(quant, calibration=choice.calibration), choice.split
    kind = kind_of(quant, split)
    if kind is None:
        return settings, {"name": quant.name, "recipe": None}
    variant = TRANSFORMS.get(kind)(Request(settings, quant, settings.model, split))
    record = variant.provenance
    if choice is not None and record.get("calibration"):
        record = {**record, "calibration": {**record["calibration"], "choice": choice.record}}
    held_out = {**split, "part": "held_out"} if split is not None else None
    return settings.replace(model=variant.model, split=held_out), record


def choose_calibration(settings: RunSettings) -> Choice:
    """``quant/calibration=auto`` resolved against the dataset's list (its size, after
    ``task.num_images``): a slice of it, or the bundled set."""
    from evalharness.runtime.quantize import needs_calibration

    cal = settings.quant.calibration
    assert cal is not None  # called for quant/calibration=auto only (is_auto)
    if not needs_calibration(settings.quant.recipe):
        return choose(cal, None, "the recipe needs no calibration")
    if not settings.definition.abilities.reads_dataset:
        return choose(cal, None)
    if settings.dataset.shard.count > 1:
        return choose(cal, None, "dataset.shard.count > 1 (each shard would slice its own list)")
    # a folder or a container alike: the slice is read by id through the dataset's reader
    return choose(cal, len(settings.live_task().samples))
