"""The CPU of each step of a sample in the run loop, in one process (not a unit test).

    nice -n 10 python benchmarks/bench_loop_steps.py [--images 5000] [--model mobilenet_v1_0.25_128_quant]
        [--out FILE] [-- more overrides]

Runs ``evalharness`` in this process on val50 linked under ``--images`` names (loop.shape=sequential:
everything on the one thread, tensor cache off) with ``time.thread_time`` around each step the loop
calls: the task's ``prepare`` (decode, crop, resize: the preparation of the CPU limit), ``invoke``,
setting and getting tensors, the input identity hashes, the output checks, the classification
record, the scorer, the predictions line. Prints each step's CPU µs per image, less the wrapper's
own measured cost per call, and the rest of the loop thread's CPU, the model's load aside (the
loop's glue: generators, timers, the scoring blocks, the sample list). Each figure is CPU time,
not wall, so another session's load moves it much less; compare two checkouts by running this
file with each on ``PYTHONPATH`` in alternation (docs/benchmarks.md, *A whole run at ILSVRC size*).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from repeated_dataset import ASSETS, make_dataset, overrides  # noqa: E402

STEPS = (  # (label, module, owner attribute or None for a module function, function name)
    ("prepare", "evalharness.tasks.imagenet.live", "ImageNetTask", "prepare"),
    ("invoke", "evalharness.runtime.litert", "InterpreterModel", "invoke"),
    ("set_inputs", "evalharness.runtime.litert", "InterpreterModel", "set_inputs"),
    ("get_outputs", "evalharness.runtime.litert", "InterpreterModel", "get_outputs"),
    ("input hashes", "evalharness.loop.input_identity", "InputIdentity", "of"),
    ("output checks", "evalharness.loop.checks", "OutputChecks", "add_outputs"),
    ("input checks", "evalharness.loop.checks", "OutputChecks", "add_inputs"),
    ("record", "evalharness.tasks.imagenet.live", "TopKEvaluator", "record"),
    ("scorer", "evalharness.tasks.imagenet.definition", "TopKScorer", "add"),
    ("predictions line", "evalharness.rundir.files", "RunWriter", "append"),
)
spent: Counter[str] = Counter()
calls: Counter[str] = Counter()


def timed(function: Callable[..., Any], label: str) -> Callable[..., Any]:
    clock = time.thread_time

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += clock() - start
            calls[label] += 1

    return wrapper


def instrument() -> float:
    """Wrap every step and the loop; the wrapper's own CPU seconds per call."""
    import importlib

    from evalharness import runtime
    from evalharness.loop import engine

    for label, module, owner, name in STEPS:
        holder = getattr(importlib.import_module(module), owner)
        setattr(holder, name, timed(getattr(holder, name), label))
    engine.run_loop = timed(engine.run_loop, "loop")  # execute.py imports both when the run starts
    runtime.load_model = timed(runtime.load_model, "model load")
    noop = timed(lambda: None, "calibration")
    for _ in range(20000):
        noop()
    return spent.pop("calibration") / calls.pop("calibration")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--model", default="mobilenet_v1_0.25_128_quant")
    parser.add_argument("--out", help="also write the table here")
    parser.add_argument("extra", nargs="*", help="more overrides of the run")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="loop_steps_"))
    data = make_dataset(folder / "data", args.images)
    cost = instrument()
    sys.argv = [
        "evalharness", f"model={args.model}", f"paths.models_dir={ASSETS / 'models'}", *overrides(data),
        "delegate.num_threads=1", "loop.progress=false", "loop.tensor_cache=false", "loop.shape=sequential",
        f"hydra.run.dir={folder / 'run'}", *args.extra,
    ]  # fmt: skip
    from evalharness.__main__ import main as evalharness

    with contextlib.suppress(SystemExit):
        evalharness()
    n = calls["prepare"]
    cpu = time.process_time()
    lines = [f"{n} images; wrapper {cost * 1e6:.2f} µs a call (subtracted); process CPU {cpu:.2f} s"]
    for label, *_ in STEPS:
        lines.append(f"{label:18s} {(spent[label] - cost * calls[label]) / n * 1e6:8.1f} µs an image")
    loop = spent["loop"] - spent["model load"]
    rest = loop - sum(spent[label] for label, *_ in STEPS)
    own = loop - spent["prepare"] - spent["invoke"]
    lines.append(f"{'rest of the loop':18s} {rest / n * 1e6:8.1f} µs an image")
    lines.append(
        f"loop thread (model load aside) {loop / n * 1e6:.1f} µs an image; outside prepare + invoke "
        f"{own / n * 1e6:.1f} = {own / (spent['prepare'] + spent['invoke']):.3f} x their CPU"
    )
    text = "\n".join(lines)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text, flush=True)  # stdout: the run silenced fd 2 on its way out
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
