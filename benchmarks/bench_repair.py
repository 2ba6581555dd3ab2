"""Wall-clock and model evaluations of ``quant=int8 quant.max_drop=0.01`` on EfficientNet-Lite0, val50.

    python benchmarks/bench_repair.py [--max-drop 0.01] [--threads 2] [--keep DIR]

The target (issue 33): the repair of EfficientNet-Lite0 on 50 images (searched on 25, reported on
the 25 held out) takes under 10 minutes on 2 cores. One run of the app in a fresh cache (nothing
reused: every variant is built); printed: the repair's own wall time (search + final build +
held-out evaluation, from ``provenance.model.quant.repair``), the whole run's, the number of model
evaluations (each one variant built from the one calibration and scored on the search part) and
the ratio to the 600 s target.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))
from conftest import VAL50  # noqa: E402

BUDGET_S = 600.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-drop", default="0.01")
    ap.add_argument("--threads", default="2", help="delegate.num_threads")
    ap.add_argument("--keep", help="copy the run directory (repair/frontier.md, ...) here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cmd = [
            sys.executable, "-m", "evalharness", *VAL50, "model=efficientnet_lite0_fp32", "quant=int8",
            f"quant.max_drop={args.max_drop}", f"delegate.num_threads={args.threads}",
            f"paths.cache_dir={tmp / 'cache'}", f"hydra.run.dir={tmp / 'run'}", "loop.progress=false",
        ]  # fmt: skip
        started = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        whole = time.perf_counter() - started
        if proc.returncode not in (0, 1):
            raise SystemExit(proc.stderr)
        doc = json.loads((tmp / "run" / "metrics.json").read_text())
        r = doc["provenance"]["model"]["quant"]["repair"]
        h = r["held_out"]
        print(next(line for line in proc.stdout.splitlines() if line.startswith("repair:")))
        print(
            f"repair of EfficientNet-Lite0 on val50 ({r['split']['search']} searched, {h['images']} "
            f"held out), max_drop={args.max_drop}, {args.threads} threads: {r['wall_s']:.1f} s "
            f"(whole run {whole:.1f} s); {r['evaluations']['search']} model evaluations on the search "
            f"part + {r['evaluations']['held_out']} held out; {len(r['chosen']['float_ops'])} op(s) kept "
            "in float; "
            f"ratio to the {BUDGET_S:.0f} s target: {r['wall_s'] / BUDGET_S:.2f} "
            f"(load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)"
        )
        if args.keep:
            shutil.copytree(tmp / "run", args.keep, dirs_exist_ok=True)


if __name__ == "__main__":
    main()
