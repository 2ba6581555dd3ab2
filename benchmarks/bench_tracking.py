"""What ``tracking=mlflow`` adds to a run with the default local store (SQLite beside outputs/).

    python benchmarks/bench_tracking.py [--jobs 8] [--repeats 3]

The target (issue 35): under 1 s per run. Three figures, each measured here in one go:

* per run: the tracking callback's own work for one finished run directory (params, metrics, tags,
  artifacts, status) in a process whose store is open: ``Store.log_run``, min / median / max;
* once per process: importing MLflow and opening the store (an existing database; the first run
  ever also creates its tables, printed separately);
* end to end: the same multirun (bundled sample, ``--jobs`` jobs) with ``tracking=none`` and with
  ``tracking=mlflow``, best wall-clock of ``--repeats``: (tracked - plain) / jobs, which holds the
  process-start cost spread over the sweep's jobs.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 1.0
SNIPPET = """
import sys, time
t = time.perf_counter()
from evalharness.report.tracking.mlflow_store import Store
from evalharness.report.tracking.mapping import check_tracking
from evalharness.rundir.reader import load_run
store = Store(check_tracking({"name": "mlflow"}))
store.experiment()
opened = time.perf_counter() - t
times = []
for d in sys.argv[1:]:
    t = time.perf_counter()
    store.log_run(load_run(d, d), d, None)
    times.append(time.perf_counter() - t)
print(opened, *times)
"""


def sweep(cwd: Path, jobs: int, tracking: str, name: str) -> float:
    values = ",".join(str(1 + i % 5) for i in range(jobs))  # jobs over the bundled 5 images
    cmd = [sys.executable, "-m", "evalharness", "-m", f"task.num_images={values}", f"tracking={tracking}",
           "loop.progress=false", f"hydra.sweep.dir={cwd / name}",
           "hydra.callbacks.sweep_report.index=null"]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"sweep failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return elapsed


def log_runs(cwd: Path, run_dirs: list[str]) -> tuple[float, list[float]]:
    proc = subprocess.run([sys.executable, "-c", SNIPPET, *run_dirs], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(proc.stderr[-2000:])
    opened, *times = map(float, proc.stdout.split())
    return opened, times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-tracking-") as tmp:
        cwd = Path(tmp)
        plain = min(sweep(cwd, args.jobs, "none", f"plain{i}") for i in range(args.repeats))
        first_open, _ = log_runs(cwd, [])  # creates mlflow.db and its tables
        tracked = min(sweep(cwd, args.jobs, "mlflow", f"tracked{i}") for i in range(args.repeats))
        runs = sorted(str(m.parent) for m in (cwd / "plain0").glob("*/metrics.json"))
        opened, times = log_runs(cwd, runs)
    per_run = statistics.median(times)
    print(f"per run (Store.log_run, {len(times)} runs): min {min(times):.3f} s, median {per_run:.3f} s, "
          f"max {max(times):.3f} s")  # fmt: skip
    print(f"once per process: import MLflow + open the store {opened:.2f} s (first use, creating it: "
          f"{first_open:.2f} s)")  # fmt: skip
    print(f"end to end, {args.jobs}-job multirun, best of {args.repeats}: plain {plain:.2f} s, tracked "
          f"{tracked:.2f} s -> {(tracked - plain) / args.jobs:.3f} s per run")  # fmt: skip
    print(f"target < {TARGET_S:.0f} s per run: per-run work {per_run / TARGET_S:.2f} of it")


if __name__ == "__main__":
    main()
