"""The CPU of each step of a sample in the run loop, in one process (not a unit test).

    nice -n 10 python benchmarks/bench_loop_steps.py [--images 5000] [--model mobilenet_v1_0.25_128_quant]
        [--threads 1] [--warm] [--no-invoke] [--out FILE] [-- more overrides]

Runs ``evalharness`` in this process on val50 linked under ``--images`` names (loop.shape=sequential:
everything on the one thread, tensor cache off) with ``time.thread_time`` around each step the loop
calls: the task's ``prepare`` (decode, crop, resize: the preparation of the CPU limit), ``invoke``,
setting and getting tensors, the input identity hashes, the output checks, the classification
record, the scorer, the predictions line. Prints each step's CPU µs per image, less the wrapper's
own measured cost per call, and the rest of the loop thread's CPU, the model's load aside (the
loop's glue: generators, timers, the scoring blocks, the sample list). Each figure is CPU time,
not wall, so another session's load moves it much less; compare two checkouts by running this
file with each on ``PYTHONPATH`` in alternation (docs/benchmarks.md, *A whole run at ILSVRC size*).

``--warm``: a tensor-cache run (the cache filled first by another process); ``prepare`` is then the
cached read (``cache read``: the verified copy), and the pure invoke of the same model on the cached
tensors is measured after it, in process CPU. ``invoke`` is always process CPU (with
``--threads`` > 1 the interpreter's own threads work inside it); ``other threads`` is the process
CPU outside invoke that is not the loop thread's (the interpreter's workers still spinning after an
invoke); the collector's passes inside the loop are listed too. ``--no-invoke``: invoke() does
nothing, so the loop's own CPU is measured without the caches an invoke sweeps (docs/benchmarks.md,
*Performance V*).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import subprocess
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
    ("kept hashes", "evalharness.loop.input_identity", "InputIdentity", "kept"),  # the cache's, read
    ("output checks", "evalharness.loop.checks", "OutputChecks", "add_outputs"),
    ("input checks", "evalharness.loop.checks", "OutputChecks", "add_inputs"),
    ("record", "evalharness.tasks.imagenet.live", "TopKEvaluator", "record"),
    ("scorer", "evalharness.tasks.imagenet.definition", "TopKScorer", "add"),
    ("predictions line", "evalharness.rundir.files", "RunWriter", "append"),
    ("cache read", "evalharness.data.tensor_cache", "TensorCache", "get"),
)
# with --warm the cached task's prepare is the step (the ImageNet task's runs only on a miss)
WARM_STEPS = (
    ("prepare", "evalharness.data.tensor_cache", "CachedTask", "prepare"),
    ("bind", "evalharness.data.tensor_cache", "CachedTask", "bind"),  # the cache key: before the loop
)
spent: Counter[str] = Counter()  # CPU of the calling thread
spent_all: Counter[str] = Counter()  # CPU of the whole process meanwhile (the interpreter's threads too)
calls: Counter[str] = Counter()


def timed(function: Callable[..., Any], label: str) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start, start_all = time.thread_time(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += time.thread_time() - start
            spent_all[label] += time.process_time() - start_all
            calls[label] += 1

    return wrapper


def _gc_timer(phase: str, info: dict[str, Any]) -> None:
    """The cyclic collector's CPU (its passes run inside whatever step allocated last)."""
    if phase == "start":
        _gc_started[0] = time.thread_time()
    elif _in_loop[0]:
        spent[f"gc gen{info['generation']}"] += time.thread_time() - _gc_started[0]
        calls[f"gc gen{info['generation']}"] += 1


_gc_started = [0.0]
_in_loop = [False]


