"""One job: an immutable run plan -> a run directory. What ``python -m evalharness`` runs per job.

The flow is one way: plan (:mod:`evalharness.settings.validate`) -> the task's live half lists and
prepares samples (``tasks/<task>/live.py``) -> the loop invokes and times
(:mod:`evalharness.loop.engine`) -> the task's scorer makes metrics -> the run directory gets its
files (:mod:`evalharness.rundir`). What a task or a model can do is asked through their declared
abilities, never by name or ``hasattr``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from evalharness.core.boundary import debug, describe
from evalharness.core.errors import RunStopped
from evalharness.core.interrupts import Interrupted
from evalharness.report.views.repair_view import write_repair
from evalharness.run.execute import execute
from evalharness.run.hydra_access import job_overrides, multirun_launcher
from evalharness.run.identity import run_identity
from evalharness.run.parallel import refuse_unsplit_resume, run_parallel
from evalharness.run.prepare import prepare, use_resize
from evalharness.run.record import record_config, record_interrupt, record_run
from evalharness.rundir.document import now
from evalharness.settings.child_processes import parse_parallel
from evalharness.settings.groups import RunSettings


def run(cfg: DictConfig, run_dir: str) -> Mapping[str, Any]:
    """Run the configured task into ``run_dir``; returns the metrics.json document."""
    from evalharness.settings.validate import validate

    settings = validate(cfg, multirun_launcher(), job_overrides(), command_line=HydraConfig.initialized())
    if parse_parallel(settings.loop.parallel) != "off":
        return run_parallel(settings, run_dir, job_overrides())
    refuse_unsplit_resume(run_dir, settings.loop.resume)
    return run_settings(settings, run_dir)


def run_settings(settings: RunSettings, run_dir: str) -> Mapping[str, Any]:
    """Run a validated plan into ``run_dir``; returns the metrics.json document.

    Before the directory is claimed a failure writes nothing there; after, a failure before the loop
    leaves a ``failed`` record; once the loop ran, whatever happens the run's metrics.json says how
    far it got and :class:`RunStopped` (exit 1) is raised when it did not complete.
    """
    from evalharness.rundir.document import write_failure
    from evalharness.rundir.state import claim, release

    started = now()
    use_resize(settings.loop.resize)
    prepared = prepare(settings, run_dir)
    if isinstance(prepared, dict):
        return prepared
    settings, quant, task, loop = prepared
    definition = settings.definition
    identity = run_identity(settings, task, task.provenance())
    done = claim(
        run_dir,
        settings.config(),
        identity,
        resume=loop.resume,
        overwrite=loop.overwrite,
        can_resume=definition.abilities.can_resume,
    )
    where = "before the loop"
    try:
        record_config(run_dir, settings)
        write_repair(run_dir, quant)
        try:
            ran = execute(settings, task, loop, done, run_dir)
        except Exception as exc:
            write_failure(run_dir, describe(exc), settings.config(), job_overrides())
            raise
        where = "while scoring"
        try:
            return record_run(settings, task, quant, started, ran, identity)
        except RunStopped:
            raise
        except Exception as exc:
            if debug():
                raise
            write_failure(run_dir, describe(exc), settings.config(), job_overrides())
            raise RunStopped(f"the run could not be recorded: {describe(exc)}") from exc
    except Interrupted as exc:  # the loop keeps its own (partial); elsewhere the predictions are kept
        raise record_interrupt(run_dir, settings.config(), exc, where) from None
    finally:
        release(run_dir)
