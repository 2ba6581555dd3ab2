"""Throughput in interleaved rounds (not a unit test): bench_throughput.py's classification part.

    python benchmarks/bench_throughput.py --only classification [--images 1000] [--threads 2]
        [--rounds 5] [--baseline /path/to/another/checkout]

Each figure is measured by a process of its own, once per round, the figures of a round in an order
that rotates by one each round (as ``compare`` interleaves its candidates: the machine's drift
between minutes reaches every figure alike, and each round's ratios are paired observations):

- ``invoke``: pure invoke on pre-made tensors (set + invoke; img/s, and CPU ms per invoke, all threads);
- ``prepare``: input preparation alone (decode + crop + exact resize) on every core (CPU ms per image);
- ``naive``: the naive loop a user would write (Pillow decode, crop, bilinear resize; set, invoke, get);
- ``cold``: the default run (``python -m evalharness``, ``loop.shape=auto``, no tensor cache);
- ``warm``: the default run over the tensor cache (built once before the rounds);
- with ``--baseline``: ``cold`` and ``warm`` of another checkout (``PYTHONPATH`` = it), same rounds.

The CPU budget of a round is cores / (invoke + preparation CPU per image) of that round; the binding
limit is the lower of the budget and pure invoke. Each ratio is reported as the median of the rounds'
ratios and the 95 % interval of its geometric mean, Student's t on the per-round log ratios
(:func:`evalharness.stats.speedup.paired_block_speedup`, the interval ``compare`` prints); every
figure prints with the 1-minute load average read just before it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_shared import ASSETS, MODEL, REPO, naive_pillow, pure_invoke, run_app, timed_loop

OWN = ("invoke", "prepare", "naive")  # figures measured by a child of this script


def _paths(data: Path) -> list[str]:
    return sorted(str(p) for p in (data / "images").iterdir())


def _model_and_input(threads: int):
    from evalharness.data.preprocess import image_input_spec, set_exact_resize
    from evalharness.runtime import load_model, plan_delegate
    from evalharness.runtime.native_resize import shared

    set_exact_resize(shared())  # the tool's default, loop.resize=native
    model = load_model(
        str(ASSETS / "models" / f"{MODEL}.tflite"), plan_delegate({"name": "cpu", "num_threads": threads})
    )
    i = model.inputs[0]
    return model, image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), MODEL)


def figure(kind: str, data: Path, threads: int) -> dict:
    """One figure, in this process (model load and imports outside the timed part)."""
    from concurrent.futures import ThreadPoolExecutor

    from evalharness.data.preprocess import PreprocessSpec, preprocess_file

    paths, spec = _paths(data), PreprocessSpec()
    model, inp = _model_and_input(threads)
    if kind == "prepare":
        start, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            list(pool.map(lambda p: preprocess_file(p, spec, inp), paths))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        return {"ips": len(paths) / wall, "cpu_ms": cpu * 1000 / len(paths)}
    if kind == "invoke":
        tensors = [preprocess_file(p, spec, inp) for p in paths[:50]]
        model.set_inputs([tensors[0]])
        model.invoke()  # one warm-up invoke, not timed
        ips, cpu_ms = pure_invoke(model, tensors, len(paths))
        return {"ips": ips, "cpu_ms": cpu_ms}
    if kind == "naive":
        return {"ips": timed_loop(model, paths, lambda p: naive_pillow(p, inp.height, inp.width))}
    if kind == "invoke_lanes":  # lanes_of(threads) instances invoked at once, one Python thread each
        tensors = [preprocess_file(p, spec, inp) for p in paths[:50]]
        models = [model, *(_model_and_input(threads)[0] for _ in range(lanes_of(threads) - 1))]
        for m in models:
            m.set_inputs([tensors[0]])
            m.invoke()
        start, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(len(models)) as pool:
            share = len(paths) // len(models)
            list(pool.map(lambda m: pure_invoke(m, tensors, share), models))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        return {"ips": share * len(models) / wall, "cpu_ms": cpu * 1000 / (share * len(models))}
    raise ValueError(kind)


def lanes_of(threads: int) -> int:
    """Instances of the model the default loop may run side by side with ``threads`` each."""
    return max((os.cpu_count() or 1) // max(threads, 1), 1)


def _child(kind: str, data: Path, threads: int) -> dict:
    cmd = [sys.executable, __file__, "figure", kind, str(data), str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def rounds(data: Path, threads: int, count: int, baseline: Path | None, cache: Path) -> dict[str, list]:
    """{figure: [(value, load average before it), ...]} over ``count`` rotating rounds."""
    trees = {"": REPO, **({"@baseline": baseline} if baseline else {})}
    runs = [(f"{kind}{tag}", tree) for tag, tree in trees.items() for kind in ("cold", "warm")]
    lanes = lanes_of(threads) > 1
    if lanes:  # the default may run lanes: one instance pipelined (the default before) beside it
        runs.append(("cold_one", REPO))
    for tag, tree in trees.items():  # the warm runs' cache, one per checkout (keys may differ)
        run_app(
            data, threads, "loop.tensor_cache=true", f"paths.cache_dir={cache / (tag or 'this')}", tree=tree
        )
    names = [*OWN, *(["invoke_lanes"] if lanes else []), *(name for name, _ in runs)]
    found: dict[str, list] = {name: [] for name in names}
    for r in range(count):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            load = os.getloadavg()[0]
            if name in OWN or name == "invoke_lanes":
                value = _child(name, data, threads)
            else:
                tree = dict(runs)[name]
                tag = "@baseline" if name.endswith("@baseline") else ""
                cached = name.startswith("warm")
                extra = (
                    ("loop.tensor_cache=true", f"paths.cache_dir={cache / (tag or 'this')}")
                    if cached
                    else ("loop.tensor_cache=false",)
                ) + (("loop.shape=pipelined",) if name == "cold_one" else ())
                doc = run_app(data, threads, *extra, tree=tree)
                value = {"ips": doc["throughput"]["images_per_s"], "metrics": doc["metrics"]}
            found[name].append((value, load))
            print(f"round {r} {name:<15} {value.get('ips', 0):7.1f} img/s  load {load:.2f}", flush=True)
    return found


def _ratio(name: str, num: list[float], den: list[float]) -> str:
    from evalharness.stats.speedup import paired_block_speedup

    per_round = [a / b for a, b in zip(num, den, strict=True)]
    t = paired_block_speedup(num, den)
    interval = t["interval"]
    said = f"[{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "(too few rounds)"
    return (
        f"{name:<40} median {statistics.median(per_round):.3f}  geometric mean 95 % {said}  "
        f"rounds {', '.join(f'{v:.3f}' for v in per_round)}"
    )


def report(found: dict[str, list], threads: int) -> None:
    cores = os.cpu_count() or 1
    ips = {name: [v["ips"] for v, _ in values] for name, values in found.items()}
    budget = [
        cores * 1000 / (i["cpu_ms"] + p["cpu_ms"])
        for (i, _), (p, _) in zip(found["invoke"], found["prepare"], strict=True)
    ]
    # the interpreters' own ceiling: one instance, or the lanes' instances invoked at once
    lanes = [v for k, v in ips.items() if k == "invoke_lanes"]
    ceiling = [max([i, *x]) for i, *x in zip(ips["invoke"], *lanes, strict=True)]
    limit = [min(b, c) for b, c in zip(budget, ceiling, strict=True)]
    print(f"threads={threads} cores={cores} rounds={len(budget)} (figures: median [min, max] img/s; load)")
    rows = {**ips, "CPU budget": budget, "binding limit": limit}
    loads = {name: [load for _, load in values] for name, values in found.items()}
    for name, values in rows.items():
        at = loads.get(name)
        where = f"  load {min(at):.2f}-{max(at):.2f}" if at else ""
        print(f"{name:<15} {statistics.median(values):8.1f} [{min(values):.1f}, {max(values):.1f}]{where}")
    cpu = {k: statistics.median(v["cpu_ms"] for v, _ in found[k]) for k in ("invoke", "prepare")}
    print(f"CPU per image (median): invoke {cpu['invoke']:.2f} ms, preparation {cpu['prepare']:.2f} ms")
    print(_ratio("cold default / binding limit", ips["cold"], limit))
    print(_ratio("cold default / CPU budget", ips["cold"], budget))
    print(_ratio("cold default / naive Pillow loop", ips["cold"], ips["naive"]))
    print(_ratio("warm (tensor cache) / pure invoke", ips["warm"], ips["invoke"]))
    if "cold_one" in ips:
        print(_ratio("warm / pure invoke of the lanes", ips["warm"], ips["invoke_lanes"]))
        print(_ratio("cold default / one instance pipelined", ips["cold"], ips["cold_one"]))
        print(_ratio("one instance pipelined / binding limit", ips["cold_one"], limit))
    if "cold@baseline" in ips:
        print(_ratio("cold: this checkout / baseline", ips["cold"], ips["cold@baseline"]))
        print(_ratio("warm: this checkout / baseline", ips["warm"], ips["warm@baseline"]))
        print(_ratio("cold baseline / binding limit", ips["cold@baseline"], limit))
        print(_ratio("warm baseline / pure invoke", ips["warm@baseline"], ips["invoke"]))
    own = [v["metrics"] for name in ("cold", "warm") for v, _ in found[name]]
    print(f"metrics identical across this checkout's cold and warm runs: {all(m == own[0] for m in own)}")


def classification(n: int, threads: int, count: int, baseline: Path | None) -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from repeated_dataset import make_dataset

    with tempfile.TemporaryDirectory() as tmp:
        data = make_dataset(Path(tmp) / "data", n)
        report(rounds(data, threads, count, baseline, Path(tmp) / "cache"), threads)


if __name__ == "__main__" and sys.argv[1:2] == ["figure"]:
    sys.path.insert(0, str(Path(__file__).parent))
    kind, data, threads = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
    print(json.dumps(figure(kind, data, threads)))