def _flagged(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with :data:`_in_loop` set while it runs (the collector's passes inside the loop)."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _in_loop[0] = True
        try:
            return function(*args, **kwargs)
        finally:
            _in_loop[0] = False

    return wrapper


def instrument(warm: bool) -> float:
    """Wrap every step and the loop; the wrapper's own CPU seconds per call."""
    import gc
    import importlib

    gc.callbacks.append(_gc_timer)

    from evalharness import runtime
    from evalharness.loop import engine

    for label, module, owner, name in (*STEPS, *(WARM_STEPS if warm else ())):
        holder = getattr(importlib.import_module(module), owner)
        if hasattr(holder, name):  # an older checkout may lack a step
            setattr(holder, name, timed(getattr(holder, name), label))
    engine.run_loop = timed(_flagged(engine.run_loop), "loop")  # execute.py imports both when the run starts
    runtime.load_model = timed(runtime.load_model, "model load")
    noop = timed(lambda: None, "calibration")
    for _ in range(20000):
        noop()
    return spent.pop("calibration") / calls.pop("calibration")


def pure_invoke(model: str, threads: int, tensors: Any, n: int) -> float:
    """Process CPU seconds per invoke of the same model on the given tensors, nothing else between."""
    import numpy as np

    from evalharness.data.preprocess import set_exact_resize  # noqa: F401  (the run's imports)
    from evalharness.runtime import load_model, plan_delegate

    loaded = load_model(
        str(ASSETS / "models" / f"{model}.tflite"), plan_delegate({"name": "cpu", "num_threads": threads})
    )
    tensors = [np.array(t) for t in tensors[:50]]  # in memory, as throughput_rounds.py's pure invoke
    loaded.set_inputs([tensors[0]])
    loaded.invoke()
    cpu = time.process_time()
    for k in range(n):
        loaded.set_inputs([tensors[k % len(tensors)]])
        loaded.invoke()
    return (time.process_time() - cpu) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--model", default="mobilenet_v1_0.25_128_quant")
    parser.add_argument("--threads", type=int, default=1, help="delegate.num_threads")
    parser.add_argument("--warm", action="store_true", help="a tensor-cache run, the cache filled first")
    parser.add_argument(
        "--no-invoke",
        action="store_true",
        help="invoke() does nothing: the loop's own CPU alone, uncontended",
    )
    parser.add_argument("--out", help="also write the table here")
    parser.add_argument("extra", nargs="*", help="more overrides of the run")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="loop_steps_"))
    data = make_dataset(folder / "data", args.images)
    cache = (
        ("loop.tensor_cache=true", f"paths.cache_dir={folder / 'cache'}")
        if args.warm
        else ("loop.tensor_cache=false",)
    )
    argv = [
        f"model={args.model}", f"paths.models_dir={ASSETS / 'models'}", *overrides(data),
        f"delegate.num_threads={args.threads}", "loop.progress=false", *cache, "loop.shape=sequential",
        *args.extra,
    ]  # fmt: skip
    if args.warm:  # fill the cache in another process: this one measures a warm run only
        fill = [sys.executable, "-m", "evalharness", *argv, f"hydra.run.dir={folder / 'fill'}"]
        subprocess.run(fill, check=True, capture_output=True)
    if args.no_invoke:
        from evalharness.runtime import litert

        litert.InterpreterModel.invoke = lambda self: None  # type: ignore[method-assign]
        argv.append("loop.allow_constant_outputs=true")
    cost = instrument(args.warm)
    sys.argv = ["evalharness", *argv, f"hydra.run.dir={folder / 'run'}"]
    from evalharness.__main__ import main as evalharness

    with contextlib.suppress(SystemExit):
        evalharness()
    n = calls["prepare"]
    cpu = time.process_time()
    lines = [f"{n} images; wrapper {cost * 1e6:.2f} µs a call (subtracted); process CPU {cpu:.2f} s"]
    per = {label: (spent[label] - cost * calls[label]) / n for label, *_ in STEPS}
    per["invoke"] = spent_all["invoke"] / n  # the interpreter's threads work inside it
    for label, *_ in STEPS:
        if calls[label]:
            lines.append(f"{label:18s} {per[label] * 1e6:8.1f} µs an image")
    # run_loop less the model's load and the cache key's manifest (bind), both before the samples
    loop_thread = (spent["loop"] - spent["model load"] - spent["bind"]) / n
    loop = (spent_all["loop"] - spent_all["model load"] - spent_all["bind"]) / n
    invoke_thread = spent["invoke"] / n
    # the loop thread outside the steps; the other threads' CPU outside invoke (its workers' spinning)
    rest = loop_thread - invoke_thread - sum(v for k, v in per.items() if k not in ("invoke", "cache read"))
    others = loop - loop_thread - (per["invoke"] - invoke_thread)
    lines.append(f"{'rest of the loop':18s} {rest * 1e6:8.1f} µs an image (its thread)")
    for g in range(3):
        gc_us, passes = spent[f"gc gen{g}"] / n * 1e6, calls[f"gc gen{g}"]
        lines.append(f"{f'(gc gen{g})':18s} {gc_us:8.1f} µs an image, {passes} passes in the loop")
    lines.append(f"{'other threads':18s} {others * 1e6:8.1f} µs an image (outside invoke)")
    own = loop - per["prepare"] - per["invoke"]
    lines.append(
        f"loop process CPU (model load aside) {loop * 1e6:.1f} µs an image; outside prepare + invoke "
        f"{own * 1e6:.1f} = {own / (per['prepare'] + per['invoke']):.3f} x their CPU"
    )
    if args.warm:
        import numpy as np

        (tensors_file,) = (folder / "cache").glob("*/tensors.npy")
        pure = pure_invoke(args.model, args.threads, np.load(tensors_file, mmap_mode="r"), n)
        lines.append(
            f"pure invoke {pure * 1e6:.1f} µs an image (process CPU, same tensors); the warm loop "
            f"{loop * 1e6:.1f} = {pure / loop:.3f} x CPU-bound pure invoke; its loop thread outside "
            f"invoke {(loop_thread - invoke_thread) * 1e6:.1f}"
        )
    text = "\n".join(lines)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text, flush=True)  # stdout: the run silenced fd 2 on its way out
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
