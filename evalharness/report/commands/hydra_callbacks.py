"""Hydra callbacks: the sweep report and the run index when a multirun ends, and experiment tracking.

:class:`SweepReportCallback` first merges the shard runs of the sweep (``merge_shards``, see
:mod:`.merge_sweep`), so the report lists each merged run too, then refreshes the index page of every
run (:mod:`.index`). :class:`TrackingCallback` logs each job's run directory to MLflow once the job
has written it (``tracking=mlflow``; a no-op with ``tracking=none``), a multirun as a parent run with
one child per job. Both are enabled by ``conf/hydra/callbacks/sweep_report.yaml`` (in the defaults of
``conf/hydra/default.yaml``); ``~hydra/callbacks`` disables them. A report, an index or a tracked run
that cannot be written is a warning, never a failed job or sweep: the runs themselves are intact.

Tracking reads the run's files after the job, not the live run: what it logs is what metrics.json
says (a failed, invalid or partial run included, with that status), whichever launcher ran the job.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from evalharness.core.boundary import describe
from evalharness.core.errors import EvalHarnessError
from evalharness.core.override_grammar import override_parts
from evalharness.core.untrusted import read_json

log = logging.getLogger("evalharness.report")


class SweepReportCallback(Callback):
    def __init__(
        self,
        baseline: list[str] | None = None,
        out: str | None = None,
        merge_shards: bool = True,
        index: str | None = "outputs",
    ):
        self.baseline = list(baseline or [])
        self.out = out
        self.merge_shards = merge_shards
        self.index = index

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from evalharness.report.commands.sweep import parse_baseline, write_report

        sweep_dir = str(config.hydra.sweep.dir)
        if self.merge_shards:
            self._merge(sweep_dir)
        try:
            report = write_report(sweep_dir, self.out, parse_baseline(self.baseline))
            print(f"sweep report: {report['paths']['sweep.md']}")
        except (EvalHarnessError, OSError) as exc:
            log.warning("sweep report not written: %s", exc)
        if self.index:
            self._index(sweep_dir, self.index)

    def _index(self, sweep_dir: str, index: str) -> None:
        """The index of ``index`` (outputs/) when the sweep lies under it, else of the sweep dir."""
        from evalharness.report.commands.index import write_index

        root = os.path.abspath(index)
        if not os.path.abspath(sweep_dir).startswith(root + os.sep):
            root = sweep_dir
        try:
            print(f"run index: {write_index(root)['path']}")
        except (EvalHarnessError, OSError) as exc:
            log.warning("run index not written: %s", exc)

    @staticmethod
    def _merge(sweep_dir: str) -> None:
        """Shard jobs of this sweep -> one merged run per complete group (report/commands/merge_sweep.py)."""
        from evalharness.report.commands.merge_sweep import merge_sweep

        try:
            merged, problems = merge_sweep(sweep_dir)
        except (EvalHarnessError, OSError) as exc:
            log.warning("shard runs not merged: %s", exc)
            return
        for path in merged:
            print(f"merged shards: {path}")
        for problem in problems:
            log.warning("shard runs not merged: %s", problem)


def tracking_settings(config: DictConfig) -> Any:
    """The validated ``tracking`` group, or None when off or invalid (the job's validation has already
    said why: a second line here would repeat it)."""
    from evalharness.report.tracking.mapping import check_tracking

    node = OmegaConf.select(config, "tracking")
    try:
        settings = check_tracking(OmegaConf.to_container(node, resolve=True) if node is not None else None)
    except Exception:  # noqa: BLE001 - reported by settings/validate.validate in the job
        return None
    return settings if settings.name != "none" else None


def _warn(what: str, exc: BaseException) -> str:
    message = describe(exc)
    print(f"warning: tracking: {what} not logged: {message}", file=sys.stderr)
    return message


def _multirun(config: DictConfig) -> bool:
    return str(config.hydra.mode).endswith("MULTIRUN")


class TrackingCallback(Callback):
    """Each job's run -> an MLflow run; a multirun -> a parent run whose children are its jobs. The
    parent's id travels in ``<sweep dir>/tracking.json``, so jobs in other processes (joblib,
    submitit, Ray) find it too; each run dir gets a ``tracking.json`` saying where it was logged.

    MLflow is imported and its store opened once per process, after the run (never beside it: a
    second thread importing while the run imports could hand either a half-initialised module)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from evalharness.report.tracking.mlflow_store import Store, write_record

        settings = tracking_settings(config)
        if settings is None:
            return
        sweep_dir = str(config.hydra.sweep.dir)
        overrides = [str(o) for o in config.hydra.overrides.task]
        try:
            store = Store(settings)
            params = {f"sweep.{p.key}": p.value for p in map(override_parts, overrides)}
            tags = {"evalharness.sweep_dir": os.path.abspath(sweep_dir), "evalharness.kind": "multirun"}
            run_id = store.start_parent(os.path.basename(os.path.normpath(sweep_dir)), params, tags)
            write_record(sweep_dir, store.record(run_id=run_id, status="logged"))
        except Exception as exc:  # noqa: BLE001 - tracking never fails a sweep
            _warn("the multirun's parent run", exc)

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        from evalharness.report.tracking.mlflow_store import Store, write_record
        from evalharness.rundir.document import has_document
        from evalharness.rundir.reader import load_run

        settings = tracking_settings(config)
        run_dir = str(config.hydra.runtime.output_dir)
        if settings is None or not has_document(run_dir):
            return
        multirun = _multirun(config)
        parent = _parent(str(config.hydra.sweep.dir)) if multirun else None
        name = os.path.basename(run_dir) if multirun else os.path.relpath(run_dir)
        store = None
        try:
            store = Store(settings, announce=not multirun)
            run = load_run(run_dir, name)
            run_id = store.log_run(run, name, parent)
            write_record(run_dir, store.record(run_id=run_id, parent_run_id=parent, status="logged"))
            print(f"tracked: mlflow run {run_id} ({store.uri})")
        except Exception as exc:  # noqa: BLE001 - a tracking error never changes the run's exit code
            message = _warn(f"run {run_dir}", exc)
            record = store.record(status="failed", error=message) if store else {"status": "failed"}
            with contextlib.suppress(OSError):
                write_record(run_dir, {**record, "error": message})

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Attach the sweep's table, HTML and the index to the parent and close it: FAILED when a job
        did not complete (as the multirun's exit code 1 says)."""
        from evalharness.report.commands.sweep import collect
        from evalharness.report.tracking.mlflow_store import Store

        settings = tracking_settings(config)
        sweep_dir = str(config.hydra.sweep.dir)
        parent = _parent(sweep_dir)
        if settings is None or parent is None:
            return
        try:
            jobs = collect(sweep_dir)
            failed = sum(j["doc"] is None or j["doc"].status != "complete" for j in jobs)
            names = ("sweep.csv", "sweep.md", "sweep.html", "index.html")
            files = [p for n in names if os.path.isfile(p := os.path.join(sweep_dir, n))]
            Store(settings, announce=False).end_parent(parent, failed, files)
        except Exception as exc:  # noqa: BLE001 - tracking never fails a sweep
            _warn("the multirun's parent run", exc)


def _parent(sweep_dir: str) -> str | None:
    from evalharness.report.tracking.mapping import TRACKING_FILE

    path = os.path.join(sweep_dir, TRACKING_FILE)
    try:
        return read_json(path, "tracking file").get("run_id") if os.path.exists(path) else None
    except EvalHarnessError:
        return None
