"""evalharness's loop running an ONNX model vs a plain ONNX Runtime loop over the same images, as a
ratio (not a unit test; the issue's target: >= 0.95 x the plain loop's throughput).

    python benchmarks/bench_onnx_loop.py [--images 50] [--repeats 3] [OVERRIDE ...]

Both sides run EfficientNet-Lite0 (``models/efficientnet_lite0_fp32_nchw.onnx``) on val50's images
with one intra-op thread and the same preprocessing (evalharness's own ``preprocess_file``, so the
work per image is the same): the evalharness side is a whole run (``python -m evalharness
model.path=X.onnx``: decode, preprocess, invoke, score, write predictions, hash the inputs), read
back as images/s of its loop; the plain side is ``decode + preprocess + session.run + argmax`` in a
Python loop, back to back. Printed: each side's best images/s and the ratio of each back-to-back pair
(median and range over ``--repeats`` pairs: a shared machine's load changes between pairs more than
within one), plus the invoke-only ratio (mean ``session.run`` ms of the plain loop over the mean
invoke ms the run recorded).
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
MODEL = "models/efficientnet_lite0_fp32_nchw.onnx"
ASSETS = REPO.parent / "shared" / "assets"  # --assets: a folder of the same layout elsewhere


def evalharness_run(assets: Path, images: int, extra: list[str]) -> tuple[float, float]:
    """(images/s of the run's loop, mean invoke ms) of one evalharness run."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "evalharness", f"model.path={assets / MODEL}",
               f"paths.data_dir={assets}", "dataset=imagenet_val50", f"task.num_images={images}",
               "model/preprocess=efficientnet",
               f"model.labels={REPO / 'datasets/sample/imagenet_classes.txt'}", "loop.progress=false",
               "loop.tensor_cache=false", f"hydra.run.dir={tmp}/run", *extra]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True, cwd=REPO)
        doc = json.loads((Path(tmp) / "run" / "metrics.json").read_text())
    return doc["throughput"]["images_per_s"], doc["latency_ms"]["inference"]["mean"]


def plain_loop(model: Path, paths: list[Path]) -> tuple[float, float]:
    """(images/s, mean session.run ms) of decode + preprocess + run + argmax, one after the other."""
    import numpy as np
    import onnxruntime as ort
    import yaml

    from evalharness.data.preprocess import InputSpec, preprocess_file, spec_from_config

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = 1, 1
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    spec = spec_from_config(yaml.safe_load((REPO / "conf/model/preprocess/efficientnet.yaml").read_text()))
    inp = InputSpec(224, 224, 3, "float32", 0.0, 0, "nchw")
    session.run(None, {name: preprocess_file(str(paths[0]), spec, inp)})  # warm-up, as the run's
    invoke = 0.0
    start = time.perf_counter()
    for path in paths:
        x = preprocess_file(str(path), spec, inp)
        t = time.perf_counter()
        (logits,) = session.run(None, {name: x})
        invoke += time.perf_counter() - t
        int(np.argmax(logits))
    wall = time.perf_counter() - start
    return len(paths) / wall, invoke * 1e3 / len(paths)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--assets", type=Path, default=ASSETS, help="models/ and imagenet/val50 (default ../shared/assets)"
    )
    ap.add_argument("overrides", nargs="*", help="more overrides of the evalharness run (loop.workers=0)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    assets = args.assets.resolve()
    paths = sorted((assets / "imagenet" / "val50").glob("*.JPEG"))[: args.images]
    ours, plain = [], []
    for _ in range(args.repeats):
        ours.append(evalharness_run(assets, len(paths), args.overrides))
        plain.append(plain_loop(assets / MODEL, paths))
    ratios = sorted(o[0] / p[0] for o, p in zip(ours, plain, strict=True))
    invoke_ratios = sorted(p[1] / o[1] for o, p in zip(ours, plain, strict=True))
    median = lambda v: v[len(v) // 2]  # noqa: E731
    print(f"{len(paths)} images, {args.repeats} back-to-back pairs, {os.cpu_count()} cores")
    print(f"evalharness run (ONNX Runtime): best {max(o[0] for o in ours):.1f} img/s, mean invoke "
          f"{min(o[1] for o in ours):.2f} ms at best")  # fmt: skip
    print(f"plain ONNX Runtime loop:        best {max(p[0] for p in plain):.1f} img/s, mean run "
          f"{min(p[1] for p in plain):.2f} ms at best")  # fmt: skip
    print(f"throughput ratio evalharness / plain, per pair: median {median(ratios):.3f} "
          f"(range {ratios[0]:.3f}-{ratios[-1]:.3f})")  # fmt: skip
    print(f"invoke ratio plain / evalharness, per pair:     median {median(invoke_ratios):.3f} "
          f"(range {invoke_ratios[0]:.3f}-{invoke_ratios[-1]:.3f})")  # fmt: skip

if __name__ == "__main__":
    main()
