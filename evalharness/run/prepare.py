"""Everything before the run directory is claimed: the quantized variant, the live task (its
samples listed), the tensor cache, the resize implementation. A refusal here writes nothing."""

from __future__ import annotations

from evalharness.run.hydra_access import is_multirun, use_cache


def with_quantized_variant(rp):
    """(plan running the quantized variant, ``provenance.model.quant``); ``quant=none``: unchanged.

    A repair (``quant.max_drop``) or calibration drawn from the dataset splits the dataset: the plan
    then lists the held-out part only (``dataset.split``, :class:`evalharness.data.shard.Split`)."""
    from evalharness.core.schema import thaw
    from evalharness.run.variants import from_dataset, prepare_variant, repair_requested, split_of

    model, quant, dataset = thaw(rp.model), thaw(rp.quant), thaw(rp.dataset)
    split = split_of(quant)
    if split is not None:
        dataset["split"] = {**split, "part": "held_out"}
    if split is not None and repair_requested(quant):
        from evalharness.run.repair import repair_variant

        record = repair_variant(rp, quant, model)
    else:
        files = None
        if split is not None and from_dataset(quant):
            from evalharness.run.repair_eval import Part

            files = Part(rp, model, split, "search").files()
        record = prepare_variant(
            quant, model, dataset, rp.definition.abilities.reads_dataset, rp.paths["cache_dir"], files
        )
    if record is None:
        return rp, {"name": rp.quant["name"], "recipe": None}
    return rp.replace(model=model, dataset=dataset), record


def prepare(rp, run_dir: str):
    """Everything before the run directory is claimed: (plan, quant record, task, loop settings), or
    the finished document of a sweep job that is skipped. Refusals here write nothing."""
    import dataclasses

    from evalharness.rundir.state import sweep_job_mode
    from evalharness.tasks.discovery import live_class

    definition, loop = rp.definition, rp.loop
    if is_multirun() and not (loop.resume or loop.overwrite):
        # a re-run sweep skips complete jobs (before any set-up) and resumes partial ones
        mode, finished = sweep_job_mode(run_dir, rp.config(), definition.abilities.can_resume)
        if mode == "skip":
            print(f"skipped: {run_dir} already holds a complete run of this config")
            return finished
        if mode in ("resume", "overwrite"):
            loop = dataclasses.replace(loop, **{mode: True})
    rp, quant = with_quantized_variant(rp)
    task = live_class(definition)(rp.task, rp.model, rp.dataset)
    if use_cache(rp.loop.tensor_cache) and task.cacheable:
        from evalharness.data.cache import CachedTask

        task = CachedTask(task, rp.paths["cache_dir"])
    return rp, quant, task, loop


def use_resize(choice: str) -> None:
    """``loop.resize``: the exact tool resize by LiteRT's reference kernel, or the numpy port."""
    from evalharness.data.preprocess import set_exact_resize
    from evalharness.runtime.native_resize import shared

    set_exact_resize(shared() if choice == "native" else None)
