"""The MLflow side of tracking: one client per process, a run directory logged as an MLflow run, a
multirun's parent run, and ``mlflow:<run_id>`` read back into a temporary run directory.

Only :class:`mlflow.tracking.MlflowClient` is used (no fluent ``mlflow.start_run`` state), so a
multirun's jobs in one process never share an "active run" by accident, and a child is a child by
its ``mlflow.parentRunId`` tag. What is logged comes from :mod:`.tracking` (the run's own files).
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from evalharness.core.atomic_io import atomic_write_text, dumps
from evalharness.report.runs import ReportError
from evalharness.report.tracking import mapping as tracking
from evalharness.report.tracking.limit import T, TrackingFailed, bounded
from evalharness.rundir.reader import Run, load_run

SOURCE_PREFIX = "mlflow:"
PARENT_TAG = "mlflow.parentRunId"
BATCH = 100  # MLflow's limit on params (and tags) per log_batch call
BACKEND_LOGGERS = ("mlflow", "sqlalchemy", "alembic")  # silenced once a step is abandoned


@functools.lru_cache(maxsize=4)
def client(uri: str, timeout_s: int = 30, retries: int = 2) -> Any:
    """One client per store and process (opening a SQLite store checks its schema: once is enough).
    ``timeout_s`` and ``retries`` go to MLflow's own settings where it has them: each HTTP request
    to a server, and the attempts of its SQL engine at a store it cannot open (a module constant,
    10 attempts and ~100 s of back-off otherwise); :func:`.tracking_limit.bounded` holds the rest."""
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(timeout_s)
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = str(retries)
    from mlflow.store.db import utils as db_utils
    from mlflow.tracking import MlflowClient

    if hasattr(db_utils, "MAX_RETRY_COUNT"):
        db_utils.MAX_RETRY_COUNT = retries + 1
    return MlflowClient(tracking_uri=uri)


@functools.lru_cache(maxsize=16)
def experiment_id(uri: str, name: str, artifacts: str | None, timeout_s: int = 30, retries: int = 2) -> str:
    """The experiment ``name``, made on first use; in the default store its artifacts go beside the
    database (``artifacts``), not into the working directory of whichever process made it first."""
    c = client(uri, timeout_s, retries)
    found = c.get_experiment_by_name(name)
    if found is not None:
        return str(found.experiment_id)
    try:
        return str(c.create_experiment(name, artifact_location=artifacts))
    except Exception:  # noqa: BLE001 - another job of the sweep made it meanwhile
        found = c.get_experiment_by_name(name)
        if found is None:
            raise
        return str(found.experiment_id)


@functools.lru_cache(maxsize=4)
def _announce(text: str) -> None:
    print(f"tracking: {text}", file=sys.stderr)


class Store:
    """The configured MLflow store: the validated ``tracking`` settings and the resolved URI."""

    def __init__(self, settings: Any, cwd: str | None = None, announce: bool = True) -> None:
        self.settings = settings
        self.uri, self.assumed = tracking.store_uri(settings, cwd)
        if self.assumed and announce:
            _announce(self.assumed)  # the assumption, once per process, and recorded in tracking.json
        base = cwd or os.getcwd()
        self.artifacts = None if settings.uri else os.path.join(os.path.abspath(base), "mlruns")
        self.timing = (int(settings.timeout_s), int(settings.retries))

        self.cancelled = threading.Event()  # set when a step ran out of time: its thread stops

    @property
    def client(self) -> Any:
        return _Guarded(client(self.uri, *self.timing), self.cancelled)

    def experiment(self) -> str:
        self._check()
        return experiment_id(self.uri, self.settings.experiment, self.artifacts, *self.timing)

    def _check(self) -> None:
        _stop_if(self.cancelled)

    def _bounded(self, step: Callable[..., T], *args: Any) -> T:
        """One logging step, at most ``tracking.timeout_s`` of wall time whatever MLflow does. An
        abandoned step's thread may still be inside MLflow, which logs its retries to stderr: those
        loggers are silenced, so the thread never holds stderr's lock while the process exits."""
        try:
            return bounded(lambda: step(*args), self.timing[0], self.cancelled)
        finally:
            if self.cancelled.is_set():
                for name in BACKEND_LOGGERS:
                    logging.getLogger(name).setLevel(logging.CRITICAL + 1)

    def record(self, **fields: Any) -> dict[str, Any]:
        return {"backend": "mlflow", "uri": self.uri, "assumed": self.assumed, **fields}

    def start_parent(self, name: str, params: dict[str, str], tags: dict[str, str]) -> str:
        return self._bounded(self._start_parent, name, params, tags)

    def end_parent(self, run_id: str, failed: int, files: list[str]) -> None:
        self._bounded(self._end_parent, run_id, failed, files)

    def log_run(self, run: Run, name: str, parent: str | None) -> str:
        """One run directory as one MLflow run (a child of ``parent``); returns its run id."""
        return self._bounded(self._log_run, run, name, parent)

    def _start_parent(self, name: str, params: dict[str, str], tags: dict[str, str]) -> str:
        run = self.client.create_run(self.experiment(), run_name=name, tags=tags)
        self._params(run.info.run_id, params)
        return str(run.info.run_id)

    def _end_parent(self, run_id: str, failed: int, files: list[str]) -> None:
        for path in files:
            self.client.log_artifact(run_id, path)
        self.client.set_tag(run_id, "evalharness.failed_jobs", str(failed))
        self.client.set_terminated(run_id, "FAILED" if failed else "FINISHED")

    def _log_run(self, run: Run, name: str, parent: str | None) -> str:
        """The MLflow calls of :meth:`log_run`. The run is created RUNNING and ends with the run's
        own status, so an interrupted log never reads as a good run."""
        from mlflow.entities import Metric

        tags = tracking.run_tags(run, run.dir)
        if parent:
            tags[PARENT_TAG] = parent
        if self.assumed:
            tags["evalharness.tracking_store"] = self.assumed
        made = self.client.create_run(self.experiment(), run_name=name, tags=tags)
        run_id = made.info.run_id
        stamp = int(time.time() * 1000)
        metrics = [Metric(k, v, stamp, 0) for k, v in tracking.run_metrics(run).items()]
        self.client.log_batch(run_id, metrics=metrics)
        self._params(run_id, tracking.run_params(run))
        if self.settings.artifacts:
            for path, folder in tracking.run_files(run):
                self.client.log_artifact(run_id, path, folder or None)
        self.client.set_terminated(run_id, tracking.run_status(run)[0])
        return str(run_id)

    def _params(self, run_id: str, params: dict[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(k[:250], v[:6000]) for k, v in params.items()]
        for i in range(0, len(items), BATCH):
            self.client.log_batch(run_id, params=items[i : i + BATCH])


def _stop_if(cancelled: threading.Event) -> None:
    if cancelled.is_set():
        raise TrackingFailed("timed out (tracking.timeout_s)")


class _Guarded:
    """An MLflow client whose every call first checks that its step has not run out of time, so an
    abandoned worker logs nothing more once ``tracking.json`` says the step failed."""

    def __init__(self, inner: Any, cancelled: threading.Event) -> None:
        self._inner, self._cancelled = inner, cancelled

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            _stop_if(self._cancelled)
            return attr(*args, **kwargs)

        return call


def write_record(directory: str, record: dict[str, Any]) -> None:
    """``tracking.json`` beside a run's files (or in a sweep dir): where it was tracked, or why not."""
    atomic_write_text(os.path.join(directory, tracking.TRACKING_FILE), dumps(record))


def is_source(spec: str) -> bool:
    return str(spec).startswith(SOURCE_PREFIX)


def download(spec: str, into: str) -> str:
    """``mlflow:<run_id>`` -> a directory under ``into`` holding the run's logged files (a child run),
    or one folder per child (a parent run: a multirun dir ``report sweep`` reads). The store is
    ``MLFLOW_TRACKING_URI``, else the default beside outputs/ in the working directory."""
    run_id = spec[len(SOURCE_PREFIX) :].strip()
    if not run_id:
        raise ReportError(f"{spec!r}: give mlflow:<run_id> (the id MLflow shows, or tracking.json records)")
    uri = os.environ.get("MLFLOW_TRACKING_URI") or tracking.store_uri(tracking.MlflowTracking())[0]
    if uri.startswith("sqlite:///") and not os.path.isfile(uri[len("sqlite:///") :]):  # reading makes none
        raise ReportError(
            f"{spec}: no MLflow store at {uri}; run this where tracking=mlflow ran, or set "
            "MLFLOW_TRACKING_URI to the store that logged it"
        )
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # stderr keeps its one line
    try:
        c = client(uri)
        found = c.get_run(run_id)
        children = c.search_runs([found.info.experiment_id], f"tags.`{PARENT_TAG}` = '{run_id}'")
        target = os.path.join(into, run_id)
        if not children:
            c.download_artifacts(run_id, "", target)
            return _checked(target, spec, uri)
        for child in children:
            name = child.info.run_name or child.info.run_id
            c.download_artifacts(child.info.run_id, "", os.path.join(target, name))
        return target
    except ReportError:
        raise
    except Exception as exc:  # noqa: BLE001 - any store failure is one line naming the run and store
        raise ReportError(
            f"{spec}: cannot read it from the MLflow store {uri} ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:160]}); set MLFLOW_TRACKING_URI to the store that logged it"
        ) from None


def _checked(target: str, spec: str, uri: str) -> str:
    load_run(target, spec)  # a run logged without artifacts: say so here, not as a missing file later
    return target
