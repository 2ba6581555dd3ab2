"""The one builder of ``metrics.json``: a live run, a resumed run, a merge and a failure all use it.

:func:`run_document` fixes the document's keys (``schema_version`` 4; docs/output-files.md lists them), so the
live run and ``report merge`` cannot drift apart; :func:`failure_document` is the record a failed
job leaves so that sweeps list it instead of dropping it. :func:`write_run` writes a finished run's
files in the order that keeps the directory valid at every instant: artifacts first, then
``metrics.json`` (the commit point), then ``results.txt``, the human-readable lines of that same
document: a write that fails (a full disk) can never leave a printed accuracy beside a record that
does not hold it, and a failure record removes any ``results.txt`` an earlier session left.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from typing import Any

from evalharness.core.documents import FailureDocument, JSONMap, RunDocument
from evalharness.core.escape import terminal
from evalharness.rundir.files import METRICS_FILE, PREDICTIONS_FILE, RESULTS_FILE, STATE_FILE, RunWriter
from evalharness.rundir.metrics_file import SCHEMA_VERSION, Document, parse_document

# metrics keys each schema version added (2: confidence intervals; 3 adds no metric, only
# provenance.delegate.cache, the compile caches' cold/warm record; 4: the error analysis). A
# document of an older version lacks them: a rescore does not count them as mismatches, a merge of
# older shards leaves them out.
METRICS_ADDED = {2: ("intervals",), 4: ("analysis",)}
# Fields whose value is a map with run-dependent keys (delegate flags, op types, the config); every
# other key of metrics.json is fixed by SCHEMA_VERSION for a given task.
MAP_FIELDS = (
    "provenance.config",
    "provenance.delegate.flags",
    "provenance.delegate.coverage.ops_on_cpu_by_type",
)


def metrics_for_schema(metrics: JSONMap, version: int) -> JSONMap:
    """``metrics`` without the keys added after schema ``version``."""
    newer = {key for v, keys in METRICS_ADDED.items() if v > version for key in keys}
    return {k: v for k, v in metrics.items() if k not in newer}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def run_document(
    *,
    task: str,
    status: str,
    stop_reason: str | None,
    started_at: str,
    finished_at: str,
    metrics: dict[str, Any],
    latency_ms: dict[str, Any],
    memory_mb: Mapping[str, Any],
    throughput: dict[str, Any],
    skipped: list[Any],
    first_output_repeatable: bool | None,
    resumed_samples: int,
    predictions_count: int,
    artifacts: list[str],
    provenance: dict[str, Any],
    output_checks: Mapping[str, Any] | None = None,
    schema_version: int = SCHEMA_VERSION,
    reference: JSONMap | None = None,
    merged: JSONMap | None = None,
) -> RunDocument:
    """A run's metrics.json document. ``status``: complete | partial | invalid (outputs failed their
    checks) | failed | interrupted (before its metrics: :func:`failure_document`). ``reference`` (a
    reference pass's record) and ``merged`` (a merge's shards): optional top-level blocks, absent
    when None; ``schema_version``: older only for a merge of shards written with that version."""
    doc: RunDocument = {
        "schema_version": schema_version,
        "task": task,
        "status": status,
        "stop_reason": stop_reason,
        "started_at": started_at,
        "finished_at": finished_at,
        "metrics": metrics_for_schema(metrics, schema_version),
        "latency_ms": latency_ms,
        "memory_mb": dict(memory_mb),
        "skipped": skipped,
        "first_output_repeatable": first_output_repeatable,
        "resumed_samples": resumed_samples,
        "throughput": throughput,
        "predictions": {"path": PREDICTIONS_FILE, "format": "jsonl", "count": predictions_count},
        "artifacts": sorted(artifacts),
        "output_checks": None if output_checks is None else dict(output_checks),
        "provenance": provenance,
    }
    if reference is not None:
        doc["reference"] = reference
    if merged is not None:
        doc["merged"] = merged
    return doc


def failure_document(
    message: str, config: JSONMap, overrides: list[str], kept: tuple[int, str] | None = None
) -> FailureDocument:
    """What a job that failed before producing results leaves: its error, config and command-line
    overrides (a sweep table lists the job by them), no metrics. ``kept``: the job was interrupted
    (status ``interrupted``, which a resume continues) with (that many predictions, in that file)."""
    doc: FailureDocument = {
        "schema_version": SCHEMA_VERSION,
        "status": "failed" if kept is None else "interrupted",
        "error": message,
        "metrics": None,
        "finished_at": now(),
        "provenance": {"config": config, "overrides": overrides},
    }
    if kept is not None:
        kept_files = {"path": kept[1], "format": "jsonl", "count": kept[0]}
        doc |= {"stop_reason": message, "predictions": kept_files}
    return doc


def write_run(writer: RunWriter, doc: Document, lines: list[str], artifacts: Mapping[str, object]) -> str:
    """Artifacts, metrics.json (the typed document's JSON: :func:`run_document`'s, as built), then
    results.txt (atomic each); returns the metrics.json path. results.txt is what a terminal shows
    (``cat``): label texts and file names in it show their control characters, by the one terminal
    escaping."""
    for name, obj in artifacts.items():
        writer.write_json(name, obj)
    path = writer.write_metrics(doc)
    writer.write_results([terminal(line) for line in lines])
    return path


def write_failure(
    run_dir: str, message: str, config: JSONMap, overrides: list[str], kept: tuple[int, str] | None = None
) -> str:
    """The failure (or interruption, see :func:`failure_document`) record; a ``results.txt`` already
    there (its figures now unfounded) goes first."""
    stale = os.path.join(run_dir, RESULTS_FILE)
    if os.path.lexists(stale):
        os.unlink(stale)
    record = parse_document(failure_document(message, config, overrides, kept))
    return RunWriter(run_dir).write_metrics(record)


def failed_before_results(run_dir: str, doc: Document) -> bool:
    """``doc`` (``run_dir``'s metrics.json) records a run that failed before any result: status
    ``failed``, no metrics, no prediction written. Such a record blocks nothing (the next run into the
    directory replaces it, :mod:`evalharness.rundir.state`) and ``report index`` leaves it out
    unless asked; a run with results still needs ``loop.resume`` or ``loop.overwrite``."""
    if doc.status != "failed" or doc.has_metrics:
        return False
    predictions = os.path.join(run_dir, PREDICTIONS_FILE)
    return not os.path.exists(predictions) or os.path.getsize(predictions) == 0


def has_document(run_dir: str) -> bool:
    return os.path.exists(os.path.join(run_dir, METRICS_FILE))


def holds_run(run_dir: str) -> bool:
    """A run (finished, interrupted or failed) already claimed ``run_dir``."""
    return has_document(run_dir) or os.path.exists(os.path.join(run_dir, STATE_FILE))


def run_dir_of(path: str) -> str | None:
    """The run directory ``path`` lies in (the nearest directory up its path that a run claimed),
    or None: what writes outside a run must never replace one of its files."""
    directory = os.path.dirname(os.path.realpath(path))
    while not holds_run(directory):
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent
    return directory
