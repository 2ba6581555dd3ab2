"""MLflow tracking for real: a 4-job sweep logged to a real ``mlflow server`` (SQLite backend, started
here as a subprocess) and to the default local store, checked through ``MlflowClient``: one parent and
four children, each child's metrics equal to its metrics.json, artifacts there, the job that stopped
on an undecodable image logged as FAILED. Then ``report diff`` / ``sweep`` read the runs back by id.
No mock anywhere: a tracked number is compared with the run directory it came from."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from conftest import run_cli
from test_report_classification import report

from evalharness.core.paths import BUNDLED_DIR

mlflow = pytest.importorskip("mlflow", reason="pip install 'evalharness[mlflow]'")
from mlflow.tracking import MlflowClient  # noqa: E402

EXPERIMENT = "acceptance"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dataset_with_a_bad_last_image(directory: Path) -> list[str]:
    """The bundled 5 images plus an undecodable 6th (last in file-name order): ``task.num_images=0``
    reaches it and stops (strict): a failure at run time, after validation; the other jobs never do."""
    images = directory / "images"
    shutil.copytree(BUNDLED_DIR / "images", images)
    (images / "zz_broken.png").write_bytes(b"\x89PNG\r\n\x1a\n this is no image")
    labels = directory / "labels.csv"
    labels.write_text((BUNDLED_DIR / "labels.csv").read_text() + "zz_broken.png,macaw\n")
    # 3 and 5 (twice: a repeated measurement, comparable for the read-back diff), 0 = all 6
    return [f"dataset.root={images}", f"dataset.ground_truth={labels}", "task.num_images=3,5,5,0"]


def sweep_args(tmp_path: Path, *tracking: str) -> list[str]:
    return ["-m", *dataset_with_a_bad_last_image(tmp_path), "tracking=mlflow",
            f"tracking.experiment={EXPERIMENT}", *tracking, "hydra/callbacks=sweep_report",
            f"hydra.sweep.dir={tmp_path / 'multirun'}"]  # fmt: skip


class Cli:
    """``python -m evalharness ARGS`` started now, its output in files (no pipe to fill), awaited later:
    the module's commands run side by side, each process on its own core."""

    def __init__(self, args: list[str], cwd: Path):
        self.cwd, self.out, self.err = cwd, (cwd / "stdout").open("w"), (cwd / "stderr").open("w")
        cmd = [sys.executable, "-m", "evalharness", *args, "loop.progress=false"]
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=self.out, stderr=self.err, text=True)

    def wait(self) -> subprocess.CompletedProcess:
        code = self.proc.wait(timeout=300)
        self.out.close()
        self.err.close()
        out, err = ((self.cwd / n).read_text() for n in ("stdout", "stderr"))
        return subprocess.CompletedProcess(self.proc.args, code, out, err)


def wait_for(uri: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{uri}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.5)


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """A real tracking server on a free port (SQLite backend, artifacts proxied into tmp) and, side by
    side with its start, the sweep into the default local store and a run whose server is down; then
    the sweep into the server once it answers. -> {name: (CompletedProcess, its folder)}, server uri."""
    where = tmp_path_factory.mktemp("mlflow-server")
    uri = f"http://127.0.0.1:{free_port()}"
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", uri.rsplit(":", 1)[1],
           "--workers", "1", "--backend-store-uri", f"sqlite:///{where / 'server.db'}",
           "--artifacts-destination", str(where / "artifacts")]  # fmt: skip
    with (where / "server.log").open("w") as log:
        # no job runner: its huey consumers (up to a dozen processes) serve MLflow's own GenAI jobs,
        # which tracking never asks for, and took a core for the server's first seconds
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        server = subprocess.Popen(cmd, cwd=where, stdout=log, stderr=log, start_new_session=True, env=env)
        try:
            local, dead, remote = (tmp_path_factory.mktemp(n) for n in ("local", "dead", "remote"))
            started = {
                "local": (Cli(sweep_args(local), local), local),
                "dead": (Cli(["tracking=mlflow", f"tracking.uri=http://127.0.0.1:{free_port()}",
                              "tracking.retries=0", "tracking.timeout_s=2"], dead), dead),  # fmt: skip
            }
            wait_for(uri, server, where / "server.log")
            started["remote"] = (Cli(sweep_args(remote, f"tracking.uri={uri}"), remote), remote)
            yield {name: (cli.wait(), folder) for name, (cli, folder) in started.items()}, uri
        finally:
            os.killpg(server.pid, signal.SIGKILL)  # the server and the workers it started, by its group id
            server.wait(timeout=30)


