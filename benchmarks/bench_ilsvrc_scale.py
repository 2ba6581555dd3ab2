"""A whole run at ILSVRC size: throughput against the CPU limit, peak RSS, then ``report diff`` and
``report sweep`` of two such runs (not a unit test).

    nice -n 10 python benchmarks/bench_ilsvrc_scale.py [--sizes 1000,10000,50000] [--rounds 2]
        [--threads 1] [--model mobilenet_v1_0.25_128_quant] [--folder DIR] [--report-rounds 3]
        [--report-only]

val50 linked under ``--sizes`` fresh names (``img000000.JPEG`` …, symlinks, as bench_throughput.py
makes them) with a csv ground truth naming each link's class: the largest size is ILSVRC-2012
validation's 50,000. Each run is ``python -m evalharness`` in its own process (tensor cache off,
default loop); ``--rounds`` rounds, each size once a round, the order reversed every other round.
Around every run (just before and just after, their mean) the CPU limit is measured here as
bench_throughput.py defines it: cores / (CPU ms of one ``invoke()`` on pre-made tensors + CPU ms of
one input preparation, decode + crop + exact resize, on all cores) per image, the bound of any cold
run. Printed per run: the loop's img/s (metrics.json), its ratio to that limit, the CPU share (the
limit's own work, invoke + preparation of every image, over the whole process's CPU time: what a
loaded machine does not move, and the most img/s / limit can be on a quiet one), the loop's peak
RSS as metrics.json records it and the whole process's peak (``/usr/bin/time``: start-up, listing,
loop, scoring and analysis), the wall time. Then, per size, ``report diff`` and
``report sweep`` of the two rounds' runs (``--report-rounds`` interleaved rounds, medians;
``--report-only`` times them on the runs already in ``--folder``): the whole command (its own
process, wall and peak RSS) and the command's work in this process (read, build, render:
bench_agreement.py's timers), each per image as a multiple of the smallest size's. ``uptime``'s
load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO.parent / "shared" / "assets"
sys.path.insert(0, str(REPO / "tests"))
from bench_agreement import time_diff, time_sweep  # noqa: E402
from bench_shared import load, pure_invoke  # noqa: E402
from repeated_dataset import make_dataset, overrides  # noqa: E402

# MobileNet v1 0.25/128 quant: the fastest classifier of the shared models (~0.5 ms an invoke on one
# thread here), so 50,000 images take about a minute on the shared 2 cores and the loop around the
# interpreter, not the model, is what the run measures (preparation is more than half a sample)
MODEL = "mobilenet_v1_0.25_128_quant"


@dataclass
class Limit:
    """The CPU limit of a cold run on this machine, measured again on demand (the machine drifts)."""

    model: object
    tensors: list
    paths: list[str]
    prepare: object

    def invoke_cpu_ms(self, n: int = 400) -> float:
        return pure_invoke(self.model, self.tensors, n)[1]

    def prepare_cpu_ms(self, n: int = 200) -> float:
        cpu = time.process_time()
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            list(pool.map(self.prepare, self.paths[:n]))
        return (time.process_time() - cpu) * 1000 / n

    def images_per_s(self) -> tuple[float, float, float]:
        """(img/s at most, invoke CPU ms, preparation CPU ms)."""
        invoke, prepare = self.invoke_cpu_ms(), self.prepare_cpu_ms()
        return (os.cpu_count() or 1) * 1000 / (invoke + prepare), invoke, prepare


def measured_limit(model_name: str, threads: int, paths: list[str]) -> Limit:
    from evalharness.data.preprocess import (
        PreprocessSpec,
        image_input_spec,
        preprocess_file,
        set_exact_resize,
    )
    from evalharness.runtime import load_model, plan_delegate
    from evalharness.runtime.native_resize import shared

    set_exact_resize(shared())  # the tool's default, loop.resize=native
    path = str(ASSETS / "models" / f"{model_name}.tflite")
    model = load_model(path, plan_delegate({"name": "cpu", "num_threads": threads}))
    i = model.inputs[0]
    inp = image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), model_name)
    spec = PreprocessSpec()

    def prepare(p: str):
        return preprocess_file(p, spec, inp)

    return Limit(model, [prepare(p) for p in paths[:50]], paths, prepare)


def run_process(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall s, the process's peak RSS MiB, its CPU s) of one command in its own process (``env``:
    its environment, None: this one's). The peak is taken by ``/usr/bin/time``, a small parent: Linux
    carries a parent's RSS across fork + exec into the child's ``ru_maxrss``, so measured from this
    process it would be at least this process's."""
    start = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "maxrss_kb=%M cpu_s=%U+%S", *command],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False, env=env,
    )  # fmt: skip
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(command)}\n{proc.stderr[-3000:]}")
    rss, cpu = proc.stderr.strip().splitlines()[-1].split()
    user, system = cpu.removeprefix("cpu_s=").split("+")
    return wall, int(rss.removeprefix("maxrss_kb=")) / 1024, float(user) + float(system)


