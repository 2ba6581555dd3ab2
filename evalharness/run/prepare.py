"""Everything before the run directory is claimed: the quantized variant, the live task (its
samples listed), the tensor cache, the resize implementation. A refusal here writes nothing."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from evalharness.data.preprocess import spec_from_config
from evalharness.run.calibration_choice import Choice, choose, is_auto
from evalharness.run.groups import RunSettings
from evalharness.run.hydra_access import is_multirun, use_cache

if TYPE_CHECKING:  # for the types only: the loop and the task load when a run starts
    from evalharness.loop.engine import LoopSettings
    from evalharness.tasks.live import Task

Prepared = tuple[RunSettings, dict[str, Any], "Task", "LoopSettings"]


def with_quantized_variant(settings: RunSettings) -> tuple[RunSettings, dict[str, Any]]:
    """(plan running the quantized variant, ``provenance.model.quant``); ``quant=none``: unchanged.

    A repair (``quant.max_drop``) or calibration drawn from the dataset splits the dataset: the plan
    then lists the held-out part only (``RunSettings.split``, :class:`evalharness.data.shard.Split`)."""
    from evalharness.core.schema import thaw
    from evalharness.run.variants import (
        from_dataset,
        layer_search,
        prepare_variant,
        repair_requested,
        split_of,
    )

    model, quant = thaw(settings.model), settings.quant  # model: a scratch copy the variant's path goes into
    split = split_of(quant)
    choice = None
    if split is None and is_auto(quant.calibration) and quant.recipe:  # a repair resolves auto itself
        choice = choose_calibration(settings, model)
        quant, split = dataclasses.replace(quant, calibration=choice.calibration), choice.split
    record: dict[str, Any] | None
    if split is not None and repair_requested(quant) and quant.recipe:
        from evalharness.run.repair import repair_variant

        record = repair_variant(settings, model)
    elif layer_search(quant):
        record = searched_weights(settings, model)
    else:
        files = None
        if split is not None and from_dataset(quant):  # the search part: the slice that calibrates
            from evalharness.run.repair_eval import Part

            files = Part(settings, model, split, "search").files()
        record = prepare_variant(
            quant,
            model,
            settings.dataset.root,
            settings.definition.abilities.reads_dataset,
            settings.paths.cache_dir,
            files,
        )
    if record is None:
        return settings, {"name": quant.name, "recipe": None}
    if choice is not None and record.get("calibration"):
        record["calibration"] = {**record["calibration"], "choice": choice.record}
    preprocess = spec_from_config(model.get("preprocess"))  # with the variant's integer_input
    typed = dataclasses.replace(settings.model, path=model["path"], preprocess=preprocess)
    held_out = {**split, "part": "held_out"} if split is not None else None
    return settings.replace(model=typed, split=held_out), record


def choose_calibration(settings: RunSettings, model: dict[str, Any]) -> Choice:
    """``quant/calibration=auto`` resolved against the dataset's list (its size, after
    ``task.num_images``): a slice of it, or the bundled set (:mod:`evalharness.run.calibration_choice`)."""
    from evalharness.runtime.quantize import needs_calibration

    cal = settings.quant.calibration
    assert cal is not None  # called for quant/calibration=auto only (is_auto)
    if not needs_calibration(settings.quant.recipe):
        return choose(cal, None, "the recipe needs no calibration")
    if not settings.definition.abilities.reads_dataset:
        return choose(cal, None)
    if settings.dataset.shard.count > 1:
        return choose(cal, None, "dataset.shard.count > 1 (each shard would slice its own list)")
    task = settings.live_task(model)
    if not getattr(task, "cacheable", True):  # samples inside container files, not one file each
        return choose(cal, None, "the dataset is a container: calibration reads one image file per sample")
    return choose(cal, len(task.samples))


def searched_weights(settings: RunSettings, model: dict[str, Any]) -> dict[str, Any] | None:
    """``quant.weights.scan`` / ``quant.max_drop`` with prune or cluster (run/weight_search.py): the
    layers searched on the search part, the chosen ones edited, checked on the held-out part."""
    from evalharness.run.variants import prepare_variant
    from evalharness.run.weight_search import held_out, weight_search

    quant, source = settings.quant, model["path"]
    found, only = weight_search(settings, model)
    if only is not None:
        quant = dataclasses.replace(quant, weights=dataclasses.replace(quant.weights, only=tuple(only)))
    record = None
    if only != []:
        record = prepare_variant(quant, model, settings.dataset.root, True, settings.paths.cache_dir)
    if record is None:  # no layer holds the drop: the float model runs, and the record says so
        print(f"weights: {found['status']}", flush=True)
        return {"name": quant.name, "recipe": None, "weights": {"search": found}}
    if only is not None:
        held = found["held_out"] = held_out(settings, dict(model, path=source), source, model["path"])
        print(
            f"weights: {len(only)} of {len(found['layers'])} weight tensors edited within {found['target']} "
            f"on the search part; held out ({held['images']} images): drop {held['drop']:+.4f}, "
            f"{'holds' if held['holds'] else 'does NOT hold'}",
            flush=True,
        )
    record["weights"]["search"] = found
    return record


def prepare(settings: RunSettings, run_dir: str) -> Prepared | dict[str, Any]:
    """Everything before the run directory is claimed: (plan, quant record, task, loop settings), or
    the finished document of a sweep job that is skipped. Refusals here write nothing."""
    from evalharness.rundir.state import sweep_job_mode

    definition, loop = settings.definition, settings.loop
    if is_multirun() and not (loop.resume or loop.overwrite):
        # a re-run sweep skips complete jobs (before any set-up) and resumes partial ones
        mode, finished = sweep_job_mode(run_dir, settings.config(), definition.abilities.can_resume)
        if mode == "skip" and finished is not None:
            print(f"skipped: {run_dir} already holds a complete run of this config")
            return finished
        if mode == "resume":
            loop = dataclasses.replace(loop, resume=True)
        elif mode == "overwrite":
            loop = dataclasses.replace(loop, overwrite=True)
    settings, quant = with_quantized_variant(settings)
    task: Any = settings.live_task()  # a Task, or below the tensor cache's wrapper of one (the same face)
    if use_cache(settings.loop.tensor_cache) and task.cacheable:
        from evalharness.data.tensor_cache import CachedTask

        task = CachedTask(task, settings.paths.cache_dir)
    return settings, quant, task, loop


def use_resize(choice: str) -> None:
    """``loop.resize``: the exact tool resize by LiteRT's reference kernel, or the numpy port."""
    from evalharness.data.preprocess import set_exact_resize
    from evalharness.runtime.native_resize import shared

    set_exact_resize(shared() if choice == "native" else None)
