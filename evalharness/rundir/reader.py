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

from evalharness.core.documents import JSONMap, MetricsDocument
from evalharness.core.errors import DataError, EvalHarnessError
from evalharness.core.fileguard import refuse_special_file
from evalharness.core.untrusted import read_json
from evalharness.rundir.files import METRICS_FILE, PREDICTIONS_FILE, parse_predictions


class RunDirError(EvalHarnessError):
    """A run directory or one of its files is missing or unreadable (exit status 2)."""


@dataclass
class Run:
    """One run directory: its metrics.json document and, on demand, its per-sample predictions."""

    label: str
    dir: str
    doc: MetricsDocument = field(repr=False)

    @property
    def status(self) -> str:
        return self.doc.get("status", "unknown")

    @property
    def task(self) -> str | None:
        return self.doc.get("task")

    @property
    def metrics(self) -> JSONMap:
        return self.doc.get("metrics") or {}

    @property
    def provenance(self) -> JSONMap:
        return self.doc.get("provenance") or {}

    def prov(self, dotted: str, default: Any = None) -> Any:
        """``provenance.<dotted>`` or ``default`` when any part is missing."""
        return dig(self.provenance, dotted, default)

    @property
    def task_settings(self) -> dict[str, Any]:
        """The ``task`` config group the run used (what its scorer was built from)."""
        return self.prov("config.task") or {}

    @property
    def name(self) -> str:
        """Short identity for tables: model @ delegate."""
        return f"{self.prov('model.name', '?')} @ {self.prov('delegate.name', '?')}"

    @cached_property
    def predictions(self) -> list[dict[str, Any]]:
        """The run's records; as many as its metrics.json says it wrote, or an error naming both
        (a file emptied or cut after the run would otherwise compare as fewer samples)."""
        recorded = self.doc.get("predictions") or {}
        path = os.path.join(self.dir, recorded.get("path") or PREDICTIONS_FILE)
        records = read_jsonl(path, self.label)
        count = recorded.get("count")
        if isinstance(count, int) and not isinstance(count, bool) and count != len(records):
            raise RunDirError(
                f"run {self.label}: {path} holds {len(records)} records but its {METRICS_FILE} says the run "
                f"wrote {count}; the file changed after the run: restore it or run again"
            )
        return records


def dig(doc: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    value: Any = doc
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


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


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted key -> leaf value in document order, so nested blocks compare field by field."""
    if isinstance(value, dict):
        out = {}
        for key in value:
            out.update(flatten(value[key], f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}
