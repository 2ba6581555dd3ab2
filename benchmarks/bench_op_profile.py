"""Op profile acceptance figures on whole models (not a unit test; minutes on lavapipe):

    python benchmarks/bench_op_profile.py [--repeats 10] [--only cpu|gpu] [--threads 2]

MobileNet v2 quant on delegate=cpu (2 threads) and EfficientNet-Lite0 float32 on delegate=gpu
(Mesa lavapipe where no GPU exists): per-op medians summed against the invoke's median, placements
against the coverage record, per backend and per type. The CPU's figures come from LiteRT's own
profiler (the ops' events inside the invokes they are summed against); the GPU's from sub-model
timing, since the WebGPU accelerator does not implement profiling (the record says so).
The tests (tests/e2e/test_op_profile.py) check the same on fewer repeats and, on the GPU, on the
first 4 ops only.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from evalharness.report.views.op_profile_table import top_lines
from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.op_profile import profile_ops

MODELS = Path(__file__).resolve().parents[2] / "shared" / "assets" / "models"
CASES = {
    "cpu": ("mobilenet_v2_1.0_224_quant.tflite", {"name": "cpu"}),
    "gpu": ("efficientnet_lite0_fp32.tflite", {"name": "gpu", "use_gpu": True}),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--only", choices=sorted(CASES))
    parser.add_argument("--threads", type=int, default=2, help="delegate.num_threads (default 2)")
    args = parser.parse_args()
    for name, (model, delegate) in CASES.items():
        if args.only and name != args.only:
            continue
        path = str(MODELS / model)
        delegate = {**delegate, "num_threads": args.threads}
        plan = plan_delegate(delegate)
        start = time.perf_counter()
        whole = load_model(path, plan)
        rng = np.random.default_rng(0)
        inputs = [
            rng.integers(0, 256, i.shape).astype(i.dtype)
            if i.dtype == "uint8"
            else rng.random(i.shape, np.float32)
            for i in whole.inputs
        ]
        profile = profile_ops(
            path, lambda p, plan=plan: load_model(p, plan), whole, inputs, args.repeats, plan=plan
        )
        print(
            f"== {model} on delegate={delegate['name']}, {args.threads} thread(s) "
            f"({time.perf_counter() - start:.0f} s)"
        )
        print("\n".join(top_lines(profile, 5)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