def check_tracked_sweep(proc, sweep_dir: Path, client: MlflowClient) -> dict:
    """The acceptance checks; returns {job dir name: run id}."""
    from evalharness.report.tracking.mapping import run_metrics
    from evalharness.rundir.reader import load_run

    assert proc.returncode == 1, proc.stderr[-3000:]  # one job stopped: the multirun says so
    assert "warning: tracking" not in proc.stderr, proc.stderr[-3000:]
    experiment = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1 and len(runs) == 5
    parent = parents[0]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(children) == 4
    assert parent.info.status == "FAILED" and parent.data.tags["evalharness.failed_jobs"] == "1"
    assert {"sweep.csv", "sweep.html", "sweep.md"} <= {
        a.path for a in client.list_artifacts(parent.info.run_id)
    }
    ids = {}
    for job in sorted(p.parent for p in sweep_dir.glob("*/metrics.json")):
        record = json.loads((job / "tracking.json").read_text())
        assert record["status"] == "logged" and record["parent_run_id"] == parent.info.run_id
        tracked = client.get_run(record["run_id"])
        doc = json.loads((job / "metrics.json").read_text())
        metrics = tracked.data.metrics
        # the same numbers as metrics.json, read there directly, and every figure the mapping makes
        assert metrics["top1"] == doc["metrics"]["top1"]
        assert [metrics["top1_ci_low"], metrics["top1_ci_high"]] == doc["metrics"]["intervals"]["top1"]
        assert metrics["latency_p50_ms"] == doc["latency_ms"]["inference"]["p50"]
        assert metrics["coverage"] == doc["provenance"]["delegate"]["coverage"]["fraction"]
        assert metrics == run_metrics(load_run(str(job), job.name))
        assert tracked.data.params["task.num_images"] == str(
            doc["provenance"]["config"]["task"]["num_images"]
        )
        assert tracked.data.tags["model.sha256"] == doc["provenance"]["model"]["sha256"]
        logged = {a.path for a in client.list_artifacts(record["run_id"])}
        assert {"metrics.json", "results.txt", "predictions.jsonl", ".hydra"} <= logged
        copy = Path(
            client.download_artifacts(record["run_id"], "metrics.json", str(job.parent.parent / job.name))
        )
        assert copy.read_bytes() == (job / "metrics.json").read_bytes()
        broken = doc["provenance"]["config"]["task"]["num_images"] == 0
        assert doc["status"] == ("partial" if broken else "complete")
        assert tracked.info.status == ("FAILED" if broken else "FINISHED")
        assert tracked.data.tags["evalharness.status"] == doc["status"]
        ids[job.name] = record["run_id"]
    return ids


def test_sweep_tracked_in_the_default_local_store(tracked):
    proc, folder = tracked[0]["local"]
    assumed = f"tracking: tracking.uri not set: MLflow store sqlite:///{folder}/mlflow.db"
    assert proc.stderr.count(assumed) == 1
    check_tracked_sweep(proc, folder / "multirun", MlflowClient(f"sqlite:///{folder / 'mlflow.db'}"))
    assert (folder / "mlruns").is_dir()  # artifacts beside the store, not in a job's working dir


def test_a_malformed_uri_is_one_error_line_before_the_run(tmp_path):
    proc = run_cli(["tracking=mlflow", "tracking.uri=localhost:5000"], cwd=tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr
    assert "tracking.uri='localhost:5000': not a tracking store URI" in errors[0]
    proc = run_cli(["tracking.uri=http://x:1"], cwd=tmp_path)
    assert proc.returncode == 2 and "tracking=none logs nothing" in proc.stderr


def test_reading_back_an_unknown_store_is_one_error_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, _, err = report(capsys, "diff", "mlflow:abc", "mlflow:def")
    assert code == 2 and err.count("error:") == 1 and "no MLflow store at sqlite:///" in err
    assert not (tmp_path / "mlflow.db").exists()  # reading makes no store


def test_an_unreachable_server_is_a_warning_not_a_failed_run(tracked):
    proc, folder = tracked[0]["dead"]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "warning: tracking: run" in proc.stderr and "error:" not in proc.stderr
    (record,) = folder.glob("outputs/**/tracking.json")
    assert json.loads(record.read_text())["status"] == "failed"


def test_sweep_tracked_on_a_real_server_and_read_back_by_run_id(tracked, tmp_path, capsys, monkeypatch):
    (proc, folder), server = tracked[0]["remote"], tracked[1]
    sweep_dir = folder / "multirun"
    ids = check_tracked_sweep(proc, sweep_dir, MlflowClient(server))
    assert not (folder / "mlflow.db").exists()  # a server given: no local store made
    first, second = sorted(ids)[1:3]  # the repeated measurement: two comparable runs
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server)
    by_dir = report(capsys, "diff", sweep_dir / first, sweep_dir / second, "--format", "json")
    by_id = report(capsys, "diff", f"mlflow:{ids[first]}", f"mlflow:{ids[second]}", "--format", "json")
    assert by_dir[0] == by_id[0] == 0, by_id[2]
    # where each copy lies differs, nothing else may: the side's name of two identical runs started in
    # one second ends with that place (its folder, its MLflow run id: report/run_names.py)
    strip = ("dir", "path", "label", "name")
    assert _without(json.loads(by_id[1]), strip) == _without(json.loads(by_dir[1]), strip)
    parent = json.loads((sweep_dir / "tracking.json").read_text())["run_id"]
    code, _, err = report(capsys, "sweep", f"mlflow:{parent}", "--out", tmp_path / "again")
    assert code == 0, err
    assert _column(tmp_path / "again" / "sweep.csv", "status") == _column(sweep_dir / "sweep.csv", "status")


def _without(value, keys: tuple[str, ...]):
    if isinstance(value, dict):
        return {k: _without(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_without(v, keys) for v in value]
    return value


def _column(path: Path, name: str) -> list[str]:
    import csv

    return [row[name] for row in csv.DictReader(path.open())]
