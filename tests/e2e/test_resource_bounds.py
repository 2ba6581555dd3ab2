"""Bounds on resources, end to end: a thread count above what the machine grants is refused at
validation (exit 2, one ``error:`` line, before the model loads), and a tracker whose store cannot
be opened costs the run ``tracking.timeout_s`` at most, not MLflow's minutes of engine retries."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from conftest import run_cli


def assert_contract(result, code: int) -> None:
    text = result.stdout + result.stderr
    assert result.returncode == code, text
    assert sum(line.startswith("error:") for line in text.splitlines()) == (code == 2)
    assert "Traceback" not in text and "internal error" not in text


def test_num_threads_above_the_machines_bound_is_refused_before_the_model_loads(tmp_path):
    start = time.monotonic()
    result = run_cli(["delegate.num_threads=100000", f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    assert_contract(result, 2)
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert "delegate.num_threads=100000" in line and "bound of" in line and "use at most" in line
    doc = json.loads((tmp_path / "run" / "metrics.json").read_text())  # the failed record says why
    assert doc["status"] == "failed" and doc["metrics"] is None and line.endswith(doc["error"])
    assert set(doc["provenance"]) == {"config", "overrides"}  # refused at validation: no model read
    print(f"refused in {time.monotonic() - start:.1f} s")


def unopenable_store(directory: Path) -> Path:
    """A SQLite store MLflow cannot open: the db file and its directory chmod 0444. Root ignores
    file modes, so there the db path is a directory (made 0444 too): SQLite's "unable to open
    database file" either way, which MLflow's engine retries with back-off."""
    directory.mkdir()
    db = directory / "mlflow.db"
    if os.geteuid() == 0:
        db.mkdir()
    else:
        db.write_bytes(b"")
    db.chmod(0o444)
    directory.chmod(0o444)
    return db


def test_a_tracker_that_hangs_costs_the_run_timeout_s_at_most(tmp_path):
    """``tracking.retries=10`` lets MLflow's engine retry for ~200 s; ``tracking.timeout_s=3``
    holds the whole logging step to 3 s: exit 0 (tracking never fails a run), tracking.json
    says failed and why. Timing slack is generous (a busy machine): the ratio is printed."""
    store = tmp_path / "store"
    db = unopenable_store(store)
    run_dir = tmp_path / "run"
    timeout_s = 3
    try:
        start = time.monotonic()
        result = run_cli(
            [
                "task.num_images=2", "tracking=mlflow", f"tracking.uri=sqlite:///{db}",
                f"tracking.timeout_s={timeout_s}", "tracking.retries=10", f"hydra.run.dir={run_dir}",
            ],
            tmp_path,
        )  # fmt: skip
        ended, total = time.time(), time.monotonic() - start
    finally:
        store.chmod(0o755)
    assert_contract(result, 0)
    record = json.loads((run_dir / "tracking.json").read_text())
    assert record["status"] == "failed" and record["error"].startswith(f"timed out after {timeout_s} s")
    assert "not logged: timed out" in result.stderr
    tracking_s = ended - (run_dir / "metrics.json").stat().st_mtime  # from the run's end to exit
    print(f"tracking took {tracking_s:.1f} s = {tracking_s / timeout_s:.2f} x timeout_s; run {total:.1f} s")
    assert tracking_s < timeout_s + 15 and total < 90
