"""Interrupted runs keep their work and resume to exactly the uninterrupted result."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from conftest import VAL50, run_inprocess
from shared_runs import edit_document

from evalharness.core.errors import ConfigError, EvalHarnessError

# Reference kernels on MobileNet v2 take ~0.2 s an image: slow enough to interrupt mid-way.
SLOW = [
    *VAL50,
    "model=mobilenet_v2_1.0_224_quant",
    "delegate=reference",
    "delegate.op_resolver=builtin_ref",
    "task.num_images=30",
    "loop.progress=false",
]


def _start(run_dir, *extra) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "evalharness", *SLOW, f"hydra.run.dir={run_dir}", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for_lines(path, n, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and path.read_text().count("\n") >= n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    pytest.fail("run made no progress")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("full")
    proc = _start(run_dir)
    assert proc.wait(timeout=300) == 0, proc.communicate()
    return json.loads((run_dir / "metrics.json").read_text())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_kill_then_resume_equals_uninterrupted(tmp_path, uninterrupted, sig):
    preds = tmp_path / "predictions.jsonl"
    proc = _start(tmp_path)
    _wait_for_lines(preds, 8, proc)
    os.kill(proc.pid, sig)
    code = proc.wait(timeout=60)
    scored_before = preds.read_text().count("\n")
    assert 8 <= scored_before < 30
    if sig == signal.SIGTERM:  # graceful: a valid partial metrics.json, exit 1
        assert code == 1
        partial = json.loads((tmp_path / "metrics.json").read_text())
        assert partial["status"] == "partial" and partial["stop_reason"] == "interrupted"
        assert partial["metrics"]["num_scored"] == scored_before
    else:  # hard kill: no metrics.json, predictions intact up to the last whole line
        assert code == -signal.SIGKILL and not (tmp_path / "metrics.json").exists()
        with open(preds, "a") as f:
            f.write('{"id": "half a li')  # what a kill in the middle of a write leaves
    proc = _start(tmp_path, "loop.resume=true")
    assert proc.wait(timeout=300) == 0, proc.communicate()
    resumed = json.loads((tmp_path / "metrics.json").read_text())
    assert resumed["status"] == "complete" and resumed["resumed_samples"] == scored_before
    assert json.dumps(resumed["metrics"], sort_keys=True) == json.dumps(
        uninterrupted["metrics"], sort_keys=True
    )
    lines = [json.loads(line) for line in preds.read_text().splitlines()]
    assert [r["id"] for r in lines] == sorted(r["id"] for r in lines) and len(lines) == 30
    assert resumed["latency_ms"]["inference"]["count"] == 30


def test_existing_run_is_never_overwritten_silently(tmp_path):
    run_inprocess(["task.num_images=2"], tmp_path)
    first = (tmp_path / "metrics.json").read_text()
    with pytest.raises(EvalHarnessError, match="already holds a complete run; loop.resume=true"):
        run_inprocess(["task.num_images=2"], tmp_path)
    assert (tmp_path / "metrics.json").read_text() == first
    with pytest.raises(EvalHarnessError, match="nothing to resume"):
        run_inprocess(["task.num_images=2", "loop.resume=true"], tmp_path)
    run_inprocess(["task.num_images=3", "loop.overwrite=true"], tmp_path)
    assert json.loads((tmp_path / "metrics.json").read_text())["metrics"]["num_scored"] == 3


def test_resume_refuses_a_different_config(tmp_path):
    run_inprocess(["task.num_images=2"], tmp_path)
    edit_document(tmp_path, status="partial")
    with pytest.raises(ConfigError, match="config differs from the interrupted run in delegate.num_threads"):
        run_inprocess(["task.num_images=2", "loop.resume=true", "delegate.num_threads=2"], tmp_path)


def test_resume_without_a_run_says_where_to_point(tmp_path):
    with pytest.raises(EvalHarnessError, match="holds no run; set hydra.run.dir"):
        run_inprocess(["loop.resume=true"], tmp_path)


@pytest.mark.parametrize("seed", [3, 11])
def test_sigkill_at_a_random_moment_then_resume_equals_uninterrupted(tmp_path, uninterrupted, seed):
    """A kill anywhere: before the run claimed its directory (nothing to resume: the same command
    starts it), mid-loop, or after the last prediction."""
    proc = _start(tmp_path)
    time.sleep(random.Random(seed).uniform(0.5, 6.0))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    claimed = (tmp_path / "run_state.json").exists()
    if not (tmp_path / "metrics.json").exists():
        resumed = _start(tmp_path, *(["loop.resume=true"] if claimed else []))
        assert resumed.wait(timeout=300) == 0, resumed.communicate()
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert doc["status"] == "complete" and doc["metrics"] == uninterrupted["metrics"]
