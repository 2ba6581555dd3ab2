"""``state.hold``: the claim's lock for writers that make a whole run directory (merge, a failure
record): re-entrant for the process that claimed the directory, refused to any other process."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from shared_runs import fake_run_dir

from evalharness.core.errors import EvalHarnessError
from evalharness.rundir.state import claim, hold, release

HOLDER = (
    "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); "
    "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
)


def test_hold_is_reentrant_under_this_processes_claim(tmp_path):
    run = str(tmp_path)
    claim(run, {"task": {"name": "t"}}, {}, resume=False, overwrite=False, can_resume=True)
    try:
        with hold(run) as already:
            assert already  # a loop.parallel parent merging into the directory it claimed
        with hold(run) as already:  # still held: the claim outlives the inner hold
            assert already
    finally:
        release(run)
    with hold(run) as already:
        assert not already


def test_hold_is_refused_while_another_process_holds_the_directory(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, tmp_path], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(EvalHarnessError, match="in use by another running evalharness process"),
            hold(str(tmp_path)),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_an_interrupted_record_names_what_was_kept_and_is_resumed(tmp_path):
    """The record a signal after the loop leaves: no metrics, the predictions kept, and a resume
    (or a re-run sweep job) continues it like a partial run."""
    from evalharness.rundir.document import write_failure
    from evalharness.rundir.state import sweep_job_mode

    run, config = str(tmp_path), {"task": {"name": "t"}}
    claim(run, config, {}, resume=False, overwrite=False, can_resume=True)
    fake_run_dir(tmp_path, predictions=[{"id": "a", "latency_ms": 1.0}])
    write_failure(run, "interrupted by SIGTERM while scoring", config, [], (1, "predictions.jsonl"))
    release(run)
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert doc["status"] == "interrupted" and doc["metrics"] is None
    assert doc["predictions"]["count"] == 1 and doc["stop_reason"].startswith("interrupted by SIGTERM")
    assert sweep_job_mode(run, config, can_resume=True) == ("resume", None)
    with pytest.raises(EvalHarnessError, match="already holds an interrupted run"):
        claim(run, config, {}, resume=False, overwrite=False, can_resume=True)
    assert claim(run, config, {}, resume=True, overwrite=False, can_resume=True) == [
        {"id": "a", "latency_ms": 1.0}
    ]
    release(run)
