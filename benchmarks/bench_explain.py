"""Wall-clock of ``python -m evalharness.explain`` on 10 changed images of a 66-op model.

    python benchmarks/bench_explain.py [--gpu]

The target (issue 20): explaining 10 changed images of a 66-op model takes <= 2 minutes here for
CPU-side delegates. Ten changed images are made by a planted defect (MobileNet v2 quant with one
CONV_2D's weights replaced, as tests/e2e/test_explain.py does), both runs on delegate=cpu; the ratio
printed is measured / 120 s. ``--gpu``: also EfficientNet-Lite0 delegate=gpu (lavapipe here) vs
cpu on 10 control images (nothing changes: the error curve only), for the figure in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))
from conftest import MODELS, VAL50  # noqa: E402
from test_explain import MNV2, PLANTED_OP, perturbed_copy  # noqa: E402

BUDGET_S = 120.0


def run(args: list[str], out: Path) -> None:
    cmd = [sys.executable, "-m", "evalharness", *VAL50, "loop.progress=false", *args, f"hydra.run.dir={out}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def timed_explain(a: Path, b: Path, *extra: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "evalharness.explain", str(a), str(b), *extra], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    print("  " + proc.stdout.splitlines()[0][:200])
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", action="store_true", help="also time delegate=gpu (EfficientNet-Lite0)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        copy = perturbed_copy(MODELS / f"{MNV2}.tflite", tmp / "perturbed.tflite", PLANTED_OP)
        run([f"model={MNV2}", "delegate=cpu"], tmp / "cpu")
        run([f"model={MNV2}", f"model.path={copy}", "delegate=cpu"], tmp / "perturbed")
        seconds = timed_explain(tmp / "cpu", tmp / "perturbed", "--max-changed", "10")
        print(
            f"explain, 10 changed + 10 control images, 66 ops, delegate=cpu: {seconds:.1f} s; "
            f"ratio to the {BUDGET_S:.0f} s target: {seconds / BUDGET_S:.2f} (load {os.getloadavg()[0]:.1f})"
        )
        if args.gpu:
            run(["model=efficientnet_lite0_fp32", "delegate=cpu"], tmp / "eff_cpu")
            run(["model=efficientnet_lite0_fp32", "delegate=gpu"], tmp / "eff_gpu")
            seconds = timed_explain(tmp / "eff_cpu", tmp / "eff_gpu", "--controls", "10")
            print(f"explain, 10 control images, 60 ops, delegate=gpu (lavapipe): {seconds:.1f} s")


if __name__ == "__main__":
    main()
