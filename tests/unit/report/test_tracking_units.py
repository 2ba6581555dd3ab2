"""Tracking's plumbing without a store: the settings check, the status map, what a run directory
becomes (metrics, params, tags, files), and the conf file agreeing with its schema."""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time

import pytest
import yaml
from shared_runs import fake_run_dir

from evalharness.core.errors import ConfigError, DataError
from evalharness.core.paths import CONF_DIR
from evalharness.report.tracking.limit import TrackingFailed, bounded
from evalharness.report.tracking.mapping import (
    TRACKERS,
    MlflowTracking,
    check_tracking,
    run_files,
    run_metrics,
    run_params,
    run_status,
    run_tags,
    store_uri,
)
from evalharness.report.tracking.mlflow_store import BACKEND_LOGGERS, Store, _Guarded
from evalharness.rundir.reader import Run

DOC = {
    "task": "imagenet",
    "status": "complete",
    "stop_reason": None,
    "metrics": {"top1": 0.6, "top2": 0.8, "num_images": 5, "num_scored": 5, "num_skipped": 0,
                "intervals": {"method": "wilson", "confidence": 0.95, "top1": [0.23, 0.88]}},
    "latency_ms": {"init": 20.0, "first_inference": 2.0,
                   "inference": {"count": 5, "mean": 1.5, "p50": 1.25, "p99": 3.0}},
    "throughput": {"images_per_s": 90.0, "loop_wall_s": 0.05},
    "predictions": {"path": "predictions.jsonl", "count": 5},
    "provenance": {"model": {"name": "m", "sha256": "abc", "bytes": 1000, "quant": {"name": "none"}},
                   "runtime": {"name": "litert", "version": "2.3.0"},
                   "delegate": {"name": "cpu", "library": None,
                                "coverage": {"fraction": 0.5, "ops_total": 4, "ops_delegated": 2}},
                   "config": {"task": {"name": "imagenet", "top_k": 10}, "loop": {"strict": True, "x": None}},
                   "overrides": ["task.top_k=10"]},
}  # fmt: skip


def run(tmp_path, **changes) -> Run:
    return Run("r", str(tmp_path), {**DOC, **changes})


def test_the_mlflow_conf_file_states_the_schema_defaults():
    conf = yaml.safe_load((CONF_DIR / "tracking" / "mlflow.yaml").read_text())
    defaults = {f.name: f.default for f in dataclasses.fields(TRACKERS.get("mlflow"))}
    assert conf == defaults
    assert yaml.safe_load((CONF_DIR / "tracking" / "none.yaml").read_text()) == {"name": "none"}


@pytest.mark.parametrize(
    "node,message",
    [
        ({"name": "wandb"}, "name='wandb': use one of mlflow, none"),
        ({"name": "none", "uri": "http://x:1"}, "unknown key(s) uri; valid: name"),
        ({"name": "mlflow", "uri": "localhost:5000"}, "not a tracking store URI"),
        ({"name": "mlflow", "uri": "http://"}, "not a tracking store URI"),
        ({"name": "mlflow", "timeout_s": 0}, "timeout_s=0: must be >= 1"),
        ({"name": "mlflow", "retries": 11}, "retries=11: must be <= 10"),
    ],
)
def test_bad_settings_are_one_config_error_naming_the_key(node, message):
    with pytest.raises(ConfigError) as info:
        check_tracking(node)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_default_store_is_the_sqlite_file_in_the_launch_dir_and_says_so(tmp_path):
    settings = check_tracking({"name": "mlflow"})
    uri, assumed = store_uri(settings, str(tmp_path))
    assert uri == f"sqlite:///{tmp_path}/mlflow.db" and uri in assumed and "beside outputs/" in assumed
    assert store_uri(MlflowTracking(uri="http://h:5000")) == ("http://h:5000", None)


@pytest.mark.parametrize(
    "status,stop,expected",
    [("complete", None, "FINISHED"), ("partial", "interrupted", "KILLED"), ("partial", "bad image", "FAILED"),
     ("invalid", "NaN outputs", "FAILED"), ("failed", None, "FAILED"),
     ("interrupted", "interrupted by SIGTERM while scoring; 4 prediction(s) kept", "KILLED")],
)  # fmt: skip
def test_only_a_complete_run_is_finished(tmp_path, status, stop, expected):
    assert run_status(run(tmp_path, status=status, stop_reason=stop)) == (expected, status)


