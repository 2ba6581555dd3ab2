"""Where the cold loop prepares its inputs: sequential, pipelined, phased, paired in one process.

    python benchmarks/bench_phased.py [--images 80] [--rounds 4] [--threads 2]

MobileNet v2 quant, val50's images cycled, exact preprocessing (LiteRT's resize kernel), one loop of
prepare -> set -> invoke -> get per shape and round, the shapes in an order that reverses each
round (ABBA...): sequential (prepare, then invoke), pipelined (one thread prepares 4 ahead during
the invokes), phased (a window prepared on one thread per core, then invoked with nothing else
running; ``loop.shape=phased``). Prints img/s per round and each shape ÷ sequential per round.
Lighter than bench_throughput.py (no processes, no scoring): for the loss between the shapes only.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evalharness.data.preprocess import PreprocessSpec, image_input_spec, preprocess_file, set_exact_resize
from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.native_resize import shared

ASSETS = Path(__file__).resolve().parents[2] / "shared" / "assets"
MODEL = "mobilenet_v2_1.0_224_quant"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=80)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    set_exact_resize(shared())
    model = load_model(
        str(ASSETS / "models" / f"{MODEL}.tflite"),
        plan_delegate({"name": "cpu", "num_threads": args.threads}),
    )
    i = model.inputs[0]
    inp = image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), MODEL)
    spec = PreprocessSpec()
    paths = sorted(str(p) for p in (ASSETS / "imagenet/val50").glob("*.JPEG"))
    work = [paths[k % len(paths)] for k in range(args.images)]
    cores = len(os.sched_getaffinity(0))

    def run(tensors) -> None:
        model.set_inputs([tensors])
        model.invoke()
        model.get_outputs()

    def prep(path):
        return preprocess_file(path, spec, inp)

    def sequential() -> None:
        for p in work:
            run(prep(p))

    def pipelined() -> None:
        with ThreadPoolExecutor(1) as pool:
            window = [pool.submit(prep, p) for p in work[:4]]
            for k in range(len(work)):
                tensors = window.pop(0).result()
                if k + 4 < len(work):
                    window.append(pool.submit(prep, work[k + 4]))
                run(tensors)

    def phased() -> None:
        size = max(4, cores)
        with ThreadPoolExecutor(cores) as pool:
            for k in range(0, len(work), size):
                for tensors in list(pool.map(prep, work[k : k + size])):
                    run(tensors)

    shapes = {"sequential": sequential, "pipelined": pipelined, "phased": phased}
    names = list(shapes)
    ips: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            shapes[name]()
            ips[name].append(len(work) / (time.perf_counter() - start))
    print(
        f"{args.images} images x {args.rounds} rounds, {args.threads} threads, {cores} cores, "
        f"load {os.getloadavg()}"
    )
    for name in names:
        print(f"{name:<10} " + " / ".join(f"{v:.1f}" for v in ips[name]) + " img/s")
    for name in names[1:]:
        ratios = [a / b for a, b in zip(ips[name], ips["sequential"], strict=True)]
        print(f"{name} / sequential per round: " + ", ".join(f"{x:.3f}" for x in ratios))


if __name__ == "__main__":
    main()
