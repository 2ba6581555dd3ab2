"""Reading a run directory: its metrics.json document and, on demand, its prediction records.

Everything after a run (reports, merge, rescore, a resumed session) reads runs through :class:`Run`,
so a run directory has one reader; nothing here imports the runtime, the tasks or the model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from evalharness.core.documents import JSONMap
from evalharness.core.errors import DataError, EvalHarnessError
from evalharness.core.fileguard import refuse_special_file
from evalharness.core.untrusted import read_json
from evalharness.rundir.files import METRICS_FILE, PREDICTIONS_FILE, parse_predictions
from evalharness.rundir.metrics_file import Document, parse_document
from evalharness.rundir.provenance_record import Provenance


class RunDirError(EvalHarnessError):
    """A run directory or one of its files is missing or unreadable (exit status 2)."""


@dataclass
class Run:
    """One run directory: its metrics.json, typed (:attr:`document`), and on demand its per-sample
    predictions. ``doc`` is the JSON object as read; only :mod:`evalharness.rundir` looks inside it
    (tests/unit/architecture/test_run_document.py holds that)."""

    label: str
    dir: str
    doc: Mapping[str, Any] = field(repr=False)
    _parsed: tuple[tuple[tuple[str, int], ...], Document] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def document(self) -> Document:
        """The typed document (an older version migrated: :func:`evalharness.rundir.metrics_file.migrate`).
        Parsed once, and again when a top-level block of ``doc`` was replaced since (a test or a view
        that sets ``metrics``), so it always says what ``doc`` holds; the parsed document keeps the
        blocks it was read from alive, so their identities cannot be reused meanwhile."""
        blocks = tuple((key, id(value)) for key, value in self.doc.items())
        if self._parsed is None or self._parsed[0] != blocks:
            self._parsed = (blocks, parse_document(self.doc))
        return self._parsed[1]

    @property
    def status(self) -> str:
        return self.document.status

    @property
    def task(self) -> str | None:
        return self.document.task

    @property
    def metrics(self) -> JSONMap:
        """The task's figures, as its definition declares them (``{}`` for a failure)."""
        return self.document.metrics.values

    @property
    def provenance(self) -> Provenance:
        return self.document.provenance

    @property
    def task_settings(self) -> JSONMap:
        """The ``task`` config group the run used (what its scorer was built from)."""
        return self.provenance.config.group("task")

    @property
    def name(self) -> str:
        """Short identity for tables: model @ delegate."""
        return f"{self.provenance.model.name or '?'} @ {self.provenance.delegate.name or '?'}"

    def with_metrics(self, metrics: JSONMap) -> Run:
        """This run as it reads with ``metrics`` in place of its own (a view on part of its images),
        its prediction records (when read) kept."""
        view = Run(self.label, self.dir, {**self.doc, "metrics": metrics})
        if "predictions" in self.__dict__:
            view.__dict__["predictions"] = self.__dict__["predictions"]
        return view

    @cached_property
    def predictions(self) -> list[dict[str, Any]]:
        """The run's records; as many as its metrics.json says it wrote, or an error naming both
        (a file emptied or cut after the run would otherwise compare as fewer samples)."""
        recorded = self.document.predictions
        path = os.path.join(self.dir, recorded.path or PREDICTIONS_FILE)
        if recorded.count == 0 and self.document.metrics.num_scored == 0 and not os.path.lexists(path):
            why = self.document.stop_reason or self.document.error or self.status
            raise RunDirError(  # a run that stopped before its first image: nothing to compare or rescore
                f"run {self.label}: scored no sample ({self.status}: {why}); nothing to report on"
            )
        records = read_jsonl(path, self.label)
        count = recorded.count
        if count is not None and count != len(records):
            raise RunDirError(
                f"run {self.label}: {path} holds {len(records)} records but its {METRICS_FILE} says the run "
                f"wrote {count}; the file changed after the run: restore it or run again"
            )
        return records


def load_run(path: str, label: str) -> Run:
    """A run from its directory or its metrics.json; a missing or unreadable file is one error line."""
    metrics_path = os.path.join(path, METRICS_FILE) if os.path.isdir(path) else path
    if not os.path.isfile(metrics_path):
        raise RunDirError(
            f"run {label}: no {METRICS_FILE} at {path}; give a run directory or its {METRICS_FILE}"
        )
    doc = read_json(metrics_path, f"run {label}:", error=RunDirError, fix=f"give a run's {METRICS_FILE}")
    return Run(label, os.path.dirname(os.path.abspath(metrics_path)), doc)


def _refuse_special(path: str, label: str) -> None:
    try:
        refuse_special_file(path, f"run {label}:")
    except DataError as exc:
        raise RunDirError(str(exc)) from None


def read_jsonl(path: str, label: str) -> list[dict[str, Any]]:
    """Every line of a finished run's predictions.jsonl, each a JSON object (else one error line)."""
    _refuse_special(path, label)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise RunDirError(f"run {label}: predictions file {path} not found") from None
    except OSError as exc:
        raise RunDirError(f"run {label}: cannot read {path} ({exc})") from None
    try:
        records, bad, _ = parse_predictions(data if data.endswith(b"\n") or not data else data + b"\n", path)
    except DataError as exc:
        raise RunDirError(f"run {label}: {exc}") from None
    if bad is not None:
        raise RunDirError(f"run {label}: {path} line {bad} is not a complete JSON object")
    return records


def flatten(value: Any, prefix: str = "") -> Mapping[str, Any]:
    """Dotted key -> leaf value in document order, so nested blocks compare field by field."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key in value:
            out.update(flatten(value[key], f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}
