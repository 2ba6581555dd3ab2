"""The passes of a run after its directory is claimed: start-up passes (cold/warm caches), the
reference pass of a task that compares against one, and the measured loop."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NamedTuple

from evalharness.core.errors import EvalHarnessError
from evalharness.core.interrupts import checkpoint
from evalharness.run.hydra_access import job_overrides
from evalharness.settings.groups import RunSettings

if TYPE_CHECKING:  # for the types only: the loop and the runtime load when a run starts
    from evalharness.loop.engine import LoopResult, LoopSettings
    from evalharness.run.start_up import StartUp
    from evalharness.rundir.files import RunWriter
    from evalharness.runtime.contract import Model
    from evalharness.runtime.op_profile import OpProfile
    from evalharness.tasks.live import Task


class Ran(NamedTuple):
    """What the loops produced: the predictions writer, the measured pass, the reference pass."""

    writer: RunWriter
    model: Model
    result: LoopResult
    # (plan, model, loop result) of the reference pass, if the task has one
    reference: tuple[Any, Model, LoopResult] | None
    start_up: StartUp | None = None  # cold/warm passes (metrics.compile_cache), if the task asked for them
    op_profile: OpProfile | None = None  # per-op time and placement (metrics.op_profile), if asked for


def execute(
    settings: RunSettings, task: Task, loop: LoopSettings, done: list[dict[str, Any]], run_dir: str
) -> Ran:
    """The cold/warm passes and the reference pass (if the task has them) and the measured loop."""
    from evalharness.loop.engine import run_loop
    from evalharness.run.start_up import measure
    from evalharness.rundir.files import RunWriter
    from evalharness.runtime import load_model

    checkpoint("start-up")  # a test's pause point (core/interrupts.py)
    start_up = measure(settings.definition.rules().start_up, job_overrides(), run_dir)
    writer = RunWriter(run_dir, resume=bool(done))
    reference = None
    if (ref_pass := task.reference_pass()) is not None:  # same inputs through a reference delegate first
        ref_plan = settings.reference_plan  # planned with the run's settings, before the directory's claim
        assert ref_plan is not None  # validate plans one for every task with a reference delegate
        ref_model, ref_result = run_loop(
            ref_pass,
            lambda: load_model(settings.model.path, ref_plan, settings.runtime.name),
            lambda record: None,
            settings.loop,
        )
        if ref_result.status != "complete":
            raise EvalHarnessError(f"reference pass stopped early: {ref_result.stop_reason}")
        reference = (ref_plan, ref_model, ref_result)
    keep = writer.append if settings.definition.abilities.writes_predictions else (lambda record: None)
    s = settings
    try:
        model, result = run_loop(
            task,
            lambda: load_model(s.model.path, s.delegate_plan, s.runtime.name, s.runner),
            keep,
            loop,
            done,
        )
    finally:
        writer.close()
    profile = None
    if settings.loop.op_profile or settings.definition.rules().op_profile:
        if result.status == "complete":
            profile = op_profile(settings, task, model)
        else:  # never silently absent: the run's figures stop where the loop stopped
            print(f"op profile skipped: the run did not complete ({result.stop_reason})", file=sys.stderr)
    return Ran(writer, model, result, reference, start_up, profile)


def op_profile(settings: RunSettings, task: Task, model: Model) -> OpProfile:
    """Per-op time and placement of the run's model on the run's delegate (the runtime's profiler,
    else sub-model timing), fed the first sample (after the measured loop, so it cannot disturb the
    loop's figures)."""
    from evalharness.runtime import load_model
    from evalharness.runtime.op_profile import profile_ops

    inputs = task.prepare(next(iter(task.samples)))
    return profile_ops(
        settings.model.path,
        lambda path: load_model(path, settings.delegate_plan, settings.runtime.name),
        model,
        inputs,
        repeats=settings.loop.op_profile_repeats,
        plan=settings.delegate_plan,
    )
