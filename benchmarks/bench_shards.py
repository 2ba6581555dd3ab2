"""Wall-clock of one process vs N local worker processes over shards, with the thread budget applied.

    python benchmarks/bench_shards.py [--images 500] [--workers 2] [--repeats 2]

Images are val50 repeated (symlinks, as bench_throughput.py). "1 worker": one run with
``delegate.num_threads=auto`` (= every core). "N workers": ``hydra/launcher=joblib n_jobs=N`` over N
shards, ``num_threads=auto`` (= cores // N each), merged by the sweep callback. Wall-clock covers the
whole command (process start, model load, sweep report, merge). Checks the merged metrics equal the
single run's. Runs are alternated so background load hits both alike; print the load average too.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_throughput import ASSETS, MODEL, make_dataset  # noqa: E402


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evalharness", *cmd], check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=500)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = make_dataset(Path(tmp) / "data", args.images)
        common = [
            f"model={MODEL}",
            f"paths.models_dir={ASSETS / 'models'}",
            f"dataset.root={data / 'images'}",
            f"dataset.ground_truth={data / 'labels.csv'}",
            "dataset.format=csv",
            "delegate.num_threads=auto",
            "loop.tensor_cache=false",
            "loop.progress=false",
        ]
        n = args.workers
        shards = [
            "-m",
            "hydra/launcher=joblib",
            f"hydra.launcher.n_jobs={n}",
            f"dataset.shard.count={n}",
            "dataset.shard.index=" + ",".join(map(str, range(n))),
        ]
        one, many = [], []
        for rep in range(args.repeats):
            single_dir, sweep_dir = Path(tmp) / f"one{rep}", Path(tmp) / f"many{rep}"
            one.append(timed([*common, f"hydra.run.dir={single_dir}"]))
            many.append(timed([*shards, *common, f"hydra.sweep.dir={sweep_dir}"]))
            single = json.loads((single_dir / "metrics.json").read_text())
            merged_dir = next(sweep_dir.glob("merged_*"))
            merged = json.loads((merged_dir / "metrics.json").read_text())
            assert merged["metrics"] == single["metrics"], "merged metrics differ from the single run"
        threads_one = single["provenance"]["thread_budget"]["num_threads"]
        threads_many = merged["provenance"]["thread_budget"]["num_threads"]
        print(f"{args.images} images, {MODEL}, {os.cpu_count()} cores, load average {os.getloadavg()}")
        print(f"1 worker x {threads_one} threads: " + ", ".join(f"{t:.2f} s" for t in one))
        print(f"{n} workers x {threads_many} threads: " + ", ".join(f"{t:.2f} s" for t in many))
        print(f"ratio (best of each): {min(many) / min(one):.2f}; merged metrics identical: yes")


if __name__ == "__main__":
    main()
