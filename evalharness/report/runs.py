"""Loading finished runs and deciding whether two of them can be compared.

A report reads only what a run wrote (``metrics.json``, ``predictions.jsonl``, ``coco_results.json``),
so it works on any machine: nothing here imports the runtime, the tasks or the model.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property

from evalharness.errors import EvalHarnessError
from evalharness.report.writer import METRICS_FILE, PREDICTIONS_FILE

# Input-tensor fields that belong to the model (float vs int8), not to the preprocessing recipe.
MODEL_INPUT_FIELDS = ("input.dtype", "input.scale", "input.zero_point")


class ReportError(EvalHarnessError):
    """A report cannot be made (missing file, runs not comparable, bad rule): exit status 2."""


@dataclass
class Run:
    """One run directory: its metrics.json document and, on demand, its per-image predictions."""

    label: str
    dir: str
    doc: dict = field(repr=False)

    @property
    def status(self) -> str:
        return self.doc.get("status", "unknown")

    @property
    def task(self) -> str | None:
        return self.doc.get("task")

    @property
    def metrics(self) -> dict:
        return self.doc.get("metrics") or {}

    @property
    def provenance(self) -> dict:
        return self.doc.get("provenance") or {}

    def prov(self, dotted: str, default=None):
        """``provenance.<dotted>`` or ``default`` when any part is missing."""
        return dig(self.provenance, dotted, default)

    @property
    def name(self) -> str:
        """Short identity for tables: model @ delegate."""
        return f"{self.prov('model.name', '?')} @ {self.prov('delegate.name', '?')}"

    @cached_property
    def predictions(self) -> list[dict]:
        rel = (self.doc.get("predictions") or {}).get("path") or PREDICTIONS_FILE
        return read_jsonl(os.path.join(self.dir, rel), self.label)

    def artifact(self, name: str):
        path = os.path.join(self.dir, name)
        if not os.path.isfile(path):
            raise ReportError(f"run {self.label}: {path} not found; the run did not write it")
        return _read_json(path, self.label)


def dig(doc: dict, dotted: str, default=None):
    value = doc
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


def load_run(path: str, label: str) -> Run:
    """A run from its directory or its metrics.json; a missing or unreadable file is one error line."""
    metrics_path = os.path.join(path, METRICS_FILE) if os.path.isdir(path) else path
    if not os.path.isfile(metrics_path):
        raise ReportError(
            f"run {label}: no {METRICS_FILE} at {path}; give a run directory or its {METRICS_FILE}"
        )
    doc = _read_json(metrics_path, label)
    if not isinstance(doc, dict):
        raise ReportError(f"run {label}: {metrics_path} is not a metrics.json object")
    return Run(label, os.path.dirname(os.path.abspath(metrics_path)), doc)


def _read_json(path: str, label: str):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"run {label}: cannot read {path} ({exc})") from None


def read_jsonl(path: str, label: str) -> list[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        raise ReportError(f"run {label}: predictions file {path} not found") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"run {label}: cannot read {path} ({exc})") from None


def flatten(value, prefix: str = "") -> dict:
    """Dotted key -> leaf value in document order, so nested blocks compare field by field."""
    if isinstance(value, dict):
        out = {}
        for key in value:
            out.update(flatten(value[key], f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def field_differences(a: dict | None, b: dict | None, ignore: tuple[str, ...] = ()) -> list[str]:
    """``key: A vs B`` for every differing leaf, in key order."""
    fa, fb = flatten(a or {}), flatten(b or {})
    keys = sorted((set(fa) | set(fb)) - set(ignore))
    return [f"{k} {fa.get(k)!r} vs {fb.get(k)!r}" for k in keys if fa.get(k) != fb.get(k)]


@dataclass
class Comparability:
    """Why two runs cannot be compared (``refused``) or should be compared with care (``warnings``).

    Refused (exit 2): a failed run, another task, other images (manifest hash), another number of
    images, other ground truth: a per-image or metric diff would be meaningless. Warned: another
    preprocessing recipe or label set (a legitimate experiment, but easy to do by mistake); gating
    on such a pair needs ``--allow-different-preprocessing``. Notes: facts worth knowing (another
    host, a partial run) that do not invalidate the comparison.
    """

    refused: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    acknowledged: bool = False

    def as_dict(self) -> dict:
        return {
            "refused": self.refused,
            "warnings": self.warnings,
            "notes": self.notes,
            "acknowledged": self.acknowledged,
        }


def comparability(a: Run, b: Run, allow_different_preprocessing: bool = False) -> Comparability:
    c = Comparability(acknowledged=allow_different_preprocessing)
    for run in (a, b):
        if run.status == "failed":
            c.refused.append(f"run {run.label} failed: {run.doc.get('error') or 'no error recorded'}")
    if c.refused:
        return c
    if a.task != b.task:
        c.refused.append(f"task differs: {a.task} vs {b.task}")
        return c
    da, db = a.prov("dataset", {}), b.prov("dataset", {})
    if da.get("manifest_sha256") != db.get("manifest_sha256"):
        c.refused.append(
            f"dataset differs: manifest_sha256 {_short(da.get('manifest_sha256'))} ({da.get('name')}, "
            f"{da.get('count')} images) vs {_short(db.get('manifest_sha256'))} ({db.get('name')}, "
            f"{db.get('count')} images)"
        )
    if da.get("count") != db.get("count"):
        c.refused.append(f"sample count differs: {da.get('count')} vs {db.get('count')}")
    if da.get("ground_truth_sha256") != db.get("ground_truth_sha256"):
        c.refused.append(
            f"ground truth differs: {da.get('ground_truth')} ({_short(da.get('ground_truth_sha256'))}) vs "
            f"{db.get('ground_truth')} ({_short(db.get('ground_truth_sha256'))})"
        )
    pre = field_differences(a.prov("preprocessing"), b.prov("preprocessing"), MODEL_INPUT_FIELDS)
    if pre:
        c.warnings.append("preprocessing differs: " + "; ".join(pre))
    labels = field_differences(a.prov("labels"), b.prov("labels"), ("path",))
    if labels:
        c.warnings.append("label set differs: " + "; ".join(labels))
    for run in (a, b):
        if run.status != "complete":
            c.notes.append(
                f"run {run.label} is {run.status} ({run.doc.get('stop_reason')}): "
                f"{run.metrics.get('num_scored')} of {run.metrics.get('num_images')} images scored; "
                "per-image statistics cover the images both runs scored"
            )
    hosts = field_differences(a.prov("host"), b.prov("host"), ("hostname",))
    if hosts:
        c.notes.append("host differs (latency compares machines, not only delegates): " + "; ".join(hosts))
    return c


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "none"
