"""One job: an immutable run plan -> a run directory. What ``python -m evalharness`` runs per job.

The flow is one way: plan (:mod:`evalharness.run.settings`) -> the task's live half lists and
prepares samples (``tasks/<task>/live.py``) -> the loop invokes and times
(:mod:`evalharness.loop.engine`) -> the task's scorer makes metrics -> the run directory gets its
files (:mod:`evalharness.rundir`). What a task or a model can do is asked through their declared
abilities, never by name or ``hasattr``.
"""

from __future__ import annotations

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from evalharness.core.boundary import debug, describe
from evalharness.core.errors import RunStopped
from evalharness.run.execute import execute
from evalharness.run.hydra_access import job_overrides, multirun_launcher
from evalharness.run.identity import run_identity
from evalharness.run.parallel import parse as parse_parallel
from evalharness.run.parallel import run_parallel
from evalharness.run.prepare import prepare, use_resize
from evalharness.run.record import record_config, record_run
from evalharness.run.repair_view import write_repair
from evalharness.rundir.document import now


def run(cfg: DictConfig, run_dir: str) -> dict:
    """Run the configured task into ``run_dir``; returns the metrics.json document."""
    from evalharness.run.settings import validate

    rp = validate(cfg, multirun_launcher(), job_overrides(), command_line=HydraConfig.initialized())
    if parse_parallel(rp.loop.parallel) != "off":
        return run_parallel(rp, run_dir, job_overrides())
    return run_settings(rp, run_dir)


def run_settings(rp, run_dir: str) -> dict:
    """Run a validated plan into ``run_dir``; returns the metrics.json document.

    Before the directory is claimed a failure writes nothing there; after, a failure before the loop
    leaves a ``failed`` record; once the loop ran, whatever happens the run's metrics.json says how
    far it got and :class:`RunStopped` (exit 1) is raised when it did not complete.
    """
    from evalharness.rundir.document import write_failure
    from evalharness.rundir.state import claim, release

    started = now()
    use_resize(rp.loop.resize)
    prepared = prepare(rp, run_dir)
    if isinstance(prepared, dict):
        return prepared
    rp, quant, task, loop = prepared
    definition = rp.definition
    identity = run_identity(rp, task, task.provenance())
    done = claim(
        run_dir,
        rp.config(),
        identity,
        resume=loop.resume,
        overwrite=loop.overwrite,
        can_resume=definition.abilities.can_resume,
    )
    try:
        record_config(run_dir, rp)
        write_repair(run_dir, quant)
        try:
            ran = execute(rp, task, loop, done, run_dir)
        except Exception as exc:
            write_failure(run_dir, describe(exc), rp.config(), job_overrides())
            raise
        try:
            return record_run(rp, task, quant, started, ran, identity)
        except RunStopped:
            raise
        except Exception as exc:
            if debug():
                raise
            write_failure(run_dir, describe(exc), rp.config(), job_overrides())
            raise RunStopped(f"the run could not be recorded: {describe(exc)}") from exc
    finally:
        release(run_dir)


