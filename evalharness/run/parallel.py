"""``loop.parallel``: one run as P processes × T interpreter threads over P shards, merged exactly.

On a machine with many cores one interpreter rarely scales to all of them (XNNPACK's threads wait
on each other between ops, and input preparation needs cores too); several interpreters over
shards of the sample list can. ``loop.parallel=PxT`` runs P child processes (``python -m
evalharness`` again, with this run's overrides, ``dataset.shard.index=i``,
``dataset.shard.count=P``, ``delegate.num_threads=T``), each into ``parallel/shard_i/`` of this run,
and merges them into this run's directory with ``report merge``'s own code: the metrics are the
task's scorer over every record, so they equal an unsharded run's.

``auto`` chooses among P × T = the cores this process may use (``os.sched_getaffinity``): on 2
cores 1×2 and 2×1. Each candidate runs P interpreters of T threads invoking concurrently (one
Python thread each; ``invoke`` releases the GIL) on a seeded input for a short window, in rounds
whose order reverses each time (ABBA…) so a machine's drift favours none; the best invoke
throughput wins. Input preparation is not part of that measure (it is the same work in every
candidate); the record (``provenance.parallel``) says so and keeps every candidate's figures. The
calibration runs only where it pays for itself (:mod:`evalharness.run.parallel_choice`: at most 5 %
of the run's length, estimated from the image count and a first measured invoke), shortened or
skipped for the split chosen without measuring otherwise (``calibration_plan`` says which and why).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import shutil
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core import interrupts as children
from evalharness.core.cores import available_cores
from evalharness.core.documents import RunDocument
from evalharness.core.errors import ConfigError, RunStopped
from evalharness.core.interrupts import Interrupted
from evalharness.core.override_grammar import names_any
from evalharness.report.runs import ReportError
from evalharness.settings.child_processes import AUTO, parse_parallel
from evalharness.settings.groups import RunSettings

if TYPE_CHECKING:  # for the types only
    from evalharness.core.tensors import TensorInfo
    from evalharness.runtime import DelegatePlan
from evalharness.run.parallel_choice import TIMED_INVOKES, candidates, paper_split, plan_calibration
from evalharness.run.start_up import child_failed
from evalharness.rundir.document import has_document, holds_run
from evalharness.rundir.files import METRICS_FILE, PREDICTIONS_FILE, RESULTS_FILE, read_predictions
from evalharness.rundir.reader import load_run

# Overrides a shard process sets itself.
# (loop.resume / loop.overwrite pass through: an interrupted parallel run resumes shard by shard.)
_OWN_KEYS = (
    "loop.parallel", "dataset.shard", "delegate.num_threads", "hydra.run.dir", "hydra.sweep.dir",
    "loop.progress", "loop.lanes",
)  # fmt: skip
SHARDS_DIR = "parallel"
WINDOW_S, ROUNDS = 0.5, 2


def _throughput(models: list[Any], window: float) -> float:
    """Invokes per second of ``models`` invoked concurrently, one Python thread each."""
    counts = [0] * len(models)
    stop = time.perf_counter() + window

    def loop(k: int) -> None:
        while time.perf_counter() < stop:
            models[k].invoke()
            counts[k] += 1

    start = time.perf_counter()
    threads = [threading.Thread(target=loop, args=(k,)) for k in range(len(models))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def _loaded(model_path: str, plan: DelegatePlan, runtime: str, threads: int) -> Any:
    """A model of ``threads`` threads holding a seeded input, invoked once."""
    from evalharness.runtime import load_model

    model = load_model(model_path, dataclasses.replace(plan, num_threads=threads), runtime)
    rng = np.random.default_rng(0)
    model.set_inputs([_seeded(rng, info) for info in model.inputs])
    model.invoke()
    return model


def calibrate(
    model_path: str,
    plan: DelegatePlan,
    runtime: str,
    cores: int,
    window_s: float = WINDOW_S,
    first: Any = None,
) -> dict[str, Any]:
    """Each candidate's invoke throughput, ABBA rounds of ``window_s``; the best one chosen.
    ``first``: an interpreter of the paper split's threads already loaded (:func:`first_sample_cost`),
    the first of that split's, not loaded again."""
    options = candidates(cores)

    def models(p: int, t: int) -> list[Any]:
        reuse = [first] if first is not None and (p, t) == paper_split(cores) else []
        return reuse + [_loaded(model_path, plan, runtime, t) for _ in range(p - len(reuse))]

    loaded = {(p, t): models(p, t) for p, t in options}
    figures: dict[str, list[float]] = {f"{p}x{t}": [] for p, t in options}
    for r in range(ROUNDS):
        for p, t in options if r % 2 == 0 else reversed(options):
            figures[f"{p}x{t}"].append(_throughput(loaded[(p, t)], window_s))
    best = max(options, key=lambda c: float(np.mean(figures[f"{c[0]}x{c[1]}"])))
    return {
        "choice": best,
        "invokes_per_s": figures,
        "source": (
            f"auto: invoke throughput of each processes x threads split of {cores} cores, "
            f"{ROUNDS} rounds of {window_s} s in alternating order (input preparation not included)"
        ),
    }