def run_evalharness(arguments: list[str], run_dir: Path) -> dict[str, float]:
    """``python -m evalharness`` with ``arguments`` (tensor cache off) in its own process: the loop's
    img/s and peak RSS MiB as metrics.json records them, the whole process's peak RSS, wall and CPU s."""
    command = [
        sys.executable, "-m", "evalharness", *arguments, "loop.progress=false", "loop.tensor_cache=false",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    wall, peak, cpu = run_process(command)
    doc = json.loads((run_dir / "metrics.json").read_text())
    return {
        "ips": doc["throughput"]["images_per_s"],
        "loop_rss": doc["memory_mb"]["peak_rss"],
        "process_rss": peak,
        "wall": wall,
        "cpu": cpu,
    }


def run_app(model: str, data: Path, threads: int, run_dir: Path) -> dict[str, float]:
    models = f"paths.models_dir={ASSETS / 'models'}"
    return run_evalharness(
        [f"model={model}", models, *overrides(data), f"delegate.num_threads={threads}"], run_dir
    )


def report_commands(a: Path, b: Path, sweep_dir: Path) -> dict[str, tuple[float, float]]:
    """(wall s, peak RSS MiB) of ``report diff A B`` and ``report sweep`` of the two, each its own process."""
    evalharness = [sys.executable, "-m", "evalharness", "report"]
    diff = run_process([*evalharness, "diff", str(a), str(b)])[:2]
    sweep = run_process([*evalharness, "sweep", str(sweep_dir), "--out", str(sweep_dir / "report")])[:2]
    return {"diff": diff, "sweep": sweep}


def print_run(r: int, n: int, f: dict) -> None:
    print(
        f"round {r} {n:>6} images: {f['ips']:7.1f} img/s = {f['ips'] / f['limit']:.3f} x the CPU limit "
        f"{f['limit']:.1f} (invoke {f['cpu_ms'][0]:.3f} + preparation {f['cpu_ms'][1]:.3f} CPU ms; that work "
        f"is {f['cpu_share']:.3f} of the process's {f['cpu']:.1f} CPU s); peak RSS loop "
        f"{f['loop_rss']:.1f} / process {f['process_rss']:.1f} MiB; wall {f['wall']:.1f} s; load {f['load']}",
        flush=True,
    )


def print_table(results: dict[int, list[dict]]) -> None:
    """Medians per size; RSS as a multiple of the smallest size's."""
    small = min(results)
    base = {k: statistics.median(f[k] for f in results[small]) for k in ("loop_rss", "process_rss")}
    print("\n images   img/s  x limit CPU share  loop RSS      x  process      x")
    for n, runs in results.items():
        med = {k: statistics.median(f[k] for f in runs) for k in ("ips", "loop_rss", "process_rss")}
        ratio = statistics.median(f["ips"] / f["limit"] for f in runs)
        share = statistics.median(f["cpu_share"] for f in runs)
        loop_x, process_x = med["loop_rss"] / base["loop_rss"], med["process_rss"] / base["process_rss"]
        print(
            f"{n:>7} {med['ips']:7.1f} {ratio:8.3f} {share:9.3f} {med['loop_rss']:9.1f} {loop_x:6.3f} "
            f"{med['process_rss']:8.1f} {process_x:6.3f}"
        )


def report_times(folder: Path, sizes: list[int], rounds: int) -> None:
    """``report diff`` and ``report sweep`` of each size's first two runs: whole commands, and their
    work in this process; ``rounds`` interleaved rounds (the sizes' order reversed every other one),
    medians; per image as a multiple of the smallest size's."""
    timed: dict[int, list[tuple[float, ...]]] = {n: [] for n in sizes}
    for r in range(rounds):
        for n in sizes if r % 2 == 0 else sizes[::-1]:
            a, b = sorted((folder / f"sweep{n}").glob("[0-9]_round-*"))[:2]
            whole = report_commands(a, b, folder / f"sweep{n}")
            inner = (time_diff(str(a), str(b)), time_sweep([str(a), str(b)]))
            timed[n].append(
                (whole["diff"][0], whole["diff"][1], whole["sweep"][0], whole["sweep"][1], *inner)
            )
    print(
        f"\nreport diff / sweep of two runs, {rounds} rounds (medians); per image x {sizes[0]:,}'s; "
        f"load {load()}"
    )
    print(" images  diff s    RSS  sweep s    RSS  in-process diff s  sweep s")
    first = None
    for n in sizes:
        diff, diff_rss, sweep, sweep_rss, inner_diff, inner_sweep = (
            statistics.median(t[i] for t in timed[n]) for i in range(6)
        )
        per_image = (diff / n, sweep / n, inner_diff / n, inner_sweep / n)
        first = first or per_image
        ratios = ", ".join(f"{v / f:.2f}" for v, f in zip(per_image, first, strict=True))
        print(
            f"{n:>7} {diff:7.2f} {diff_rss:6.0f} {sweep:8.2f} {sweep_rss:6.0f} {inner_diff:18.2f} "
            f"{inner_sweep:8.2f}  per image x: {ratios}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="delegate.num_threads (the preset's 1)")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--folder", default=None, help="where datasets and runs go (default: a temp dir)")
    parser.add_argument(
        "--report-rounds", type=int, default=3, help="interleaved rounds of report diff/sweep"
    )
    parser.add_argument("--report-only", action="store_true", help="time the reports of the runs in --folder")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    folder = Path(args.folder or tempfile.mkdtemp(prefix="bench_ilsvrc_"))
    print(f"load average before: {load()}; {os.cpu_count()} CPUs; {args.model}, threads={args.threads}")
    if args.report_only:
        report_times(folder, sizes, args.report_rounds)
        return
    data = {n: make_dataset(folder / f"data{n}", n) for n in sizes}
    paths = sorted(str(p) for p in (data[sizes[0]] / "images").iterdir())
    limit = measured_limit(args.model, args.threads, paths)
    results: dict[int, list[dict]] = {n: [] for n in sizes}
    for r in range(args.rounds):
        for n in sizes if r % 2 == 0 else sizes[::-1]:
            before = limit.images_per_s()
            figures = run_app(args.model, data[n], args.threads, folder / f"sweep{n}" / f"{r}_round-{r}")
            after = limit.images_per_s()
            figures["limit"] = (before[0] + after[0]) / 2
            figures["cpu_ms"] = ((before[1] + after[1]) / 2, (before[2] + after[2]) / 2)
            figures["load"] = load()
            # the limit's CPU per image over the whole process's (start-up, listing, scoring included):
            # on a quiet machine img/s / limit cannot pass it; a loaded one lowers img/s, not this
            figures["cpu_share"] = sum(figures["cpu_ms"]) * n / 1000 / figures["cpu"]
            results[n].append(figures)
            print_run(r, n, figures)
    print_table(results)
    if args.rounds >= 2:
        report_times(folder, sizes, args.report_rounds)
    print(f"load average after: {load()}")
    if not args.folder:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
