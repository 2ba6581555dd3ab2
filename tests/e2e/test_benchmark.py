"""task=benchmark: benchmark_model's figures, printed and written."""

from __future__ import annotations

import time

from conftest import run_inprocess, task_lines

from evalharness.tasks.benchmark.live import Runs


def test_benchmark_prints_and_writes_every_figure(tmp_path):
    doc = run_inprocess(["task=benchmark", "task.num_runs=20", "task.min_secs=0"], tmp_path)
    lat, mem = doc["latency_ms"], doc["memory_mb"]
    assert lat["inference"]["count"] == 20 and lat["warmup"]["count"] == 1
    for key in ("mean", "std", "min", "p50", "p90", "p99"):
        assert lat["inference"][key] > 0 or key == "std"
    assert lat["init"] > 0 and lat["first_inference"] > 0
    assert mem["init_delta"] >= 0 and mem["peak_rss"] > 0 and mem["overall_delta"] >= mem["init_delta"] - 1
    lines = task_lines(tmp_path)
    assert lines[0] == "Model size: 0.501 MB"
    assert lines[1].startswith("Inference timings in us: Init: ") and "Warmup (avg): " in lines[1]
    assert lines[2].startswith("count=20 min=") and " p99=" in lines[2]
    assert lines[3].startswith("Memory footprint delta from the start of the tool (MB): init=")
    assert not (tmp_path / "predictions.jsonl").exists()  # nothing to score, nothing written
    # the task's own stopping rules are its latency's validity rules (CV and throttling as everywhere)
    validity = lat["validity"]
    assert validity["rule"]["min_invokes"] == 20 and validity["rule"]["min_secs"] == 0
    assert validity["invokes"] == 20 and validity["duration_basis"] == "wall-clock"
    assert validity["valid"] == (validity["problems"] == []) and "thermal" in validity


def test_runs_honour_num_runs_and_min_secs():
    assert list(Runs(3, 0.0, 10)) == [0, 1, 2]
    start, seen, runs = time.perf_counter(), [], Runs(2, 0.15, 1000)
    assert len(runs) == 2  # before: the progress bar's total
    for i in runs:
        seen.append(i)
        time.sleep(0.02)
    assert len(seen) > 2 and time.perf_counter() - start >= 0.15
    assert len(runs) == len(seen)  # after: as many listed as run (else the run is "invalid")
    assert len(list(Runs(1, 60.0, 5))) == 5  # max_runs caps min_secs


def test_peak_rss_is_the_runs_own_not_its_parents():
    """Linux carries a parent's RSS over fork + exec into ru_maxrss; memory_mb must not inherit it."""
    import subprocess
    import sys

    ballast = bytearray(300 * 2**20)
    for i in range(0, len(ballast), 4096):  # touch every page: 300 MB resident in this process
        ballast[i] = 1
    probe = "from evalharness.loop.engine import peak_rss_mb; print(peak_rss_mb())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    del ballast
    assert 1 < float(out.stdout) < 200