def first_sample_cost(
    model_path: str, plan: DelegatePlan, runtime: str, threads: int
) -> tuple[float, float, Any]:
    """(load seconds, invoke seconds, the interpreter) of one interpreter of ``threads`` threads: the
    load, then the median of :data:`TIMED_INVOKES` invokes on a seeded input after an untimed one."""
    start = time.perf_counter()
    model = _loaded(model_path, plan, runtime, threads)
    load_s = time.perf_counter() - start  # the first, untimed invoke included: what calibrating pays too
    took = []
    for _ in range(TIMED_INVOKES):
        start = time.perf_counter()
        model.invoke()
        took.append(time.perf_counter() - start)
    return load_s, float(np.median(took)), model


def auto_split(settings: RunSettings, cores: int) -> tuple[tuple[int, int], str, dict[str, Any]]:
    """``loop.parallel=auto``: (split, source, record fields): calibrated where it pays for itself
    (:func:`evalharness.run.parallel_choice.plan_calibration`), else the paper split."""
    path, plan, runtime = settings.model.path, settings.delegate_plan, settings.runtime.name
    load_s, invoke_s, first = first_sample_cost(path, plan, runtime, paper_split(cores)[1])
    # a container was listed already (_run_shards): its count is read from the indexes kept then
    chosen = plan_calibration(len(settings.live_task().samples), invoke_s, load_s, cores, WINDOW_S, ROUNDS)
    record: dict[str, Any] = {"calibration_plan": chosen.record()}
    if not chosen.window_s:
        return chosen.split, f"auto: {chosen.reason}", record
    cal = calibrate(path, plan, runtime, cores, chosen.window_s, first)  # the loaded one serves again
    return cal.pop("choice"), cal.pop("source"), record | {"calibration": cal}


def _seeded(rng: np.random.Generator, info: TensorInfo) -> np.ndarray:
    if np.issubdtype(np.dtype(info.dtype), np.integer):
        limits = np.iinfo(info.dtype)
        return rng.integers(limits.min, int(limits.max) + 1, info.shape).astype(info.dtype)
    return rng.random(info.shape, dtype=np.float32).astype(info.dtype)


def shard_overrides(
    overrides: list[str], p: int, i: int, t: int, shard_dir: str, resume: bool = True
) -> list[str]:
    """A shard's command line; ``resume`` False drops ``loop.resume`` (a shard that never started)."""
    kept = [o for o in overrides if not names_any(o, _OWN_KEYS)]
    if not resume:
        kept = [o for o in kept if not names_any(o, ["loop.resume"])]
    return [
        *kept,
        "loop.parallel=off",
        f"dataset.shard.count={p}",
        f"dataset.shard.index={i}",
        f"delegate.num_threads={t}",
        "loop.lanes=1",  # the split already fills the cores with P x T
        f"hydra.run.dir={shard_dir}",
        "loop.progress=false",
    ]


