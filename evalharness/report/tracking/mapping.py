"""What a run tells an experiment tracker: the ``tracking`` group's settings and the pure mapping of a
run directory to params, metrics, tags and a status.

Everything here reads the run's own files (its metrics.json through :mod:`evalharness.rundir.reader`),
never the live run: a tracker sees what ``report diff`` sees, so a tracked number equals the one in
metrics.json by construction. The MLflow calls are in :mod:`.mlflow_store`; when they happen is the
Hydra callback's business (:mod:`.callback`).

Each logging step is held to ``tracking.timeout_s`` of wall time by :mod:`.tracking_limit`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from evalharness.core.errors import ConfigError
from evalharness.core.registry import Registry
from evalharness.core.schema import bounds, build
from evalharness.report.presenters import headline
from evalharness.report.runs import definition_of
from evalharness.rundir.reader import Run, flatten

TRACKING_FILE = "tracking.json"  # beside a run's files and in a sweep dir: where its tracked run is
DEFAULT_DB = "mlflow.db"  # MLflow's own default store name, so `mlflow ui` in that directory finds it
DEFAULT_ARTIFACTS = "mlruns"  # MLflow's own default artifact folder beside it
URI_SCHEMES = ("http", "https", "sqlite", "file", "postgresql", "mysql", "mssql", "databricks")


@dataclass(frozen=True)
class NoTracking:  # conf/tracking/none.yaml: nothing is logged anywhere but the run directory
    name: str = "none"


@dataclass(frozen=True)
class MlflowTracking:  # conf/tracking/mlflow.yaml
    name: str = "mlflow"
    # null: sqlite:///<launch dir>/mlflow.db (beside outputs/); http(s)://host:port a server
    uri: str | None = None
    experiment: str = "evalharness"
    artifacts: bool = True  # log metrics.json, results.txt, predictions and the run's other files
    timeout_s: int = field(default=30, metadata=bounds(1, 600))  # wall time to log one run, at most
    retries: int = field(default=2, metadata=bounds(0, 10))  # per request to a server or SQL store


# The tracking group's options: name -> its settings (the MLflow calls live in .mlflow_store). A tracker
# from a plug-in registers its settings here and its store beside them.
TRACKERS: Registry[type] = Registry("tracker")
TRACKERS.register("none")(NoTracking)
TRACKERS.register("mlflow")(MlflowTracking)


def check_tracking(node: Any) -> Any:
    """The ``tracking`` group checked like every other group: its schema, then the store URI's form
    (a malformed one is a user error before the run, not a lost record after it). An instance of
    the tracker's settings dataclass (``TRACKERS``), read by attribute."""
    node = dict(node or {})
    name = node.get("name", "none")
    if name not in TRACKERS:
        raise ConfigError(f"config group 'tracking': name={name!r}: use one of {', '.join(TRACKERS)}")
    settings: Any = build(TRACKERS.get(name), node, f"config group 'tracking' (tracking={name})")
    uri = getattr(settings, "uri", None)  # trackers without a store URI have no such field
    if uri is not None:
        parsed = urlparse(str(uri))
        scheme = parsed.scheme.split("+")[0]
        if scheme not in URI_SCHEMES or (scheme in ("http", "https") and not parsed.netloc):
            raise ConfigError(
                f"tracking.uri={uri!r}: not a tracking store URI; give http(s)://host:port (a server), "
                f"sqlite:///path/{DEFAULT_DB}, or null for sqlite:///<launch dir>/{DEFAULT_DB}"
            )
    if name == "mlflow":
        import importlib.util

        if importlib.util.find_spec("mlflow") is None:
            raise ConfigError("tracking=mlflow needs MLflow: pip install 'evalharness[mlflow]'")
    return settings


def store_uri(settings: MlflowTracking, cwd: str | None = None) -> tuple[str, str | None]:
    """(tracking URI, assumption): the configured one, or the default SQLite file in the launch
    directory, whose choice is returned as the sentence to print and record."""
    if settings.uri:
        return str(settings.uri), None
    where = os.path.abspath(cwd or os.getcwd())
    uri = f"sqlite:///{os.path.join(where, DEFAULT_DB)}"
    return uri, (
        f"tracking.uri not set: MLflow store {uri} (artifacts in {os.path.join(where, DEFAULT_ARTIFACTS)}), "
        f"beside outputs/; `mlflow ui` in {where} shows it"
    )


