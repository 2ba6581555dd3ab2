"""loop.parallel: does ``auto`` choose the better split of the cores? (not a unit test)

    python benchmarks/bench_parallel.py [--images 400] [--repeats 2] [--model mobilenet_v2_1.0_224_quant]
        [--calibrations 0]

Cold runs (no tensor cache) of val50 repeated to ``--images``, MobileNet v2 quant by default, every
processes x threads split of this machine's cores given explicitly (on 2 cores: 1x2 and 2x1), in
rounds whose order reverses each time (ABBA...: paired against the machine's drift), then
``loop.parallel=auto`` once per round. Throughput is the whole command's samples / wall-clock
(process starts, loads, merge included), the figure a user waits for. Prints each split's figures,
the ratio of the best to the other, what auto chose and why (its calibration plan: skipped,
shortened or full, with the run's estimated length), the load average, and whether every run's
metrics are identical. ``--calibrations K``: K full calibrations (what ``auto`` runs on a run long
enough to pay for it, :func:`evalharness.run.parallel.calibrate`), one after each round's runs, and
the whole-command figure of the split each chose against the best fixed split's.
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

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO.parent / "shared" / "assets"
sys.path.insert(0, str(REPO / "tests"))
from repeated_dataset import make_dataset, overrides  # noqa: E402

from evalharness.run.parallel import calibrate, candidates  # noqa: E402
from evalharness.settings.thread_budget import available_cores  # noqa: E402


def run(data: Path, out: Path, model: str, parallel: str) -> tuple[float, dict]:
    cmd = [
        sys.executable, "-m", "evalharness", f"model={model}", f"paths.models_dir={ASSETS / 'models'}",
        *overrides(data), "loop.tensor_cache=false", "loop.progress=false", f"loop.parallel={parallel}",
        f"hydra.run.dir={out}",
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    return wall, json.loads((out / "metrics.json").read_text())


def full_calibration(model: str) -> tuple[str, dict]:
    """What ``auto`` runs on a long run: every split, full windows; (the split chosen, its figures)."""
    from evalharness.runtime import plan_delegate

    path = str(ASSETS / "models" / f"{model}.tflite")
    cal = calibrate(path, plan_delegate({"name": "cpu"}), "litert", available_cores())
    p, t = cal.pop("choice")
    return f"{p}x{t}", cal


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--model", default="mobilenet_v2_1.0_224_quant")
    ap.add_argument("--calibrations", type=int, default=0, help="full calibrations, one after each round")
    args = ap.parse_args()
    splits = [f"{p}x{t}" for p, t in candidates(available_cores())]
    figures: dict[str, list[float]] = {s: [] for s in [*splits, "auto"]}
    chosen, metrics, picks = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        data = make_dataset(Path(tmp) / "data", args.images)
        k = 0
        for r in range(args.repeats):
            for split in [*(splits if r % 2 == 0 else splits[::-1]), "auto"]:
                k += 1
                wall, doc = run(data, Path(tmp) / f"run{k}", args.model, split)
                figures[split].append(args.images / wall)
                metrics.append(doc["metrics"])
                if split == "auto":
                    par = doc["provenance"]["parallel"]
                    chosen.append((f"{par['processes']}x{par['threads_per_process']}", par))
            if r < args.calibrations:
                picks.append(full_calibration(args.model))
    print(f"{args.images} images, {args.model}, {available_cores()} cores, load average {os.getloadavg()}")
    for split, values in figures.items():
        print(
            f"loop.parallel={split:<5} " + " / ".join(f"{v:.1f}" for v in values) + " img/s (whole command)"
        )
    means = {s: sum(figures[s]) / len(figures[s]) for s in splits}
    best = max(means, key=means.get)
    for s in splits:
        if s != best:
            print(f"{best} / {s} = {means[best] / means[s]:.3f} (mean over paired rounds)")
    for split, par in chosen:
        print(f"auto chose {split} ({par['source']}); better split in this run: {best}")
    for pick, cal in picks:
        rates = ", ".join(f"{k} {sum(v) / len(v):.1f}" for k, v in cal["invokes_per_s"].items())
        print(
            f"full calibration chose {pick} (invokes/s: {rates}) = {means[pick] / means[best]:.3f} x the "
            f"best fixed split {best} (whole command, mean over the rounds)"
        )
    print(f"metrics identical across every run: {all(m == metrics[0] for m in metrics)}")


if __name__ == "__main__":
    main()
