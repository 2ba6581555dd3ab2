"""Who may write into a run directory: never overwrite a finished run by accident, resume an
interrupted one, skip a finished job of a re-run sweep.

Before the loop starts, ``run_state.json`` records the run's resolved config (Hydra rewrites
``.hydra/config.yaml`` on every start, so it cannot serve) and its *identity*: the bytes the result
depends on (model and delegate library sha256, runtime version, labels and ground truth sha256, the
dataset manifest and the files' sizes and modification times). A later start in the same directory:

- finds the record of a run that failed before any result -> it is replaced, said once;
- finds a run and neither ``resume`` nor ``overwrite`` -> error naming both;
- ``overwrite`` -> the old run files are removed and the run starts over;
- ``resume`` -> the config must equal the recorded one (``loop.*`` aside) and the identity too (what
  changed on disk since is named), the finished predictions are read back up to the first torn line
  and the loop continues with the samples that have none.

Every refusal happens before anything is written into the directory. The claim is atomic: the
process holds an exclusive lock on the directory from the claim until the run is recorded
(:func:`release`), and a new run's ``run_state.json`` is created only where none exists, so two runs
started into one directory at the same moment can never both proceed.

Every writer of a run directory goes through here: a run and each multirun job (:func:`claim`), the
``loop.parallel`` parent (:func:`claim`, its shards each their own directory), ``report merge``
and a job's failure record (:func:`hold`); ``tests/unit/architecture/test_run_writers.py`` holds
that no other module writes a run's files.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

from evalharness.core.atomic_io import atomic_create_text, dumps
from evalharness.core.documents import JSONMap
from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.core.untrusted import read_json
from evalharness.rundir.document import failed_before_results
from evalharness.rundir.files import METRICS_FILE, PREDICTIONS_FILE, RUN_FILES, STATE_FILE, read_predictions
from evalharness.rundir.metrics_file import parse_document
from evalharness.rundir.reader import flatten

log = logging.getLogger("evalharness")
VOLATILE = ("loop",)  # config groups that may change between sessions of one run


def config_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    a, b = flatten(old), flatten(new)
    return sorted(k for k in a.keys() | b.keys() if a.get(k, "<unset>") != b.get(k, "<unset>"))


def _stable(config: JSONMap) -> JSONMap:
    """The config a resume must match: all of it but the VOLATILE groups (``loop``)."""
    return {k: v for k, v in config.items() if k not in VOLATILE}


def _recorded(run_dir: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(config of the run already in ``run_dir`` or None, its metrics.json; without one, interrupted)."""
    state_path = os.path.join(run_dir, STATE_FILE)
    if not os.path.exists(state_path):
        return None, {}
    config = _read_object(state_path).get("config") or {}
    metrics_path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.exists(metrics_path):
        return config, {"status": "interrupted"}
    return config, _read_object(metrics_path)


def _read_object(path: str) -> JSONMap:
    fix = "loop.overwrite=true starts the run over"
    doc: JSONMap = read_json(path, "run file", error=EvalHarnessError, fix=fix)
    return doc


def claim(
    run_dir: str,
    config: dict[str, Any],
    identity: dict[str, Any],
    *,
    resume: bool,
    overwrite: bool,
    can_resume: bool,
) -> list[dict[str, Any]]:
    """Claim ``run_dir`` for this run; returns the prediction records to resume from (or [])."""
    _lock(run_dir)
    try:
        return _claim(run_dir, config, identity, resume=resume, overwrite=overwrite, can_resume=can_resume)
    except BaseException:
        release(run_dir)
        raise


_HELD: dict[str, int] = {}  # run directory -> the descriptor holding its lock


def _lock(run_dir: str) -> None:
    """Hold ``run_dir`` exclusively until :func:`release`: another process claiming it is refused.
    A file system without directory locks (some network mounts) leaves the exclusive create of
    ``run_state.json`` as the only guard."""
    os.makedirs(run_dir, exist_ok=True)
    key = os.path.realpath(run_dir)
    if key in _HELD:
        return
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise EvalHarnessError(
            f"{run_dir} is in use by another running evalharness process; wait for it to end or "
            "choose another hydra.run.dir"
        ) from None
    except OSError:
        os.close(fd)
        return
    _HELD[key] = fd


@contextlib.contextmanager
def hold(run_dir: str) -> Iterator[bool]:
    """The claim's lock for a writer that makes a whole run directory at once (``report merge``, a
    job's failure record): refused while another process holds ``run_dir``; yields whether this
    process held it already (a ``loop.parallel`` parent that claimed it, merging its shards)."""
    already = os.path.realpath(run_dir) in _HELD
    _lock(run_dir)
    try:
        yield already
    finally:
        if not already:
            release(run_dir)


def release(run_dir: str) -> None:
    """Let go of ``run_dir`` (the run is recorded, or its claim failed)."""
    fd = _HELD.pop(os.path.realpath(run_dir), None)
    if fd is not None:
        os.close(fd)