def run_parallel(settings: RunSettings, run_dir: str, overrides: list[str]) -> RunDocument:
    """Claim ``run_dir`` as every writer does (:func:`evalharness.rundir.state.claim`: the lock, the
    resume and overwrite rules), run the shards, merge them; a signal ends the shards first and
    leaves the ``interrupted`` record that ``loop.resume=true`` continues."""
    from evalharness.core.boundary import describe
    from evalharness.run.hydra_access import job_overrides
    from evalharness.run.record import record_interrupt
    from evalharness.rundir.document import write_failure
    from evalharness.rundir.state import release

    loop = settings.loop
    can_resume = settings.definition.abilities.can_resume
    _take_over(run_dir, settings.config(), loop.resume, loop.overwrite, can_resume, loop.parallel)
    try:
        return _run_shards(settings, run_dir, overrides)
    except Interrupted as exc:
        children.stop_children()  # each shard records its own partial run first
        kept = sum(len(read_predictions(os.path.join(d, PREDICTIONS_FILE))) for d in _shard_dirs(run_dir))
        where, kept_in = "while its shards ran", os.path.join(SHARDS_DIR, "shard_*", PREDICTIONS_FILE)
        raise record_interrupt(run_dir, settings.config(), exc, where, (kept, kept_in)) from None
    except Exception as exc:  # a shard failed, or the merge: the claimed directory says so, as a run's does
        write_failure(run_dir, describe(exc), settings.config(), job_overrides())
        raise
    finally:
        release(run_dir)


def _take_over(
    run_dir: str, config: dict[str, Any], resume: bool, overwrite: bool, can_resume: bool, split: str = "1x1"
) -> None:
    """The claim of a single run (refusals, resume and overwrite rules, the lock: released by the
    caller); then the shards go with an overwrite, and a resumed run's own record (the merge
    rewrites it). Every refusal comes first, with nothing touched: a single run's interrupted
    predictions are never replaced by a resume, nor an interrupted split resumed as another."""
    from evalharness.rundir.state import claim, release

    done = claim(run_dir, config, {}, resume=resume, overwrite=overwrite, can_resume=can_resume)
    shards = os.path.join(run_dir, SHARDS_DIR)  # the shards check the inputs' identity themselves
    prior, asked = _shard_dirs(run_dir), parse_parallel(split)
    if resume and done and not prior:
        release(run_dir)
        raise ConfigError(
            f"{run_dir} holds an interrupted run that was not split by loop.parallel; resume it "
            "without loop.parallel (or start over: loop.overwrite=true)"
        )
    if resume and prior and (asked == AUTO or asked[0] != len(prior)):
        release(run_dir)
        raise ConfigError(
            f"loop.parallel={split} with loop.resume=true: the interrupted run has {len(prior)} shards "
            f"in {shards}; give its split, loop.parallel={len(prior)}xT"
        )
    if overwrite:
        shutil.rmtree(shards, ignore_errors=True)
    for name in (METRICS_FILE, RESULTS_FILE):
        if os.path.exists(os.path.join(run_dir, name)):
            os.unlink(os.path.join(run_dir, name))


def refuse_unsplit_resume(run_dir: str, resume: bool) -> None:
    """A run split by ``loop.parallel`` resumes only as one: without it, its shards' predictions
    would be ignored and every sample run again beside them."""
    prior = _shard_dirs(run_dir)
    if resume and prior:
        raise ConfigError(
            f"{run_dir} holds a run split by loop.parallel into {len(prior)} shards; resume it with "
            f"loop.parallel={len(prior)}xT"
        )


def _shard_dirs(run_dir: str) -> list[str]:
    return sorted(glob.glob(os.path.join(run_dir, SHARDS_DIR, "shard_*")))


