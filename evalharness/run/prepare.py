"""Everything before the run directory is claimed: the model variant (:mod:`evalharness.transforms`),
the live task (its samples listed), the tensor cache, the resize implementation. A refusal here
writes nothing."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from evalharness.run.hydra_access import is_multirun, use_cache
from evalharness.settings.groups import RunSettings
from evalharness.transforms.plan import with_quantized_variant

if TYPE_CHECKING:  # for the types only: the loop and the task load when a run starts
    from evalharness.loop.engine import LoopSettings
    from evalharness.tasks.live import Task

Prepared = tuple[RunSettings, dict[str, Any], "Task", "LoopSettings"]


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