def test_metrics_are_the_run_documents_figures(tmp_path):
    assert run_metrics(run(tmp_path)) == {
        "top1": 0.6, "top2": 0.8, "top1_ci_low": 0.23, "top1_ci_high": 0.88,
        "num_images": 5.0, "num_scored": 5.0, "num_skipped": 0.0,
        "latency_count": 5.0, "latency_mean_ms": 1.5, "latency_p50_ms": 1.25, "latency_p99_ms": 3.0,
        "latency_init_ms": 20.0, "latency_first_inference_ms": 2.0,
        "images_per_s": 90.0, "loop_wall_s": 0.05, "coverage": 0.5, "ops_total": 4.0, "ops_delegated": 2.0,
        "model_bytes": 1000.0,
    }  # fmt: skip
    assert run_metrics(run(tmp_path, status="failed", metrics=None)) == {}
    validity = {"valid": False, "cv": 0.31, "problems": ["block CV 0.31 > max_cv 0.25"]}
    latency = {**DOC["latency_ms"], "validity": validity}
    charted = run_metrics(run(tmp_path, latency_ms=latency))
    assert (charted["latency_valid"], charted["latency_block_cv"]) == (0.0, 0.31)


def test_params_tags_and_files(tmp_path):
    r = run(tmp_path, status="partial", stop_reason="bad image")
    assert run_params(r) == {"task.name": "imagenet", "task.top_k": "10", "loop.strict": "True", "loop.x": "",
                             "overrides": "task.top_k=10"}  # fmt: skip
    tags = run_tags(r, str(tmp_path))
    assert tags["evalharness.status"] == "partial" and tags["evalharness.stop_reason"] == "bad image"
    assert (tags["model.sha256"], tags["runtime.version"]) == ("abc", "2.3.0")
    assert "delegate.library.sha256" not in tags  # no library: no empty tag
    empty = json.dumps({})
    files = {"predictions.jsonl": empty, "report.html": empty, ".hydra/overrides.yaml": "[]"}
    fake_run_dir(tmp_path, {}, files=files)
    assert [(p.rsplit("/", 1)[-1], f) for p, f in run_files(r)] == [
        ("metrics.json", ""),
        ("predictions.jsonl", ""),
        ("report.html", ""),
        ("overrides.yaml", ".hydra"),
    ]


def test_bounded_returns_what_the_step_returns():
    assert bounded(lambda: 42, 5, threading.Event()) == 42


def test_bounded_gives_up_after_timeout_and_tells_the_step_to_stop():
    cancelled, release = threading.Event(), threading.Event()
    start = time.monotonic()
    with pytest.raises(TrackingFailed, match=r"^timed out after 0.2 s \(tracking.timeout_s\)$"):
        bounded(lambda: release.wait(30), 0.2, cancelled)
    assert time.monotonic() - start < 5 and cancelled.is_set()
    release.set()  # the abandoned worker ends


def test_a_backends_own_error_is_one_line_and_ours_pass_through():
    def fails():
        raise RuntimeError("sqlite3.OperationalError\n  unable to open database file")

    with pytest.raises(TrackingFailed, match=r"^RuntimeError: sqlite3.OperationalError unable to open"):
        bounded(fails, 5, threading.Event())

    def ours():
        raise DataError("already one line")

    with pytest.raises(DataError, match="already one line"):
        bounded(ours, 5, threading.Event())


def test_an_abandoned_step_logs_nothing_more():
    calls, cancelled = [], threading.Event()

    class Client:
        uri = "sqlite:///x"

        def log_batch(self, *args):
            calls.append(args)

    guarded = _Guarded(Client(), cancelled)
    guarded.log_batch(1)
    assert guarded.uri == "sqlite:///x" and calls == [(1,)]
    cancelled.set()
    with pytest.raises(TrackingFailed, match="timed out"):
        guarded.log_batch(2)
    assert calls == [(1,)]


def test_an_abandoned_step_silences_the_backends_loggers(tmp_path):
    settings = MlflowTracking(uri=f"sqlite:///{tmp_path}/m.db", experiment="e", artifacts=False, timeout_s=1,
                              retries=0)  # fmt: skip
    store, release = Store(settings), threading.Event()
    store.timing = (0.2, 0)
    before = {name: logging.getLogger(name).level for name in BACKEND_LOGGERS}
    try:
        assert store._bounded(lambda: "ok") == "ok" and not store.cancelled.is_set()
        assert logging.getLogger("mlflow").level == before["mlflow"]
        with pytest.raises(TrackingFailed, match="timed out after 0.2 s"):
            store._bounded(release.wait, 30)
        assert all(logging.getLogger(n).level > logging.CRITICAL for n in BACKEND_LOGGERS)
    finally:
        release.set()
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)