def _run_shards(settings: RunSettings, run_dir: str, overrides: list[str]) -> RunDocument:
    """Choose P × T, run the shard processes at once, merge them into ``run_dir``."""
    from evalharness.report.commands.merge import merge_runs

    cores = available_cores()
    asked = parse_parallel(settings.loop.parallel)
    record: dict[str, Any] = {"requested": str(settings.loop.parallel), "cores": cores}
    if isinstance(asked, str):  # AUTO: run() never sends "off" here
        list_container_once(settings)  # before the count auto takes, and for the shards below
        (p, t), record["source"], found = auto_split(settings, cores)
        record |= found
    else:
        (p, t), record["source"] = asked, "explicit"
    print(f"loop.parallel: {p} process(es) x {t} thread(s) ({record['source']})", file=sys.stderr, flush=True)
    dirs = [os.path.join(run_dir, SHARDS_DIR, f"shard_{i}") for i in range(p)]
    start = time.perf_counter()
    if p > 1 and not isinstance(asked, str):  # auto listed it above
        list_container_once(settings)
    todo = [i for i, d in enumerate(dirs) if not (settings.loop.resume and _status(d) == "complete")]
    args = {i: shard_overrides(overrides, p, i, t, dirs[i], holds_run(dirs[i])) for i in todo}
    commands = {i: [sys.executable, "-m", "evalharness", *args[i]] for i in todo}
    procs = {
        i: children.start(
            commands[i],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in todo
    }
    errors = {i: proc.communicate()[1] for i, proc in procs.items()}
    wall = time.perf_counter() - start
    for i, proc in procs.items():
        children.forget(proc)
        if proc.returncode != 0:
            raise child_failed(f"loop.parallel: shard {i} of {p}", proc.returncode, errors[i], dirs[i])
    images = sum(_count(d) for d in dirs)
    record |= {"processes": p, "threads_per_process": t, "wall_s": wall, "images_per_s": images / wall}
    if settings.loop.resume:  # part of the samples ran in an earlier session: no one-session throughput
        record |= {"images_per_s": None, "resumed": True, "shards_run_now": todo}
    record["shards"] = [os.path.relpath(d, run_dir) for d in dirs]
    try:
        doc = merge_runs(dirs, run_dir, {"parallel": record})
    except ReportError as exc:
        raise RunStopped(f"loop.parallel: the shards could not be merged: {exc}") from None
    rate = "resumed" if settings.loop.resume else f"{images / wall:.1f} /s"
    print(f"loop.parallel: {images} samples, {wall:.1f} s in this session ({rate}) over {p} process(es)")
    with open(os.path.join(run_dir, RESULTS_FILE), encoding="utf-8") as f:
        print(f.read(), end="")
    return doc


def list_container_once(settings: RunSettings) -> None:
    """A container dataset listed here, once, before the shard processes start. Each shard process
    lists every shard file (ids and sha256 of every image) to take its part of the sample list; with
    the listing kept as shard indexes (``dataset.index_dir``), P processes read the indexes instead
    of hashing every image P times at once. A damaged shard is the same one error here, first."""
    from evalharness.data.dataset_reader import READERS, ReadRequest, container_names, detect

    dataset = settings.dataset
    fmt, index_dir = getattr(dataset, "format", None), getattr(dataset, "index_dir", None)
    containers = container_names()
    # a task whose ground truth lies beside a container (COCO's JSON) names that in dataset.format
    labelled = settings.definition.abilities.container_labels
    if index_dir is None or (labelled and fmt not in ("auto", *containers)):
        return
    kind = fmt if fmt in containers else detect(dataset.root)[0]
    if kind in containers:
        request = ReadRequest(dataset.root, index_dir=str(index_dir), split=dataset.split, labelled=labelled)
        READERS.get(kind)(request).samples()


def _status(run_dir: str) -> str | None:
    if not has_document(run_dir):
        return None
    return load_run(run_dir, "run").status


def _count(shard_dir: str) -> int:
    count = load_run(shard_dir, "shard").document.predictions.count
    if count is None:
        raise RunStopped(f"shard {shard_dir}: its {METRICS_FILE} has no predictions.count; run it again")
    return count