def _claim(
    run_dir: str,
    config: dict[str, Any],
    identity: dict[str, Any],
    *,
    resume: bool,
    overwrite: bool,
    can_resume: bool,
) -> list[dict[str, Any]]:
    config = _stable(config)
    _replace_failed_record(run_dir)
    recorded, doc = _recorded(run_dir)
    if recorded is not None:
        status = doc.get("status", "unknown")
        if overwrite:
            for name in RUN_FILES:
                if os.path.exists(os.path.join(run_dir, name)):
                    os.unlink(os.path.join(run_dir, name))
        elif not resume:
            article = "an" if status[:1] in "aeiou" else "a"
            raise EvalHarnessError(
                f"{run_dir} already holds {article} {status} run; loop.resume=true continues it, "
                "loop.overwrite=true replaces it, or choose another hydra.run.dir"
            )
        elif status == "complete":
            raise EvalHarnessError(
                f"{run_dir} holds a complete run: nothing to resume (loop.overwrite=true redoes it)"
            )
        else:
            changed = config_differences(recorded, config)
            if changed:
                raise ConfigError(
                    f"cannot resume {run_dir}: config differs from the interrupted run in "
                    + ", ".join(changed)
                )
            if not can_resume:
                raise EvalHarnessError(
                    f"task {config['task']['name']} cannot resume; rerun it (loop.overwrite=true)"
                )
            moved = identity_differences(_recorded_identity(run_dir), identity)
            if moved:
                raise ConfigError(
                    f"cannot resume {run_dir}: {', '.join(moved)} changed since the interrupted run; "
                    "a resumed result would mix both (loop.overwrite=true starts over)"
                )
            return _each_sample_once(os.path.join(run_dir, PREDICTIONS_FILE))
    elif resume:
        raise EvalHarnessError(
            f"loop.resume=true but {run_dir} holds no run; "
            "set hydra.run.dir to the interrupted run's directory"
        )
    try:
        atomic_create_text(os.path.join(run_dir, STATE_FILE), dumps({"config": config, "identity": identity}))
    except FileExistsError:
        raise EvalHarnessError(
            f"{run_dir} was claimed by another run at the same moment; choose another hydra.run.dir"
        ) from None
    return []


def _replace_failed_record(run_dir: str) -> None:
    """A record of a run that failed before any result (a refused config, a model that does not fit
    the task: :func:`evalharness.rundir.document.failed_before_results`) is no run to keep: the next
    run into the directory replaces it, said once, so the corrected command works as typed."""
    path = os.path.join(run_dir, METRICS_FILE)
    if not os.path.exists(path):
        return
    try:
        doc = _read_object(path)
    except EvalHarnessError:
        return  # an unreadable record is the claim's to refuse, as before
    if not failed_before_results(run_dir, parse_document(doc)):
        return
    for name in RUN_FILES:
        if os.path.lexists(os.path.join(run_dir, name)):
            os.unlink(os.path.join(run_dir, name))
    log.warning(
        "%s held the record of a run that failed before any result (%s); this run replaces it",
        run_dir,
        doc.get("error") or "no error recorded",
    )


def _each_sample_once(path: str) -> list[dict[str, Any]]:
    """The records a resume restores, each sample once: a line repeated by a copy or an edit would
    count its sample twice (more scored than listed), so it is refused before anything is written."""
    records, seen = read_predictions(path, repair=True), set()
    for number, record in enumerate(records, start=1):
        key = json.dumps(record.get("id"), sort_keys=True)
        if key in seen:
            raise EvalHarnessError(
                f"cannot resume: {path} record {number} is sample {record.get('id')!r} a second time; "
                "remove the repeated line or start over (loop.overwrite=true)"
            )
        seen.add(key)
    return records


def _recorded_identity(run_dir: str) -> JSONMap:
    path = os.path.join(run_dir, STATE_FILE)
    identity = _read_object(path).get("identity") or {}
    if not isinstance(identity, dict):  # an edited record: what the run read cannot be compared
        raise EvalHarnessError(
            f"{path}: its identity is not a JSON object; loop.overwrite=true starts the run over"
        )
    return identity


def identity_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Identity fields both records have and that differ (a record made before identities: none)."""
    return sorted(k for k in old.keys() & new.keys() if old[k] != new[k])


def sweep_job_mode(
    run_dir: str, config: dict[str, Any], can_resume: bool
) -> tuple[str, dict[str, Any] | None]:
    """What a multirun job re-run in the same sweep dir does: ``("skip", its finished document)``,
    ``("resume", None)``, ``("overwrite", None)`` or ``("new", None)``.

    Hydra re-runs every job of a multirun started again with the same ``hydra.sweep.dir``; here a job
    whose directory holds a run with the same config (``run_state.json``, ``loop.*`` aside) is
    skipped when complete, resumed when partial or interrupted, and started over when it failed (or
    its task cannot resume). A different config is ``new``, so :func:`claim` gives its usual error.
    """
    recorded, doc = _recorded(run_dir)
    if recorded is None or config_differences(recorded, _stable(config)):
        return "new", None
    if doc.get("status") == "complete":
        return "skip", doc
    if doc.get("status") in ("partial", "interrupted") and can_resume:
        return "resume", None
    return "overwrite", None
