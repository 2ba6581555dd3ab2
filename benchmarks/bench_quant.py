"""int16x8 against int8 on the CPU, measured in one run: 16-bit activations run on TFLite's
reference kernels, so their latency is a multiple of int8's (TFLite's model-optimization guide warns
of it). Prints the p50 latency of both variants of EfficientNet-Lite0 on val50 and their ratio.

    python benchmarks/bench_quant.py [--images 50]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "shared" / "assets"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "sweep"
        cmd = [
            sys.executable, "-m", "evalharness", "-m", "quant=int8,int16x8", "model=efficientnet_lite0_fp32",
            f"paths.models_dir={ASSETS / 'models'}", f"paths.data_dir={ASSETS}", "dataset=imagenet_val50",
            f"task.num_images={args.images}", f"paths.cache_dir={tmp}/cache", f"hydra.sweep.dir={sweep}",
            "loop.progress=false", "delegate=cpu",
        ]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        p50 = {}
        for path in sweep.glob("*/metrics.json"):
            doc = json.loads(path.read_text())
            p50[doc["provenance"]["model"]["quant"]["name"]] = doc["latency_ms"]["inference"]["p50"]
    print(f"int8 p50 {p50['int8']:.2f} ms, int16x8 p50 {p50['int16x8']:.2f} ms: "
          f"int16x8 / int8 = {p50['int16x8'] / p50['int8']:.1f} x")  # fmt: skip


if __name__ == "__main__":
    main()
