"""One claim for every writer and one interrupt policy for the process tree (issue 41, parts 2-3).

A signal lands at an exact moment through the pause hook (``EVALHARNESS_TEST_PAUSE``,
core/interrupts.py): the command waits there, the test collects every process under it from
``/proc``, signals the top one and checks that none of them is left, that one line and exit 1 came
back, that metrics.json says how far it got, and that ``loop.resume=true`` finishes it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ASSETS, MODELS, VAL50

SMALL = [*VAL50, "model=mobilenet_v1_0.25_128_quant", "task.num_images=6", "loop.progress=false"]
COCO = ["task=coco", f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "task.num_images=4",
        "task.tide=true", "loop.progress=false"]  # fmt: skip


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # [state, ppid, ...]


def _descendants(pid: int) -> set[int]:
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))):
            parents[int(entry)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _assert_gone(pids: set[int]) -> None:
    deadline = time.time() + 10  # multiprocessing's resource tracker ends once its pipe closes
    while (left := {p for p in pids if _alive(p)}) and time.time() < deadline:
        time.sleep(0.05)
    assert not left, f"processes left running: {left}"


def _paused(args: list[str], stage: str, tmp: Path, count: int = 1):
    """Start ``python -m evalharness ARGS`` and wait until ``count`` processes pause at ``stage``."""
    pause = tmp / f"pause-{stage}"
    pause.mkdir()
    env = {**os.environ, "EVALHARNESS_TEST_PAUSE": stage, "EVALHARNESS_TEST_PAUSE_DIR": str(pause)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalharness", *args], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=tmp,
    )  # fmt: skip
    deadline = time.time() + 120
    while len(os.listdir(pause)) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.time() < deadline, f"never reached {stage}"
        time.sleep(0.05)
    return proc


def _ended_cleanly(proc: subprocess.Popen, sig: int, pids: set[int]) -> str:
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    _assert_gone(pids)
    assert proc.returncode == 1, err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return err


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "evalharness", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode in (0, 1, 2) and "Traceback" not in proc.stderr, proc.stderr
    assert len([line for line in proc.stderr.splitlines() if line.startswith("error:")]) <= 1, proc.stderr
    return proc


def _doc(run_dir: Path) -> dict:
    return json.loads((run_dir / "metrics.json").read_text())


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_a_parallel_run_ends_its_shards_records_and_resumes(tmp_path, sig):
    run = tmp_path / "run"
    args = [*SMALL, "loop.parallel=2x1", f"hydra.run.dir={run}"]
    proc = _paused(args, "loop", tmp_path, count=2)
    pids = _descendants(proc.pid) | {proc.pid}
    assert len(pids) >= 3  # the parent and its two shards
    err = _ended_cleanly(proc, sig, pids)
    doc = _doc(run)
    assert doc["status"] == "interrupted" and signal.Signals(sig).name in err
    shards = [_doc(run / "parallel" / f"shard_{i}") for i in range(2)]
    assert [s["status"] for s in shards] == ["partial", "partial"]
    assert doc["predictions"]["count"] == sum(s["predictions"]["count"] for s in shards) >= 2
    if sig == signal.SIGTERM:
        resumed = _run([*args, "loop.resume=true"], tmp_path)
        assert resumed.returncode == 0, resumed.stderr
        assert _doc(run)["status"] == "complete" and _doc(run)["predictions"]["count"] == 6


def test_a_signal_during_the_bootstrap_keeps_the_predictions_ends_tide_and_resumes(tmp_path):
    run = tmp_path / "coco"
    args = [*COCO, f"hydra.run.dir={run}"]
    proc = _paused(args, "bootstrap", tmp_path)
    pids = _descendants(proc.pid) | {proc.pid}
    assert len(pids) >= 2  # TIDE's worker runs beside the bootstrap
    _ended_cleanly(proc, signal.SIGTERM, pids)
    doc = _doc(run)
    assert doc["status"] == "interrupted" and doc["predictions"]["count"] == 4
    assert "while scoring" in doc["stop_reason"] and not (run / "results.txt").exists()
    resumed = _run([*args, "loop.resume=true"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert _doc(run)["status"] == "complete" and _doc(run)["resumed_samples"] == 4


def test_parallel_never_replaces_an_interrupted_single_run(tmp_path):
    run = tmp_path / "run"
    assert _run([*SMALL, "task.num_images=2", f"hydra.run.dir={run}"], tmp_path).returncode == 0
    (run / "metrics.json").unlink()  # hard-killed after its predictions were written
    (run / "results.txt").unlink()
    before = _files(run)
    parallel = [*SMALL, "task.num_images=2", "loop.parallel=2x1", f"hydra.run.dir={run}"]
    for extra, words in (([], "already holds an interrupted run"), (["loop.resume=true"], "not split by")):
        proc = _run([*parallel, *extra], tmp_path)
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert _files(run) == before


def test_a_directory_another_run_is_writing_is_refused_to_every_writer(tmp_path):
    run = tmp_path / "run"
    proc = _paused([*SMALL, f"hydra.run.dir={run}"], "loop", tmp_path)
    pids = _descendants(proc.pid) | {proc.pid}
    before = _files(run)
    other = _run([*SMALL, "loop.parallel=2x1", f"hydra.run.dir={run}"], tmp_path)
    assert other.returncode == 2 and "in use by another running evalharness process" in other.stderr
    assert _files(run) == before
    _ended_cleanly(proc, signal.SIGTERM, pids)
    assert _doc(run)["status"] == "partial"


def test_a_signal_ends_a_multirun_with_the_job_it_reached_recorded(tmp_path):
    sweep = tmp_path / "sweep"
    args = ["-m", *SMALL, "task.num_images=3,4", f"hydra.sweep.dir={sweep}"]
    proc = _paused(args, "loop", tmp_path)
    _ended_cleanly(proc, signal.SIGTERM, _descendants(proc.pid) | {proc.pid})
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir())
    assert len(jobs) == 1 and _doc(jobs[0])["status"] == "partial"  # the sweep stops: no job after it


def test_a_signal_before_the_loop_leaves_an_interrupted_record_that_resumes(tmp_path):
    run = tmp_path / "run"
    args = [*SMALL, f"hydra.run.dir={run}"]
    proc = _paused(args, "start-up", tmp_path)
    _ended_cleanly(proc, signal.SIGINT, _descendants(proc.pid) | {proc.pid})
    doc = _doc(run)
    assert doc["status"] == "interrupted" and "before the loop" in doc["stop_reason"]
    assert _run(args, tmp_path).returncode == 2  # a run is there: never overwritten silently
    resumed = _run([*args, "loop.resume=true"], tmp_path)
    assert resumed.returncode == 0 and _doc(run)["status"] == "complete", resumed.stderr


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="lanes need a core an instance")
def test_a_signal_to_a_run_in_lanes_stops_them_records_and_resumes(tmp_path):
    """Paused while scoring in lanes (their threads have filled their window and wait): SIGTERM
    stops the lanes, the samples scored so far are recorded, and a resume runs the rest in lanes."""
    run = tmp_path / "run"
    args = [*SMALL, "task.num_images=20", "loop.shape=lanes", f"hydra.run.dir={run}"]
    proc = _paused(args, "loop", tmp_path)
    pids = _descendants(proc.pid) | {proc.pid}
    _ended_cleanly(proc, signal.SIGTERM, pids)
    doc = _doc(run)
    assert doc["status"] == "partial" and doc["predictions"]["count"] < 20, doc["status"]
    assert doc["provenance"]["thread_budget"]["loop"]["shape"] == "lanes"
    resumed = _run([*args, "loop.resume=true"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    done = _doc(run)
    assert done["status"] == "complete" and done["predictions"]["count"] == 20
    assert done["provenance"]["thread_budget"]["loop"]["lanes"] == len(os.sched_getaffinity(0))