def run_status(run: Run) -> tuple[str, str]:
    """(MLflow run status, evalharness status): only a complete run is FINISHED. One stopped by an
    interrupt (partial in the loop, interrupted after it) is KILLED; partial (stopped by an error),
    invalid and failed runs are FAILED."""
    status = run.status
    if status == "complete":
        return "FINISHED", status
    if status == "interrupted" or (status == "partial" and run.document.stop_reason == "interrupted"):
        return "KILLED", status
    return "FAILED", status


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def run_metrics(run: Run) -> dict[str, float]:
    """The figures a tracker charts: headline metrics, their interval ends (``<m>_ci_low/high``, as
    the sweep table names them), latency statistics, throughput, delegation coverage."""
    if run.status == "failed" or not run.task:
        return {}
    out: dict[str, Any] = dict(headline(definition_of(run), run.metrics))
    document = run.document
    for name, value in document.metrics.intervals.items():
        if isinstance(value, list | tuple) and len(value) == 2:
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = value
    metrics = document.metrics
    out |= {"num_images": metrics.num_images, "num_scored": metrics.num_scored}
    out["num_skipped"] = metrics.num_skipped
    latency = document.latency
    for stat, value in latency.inference.raw.items():
        out[f"latency_{stat}_ms" if stat != "count" else "latency_count"] = value
    out["latency_init_ms"] = latency.init
    out["latency_first_inference_ms"] = latency.first_inference
    if latency.valid is not None:  # 1: the latencies are a valid measurement (stats/validity.py)
        out["latency_valid"] = float(latency.valid)
        out["latency_block_cv"] = latency.block_cv
    out["images_per_s"] = document.throughput.images_per_s
    out["loop_wall_s"] = document.throughput.loop_wall_s
    coverage = document.provenance.delegate.coverage
    out["coverage"] = coverage.fraction
    out |= {"ops_total": coverage.ops_total, "ops_delegated": coverage.ops_delegated}
    out["partitions"] = coverage.partitions
    out["model_bytes"] = document.provenance.model.bytes
    return {k: n for k, v in out.items() if (n := _number(v)) is not None}


def _key(name: str) -> str:
    """A config key as a tracker key: the characters MLflow accepts (a map's own keys may hold others)."""
    return re.sub(r"[^\w\-./ ]", "_", name)


def run_params(run: Run) -> dict[str, str]:
    """The validated run settings (``provenance.config``), flattened to dotted keys, plus the job's
    overrides; a failed record's config is the composed one it could not validate."""
    config = run.provenance.config.raw
    params = {_key(k): "" if v is None else str(v) for k, v in flatten(config).items()}
    params["overrides"] = " ".join(run.provenance.overrides)
    return params


def run_tags(run: Run, run_dir: str) -> dict[str, str]:
    """Identity a tracker filters on: what was run (model/library sha256, runtime versions) and how
    it ended (``evalharness.status``, the stop reason or error)."""
    _, status = run_status(run)
    prov = run.provenance
    tags = {
        "evalharness.status": status,
        "evalharness.task": run.task or "",
        "evalharness.run_dir": os.path.abspath(run_dir),
        "model.name": prov.model.name,
        "model.sha256": prov.model.sha256,
        "model.quant": prov.model.quant.name,
        "delegate.name": prov.delegate.name,
        "delegate.library.sha256": prov.delegate.library_sha256,
        "runtime.name": prov.runtime.name,
        "runtime.package": prov.runtime.package,
        "runtime.version": prov.runtime.version,
        "evalharness.version": prov.evalharness_version,
        "dataset.manifest_sha256": prov.dataset.manifest_sha256,
        "host": prov.host.hostname,
        "evalharness.stop_reason": run.document.stop_reason or run.document.error,
    }
    return {k: str(v) for k, v in tags.items() if v not in (None, "")}


def run_files(run: Run) -> list[tuple[str, str]]:
    """(path, artifact folder) of every file worth keeping with the tracked run: metrics.json,
    results.txt, the predictions and the run's artifacts, any HTML report, .hydra's config and overrides
    (which ``report sweep`` reads back)."""
    names = [
        "metrics.json",
        "results.txt",
        run.document.predictions.path or "predictions.jsonl",
    ]
    names += run.document.artifacts
    names += sorted(n for n in os.listdir(run.dir) if n.endswith(".html"))
    out = [(os.path.join(run.dir, n), "") for n in dict.fromkeys(names)]
    out += [(os.path.join(run.dir, ".hydra", n), ".hydra") for n in ("config.yaml", "overrides.yaml")]
    return [(path, folder) for path, folder in out if os.path.isfile(path)]
