"""``evalharness compare KEY=A,B[,C...] [OVERRIDES...]``: run each candidate, then one table; with
``--chain``, the deployment chain in one command and the step that lost the accuracy.

Each candidate is a normal run (its own run directory and metrics.json) in a child process of its
own (:mod:`evalharness.run.candidates`, the one runner of both), so a candidate that crashes its
accelerator cannot take the comparison down. ``compare`` runs its candidates as the jobs of the
multirun ``evalharness -m KEY=A,B ... hydra.sweep.dir=OUT`` would be, and the sweep files come from
``report sweep``'s writer (with ``--baseline KEY=A``). Then the candidates that completed are loaded
together in this process and their latency is measured interleaved
(:mod:`evalharness.loop.interleave`); the table (:mod:`evalharness.run.compare_view`) takes its
accuracy changes from ``report diff``'s code.

A chain is ordered: the first value of every listed key is the start (the source model, say), then
each key moves to its next value in the order the keys are given, keeping the moves before it, so
``model.path=src.onnx,fp32.tflite quant=none,int8 delegate=cpu,gpu`` runs four steps: the ONNX source,
the float .tflite, its int8 variant, and that variant on the GPU. The waterfall compares each step
with the one before it by ``report diff``'s code.

Every candidate (every step) is composed and validated before anything runs, so an unknown key, a
single candidate or a bad value is one ``error:`` line and exit 2 with nothing written; a candidate
that fails or stops part-way is a row saying so, and exit 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from evalharness.core.boundary import EXIT_OK, EXIT_STOPPED, ArgumentParser, debug, describe, guarded
from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.core.schema import check
from evalharness.core.untrusted import read_json
from evalharness.loop.interleave import Interleaved, InterleaveSettings
from evalharness.run.candidates import RUNS_LOG, last_error, run_all, single_run, sweep_job, write_tables
from evalharness.rundir.state import hold
from evalharness.settings.groups import RunSettings
from evalharness.settings.overrides import options, parse

FILES = ("compare.json", "compare.txt", "compare.md")
CHAIN_FILES = ("chain.json", "chain.txt", "chain.md")


def parser() -> ArgumentParser:
    p = ArgumentParser(
        prog="evalharness compare",
        description="Run each candidate (KEY=A,B,...) as a normal run, then print one table: accuracy, "
        "change against the first with report diff's paired interval, interleaved speed-up, coverage.",
    )
    p.add_argument("overrides", nargs="+", metavar="OVERRIDE",
                   help="exactly one KEY=A,B[,...] (the candidates, first = baseline) and any other "
                   "GROUP=OPTION / GROUP.KEY=VALUE of a run")  # fmt: skip
    p.add_argument("--out", help="directory for the runs and the tables (default: outputs/compare/<time>)")
    p.add_argument("--chain", action="store_true",
                   help="an ordered chain: each KEY=A,B,... moves one step at a time, in the order given "
                   "(model.path=src.onnx,fp32.tflite quant=none,int8); a waterfall of Δ against the previous "
                   "step and the step that loses most")  # fmt: skip
    p.add_argument("--no-interleave", action="store_true",
                   help="no interleaved measurement: no speed-up column")  # fmt: skip
    for f in dataclasses.fields(InterleaveSettings):
        p.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=type(f.default), default=f.default,
                       help=f"interleaved measurement: {f.name} (default {f.default})")  # fmt: skip
    return p


def swept(overrides: list[str]) -> tuple[int, str, list[str]]:
    """(position, key, candidate values) of the one override listing candidates (Hydra's grammar:
    ``KEY=A,B`` or ``KEY=choice(A,B)``; a list ``[A,B]`` or a quoted ``'A,B'`` is one value)."""
    found = []
    for i, arg in enumerate(overrides):
        if arg.startswith("-"):
            raise ConfigError(f"{arg}: compare runs its candidates itself; give overrides only (no -m)")
        (override,) = parse([arg])
        if override.is_sweep_override():
            key, values = override.key_or_group, options(override)
            if values is None:
                raise ConfigError(f"{arg}: give the candidates as a comma list, e.g. {key}=a,b")
            found.append((i, key, values))
    if not found:
        raise ConfigError("compare needs one KEY=A,B with two or more candidates, e.g. delegate=cpu,gpu")
    if len(found) > 1:
        keys = ", ".join(k for _, k, _ in found)
        raise ConfigError(f"compare takes candidates for one key, got {keys}; fix all but one to one value")
    i, key, values = found[0]
    if len(set(values)) != len(values):
        raise ConfigError(f"{overrides[i]}: a candidate given twice; give distinct values")
    return i, key, values


def candidate_jobs(overrides: list[str], index: int, key: str, values: list[str]) -> list[list[str]]:
    """Each candidate's overrides: the command line with its one value in the swept one's place."""
    return [[*overrides[:index], f"{key}={value}", *overrides[index + 1 :]] for value in values]


def validate_candidates(jobs: list[list[str]], key: str, values: list[str]) -> list[Any]:
    """Each candidate's composed, validated settings (the run's own checks), before anything runs."""
    from evalharness.settings.validate import validate_job

    return [validate_job(job, f"candidate {key}={value}") for job, value in zip(jobs, values, strict=True)]


def gather(out: str, key: str, values: list[str]) -> list[dict[str, Any]]:
    """Each candidate's job of the multirun: ``{"name", "value", "run", "status", "error", "params"}``,
    by job number (Hydra numbers a sweep's jobs in the order of the values; a job's recorded
    overrides may spell a value otherwise, ``false`` as ``False``)."""
    from evalharness.report.commands.sweep import collect

    jobs = {}
    for collected in collect(out) if _has_jobs(out) else []:
        head = collected["run"].split("_", 1)[0]
        if head.isdigit():
            jobs[int(head)] = collected
    found = []
    for number, value in enumerate(values):
        job = jobs.get(number)
        run = job["doc"] if job else None
        status = run.status if run is not None else "missing"
        error = (run.document.error or run.document.stop_reason) if run is not None else None
        if run is None:
            error = f"no metrics.json (see {os.path.join(out, RUNS_LOG)})"
        found.append({"name": _name(value), "value": value, "run": run, "status": status,
                      "error": error if status != "complete" else None,
                      "params": job["params"] if job else {}})  # fmt: skip
    return found


def _has_jobs(out: str) -> bool:
    return os.path.isdir(out) and any(os.path.isdir(os.path.join(out, n, ".hydra")) for n in os.listdir(out))


def check_out(out: str, key: str, values: list[str]) -> None:
    """An ``--out`` reused for the same candidates resumes (complete jobs are skipped); for others it
    would mix two comparisons' job numbers: refused."""

    path = os.path.join(out, FILES[0])
    if os.path.isfile(path):
        before = read_json(path, f"--out {out}:", error=ConfigError, fix="give a new directory")
        if before.get("key") != key or before.get("candidates") != values:
            raise ConfigError(f"--out {out} holds a comparison of other candidates; give a new directory")
    elif _has_jobs(out):
        raise ConfigError(f"--out {out} holds runs that are no comparison; give a new directory")


def _name(value: str) -> str:
    from evalharness.run.compare_view import short_name

    return short_name(value)


def interleaved(
    plans: list[Any], candidates: list[dict[str, Any]], settings: InterleaveSettings
) -> Interleaved | None:
    """The interleaved measurement of the complete candidates (the first among them), or None."""
    from evalharness.loop.interleave import measure

    chosen = [i for i, c in enumerate(candidates) if c["status"] == "complete"]
    if len(chosen) < 2 or chosen[0] != 0:
        return None
    if any(plans[i].runner.name != "host" for i in chosen):
        return None  # a phone times its own invokes (benchmark_model): not interleaved here
    loaders = [loader(plans[i]) for i in chosen]
    for position, i in enumerate(chosen):
        candidates[i]["measured"] = position
    return measure(loaders, settings)


def loader(settings: RunSettings) -> Callable[[], Callable[[], None]]:
    """Loads a candidate afresh (the quantized variant its run used) and returns one timed call of
    it, with the seeded random input benchmark_model and ``task=benchmark`` use, set once."""
    from evalharness.runtime import load_model
    from evalharness.tasks.inference_diff.live import seed_tool_inputs
    from evalharness.transforms.plan import with_quantized_variant

    settings, _ = with_quantized_variant(settings)

    def load() -> Callable[[], None]:
        s = settings
        model = load_model(s.model.path, s.delegate_plan, s.runtime.name, s.runner)
        rng = np.random.default_rng(0)
        model.set_inputs([seed_tool_inputs(rng, info) for info in model.inputs])
        return model.invoke

    return load


def compare(args: argparse.Namespace) -> int:
    from evalharness.settings.cli import precheck

    overrides, problem = precheck(args.overrides)
    if problem:
        raise ConfigError(problem)
    if args.chain:
        return chain(overrides, args.out or os.path.join("outputs", "chain", _now()))
    index, key, values = swept(overrides)
    settings = InterleaveSettings(**check(InterleaveSettings, _given(args), "compare options"))
    if settings.rounds_per_load % 2:
        raise ConfigError(f"--rounds-per-load {settings.rounds_per_load}: give an even number (or 0)")
    jobs = candidate_jobs(overrides, index, key, values)
    plans = validate_candidates(jobs, key, values)
    out = args.out or os.path.join("outputs", "compare", _now())
    check_out(out, key, values)
    with hold(out):  # the claim of every writer (rundir/state.py); each job claims its own directory
        return _compare_into(out, jobs, key, values, plans, settings, args.no_interleave)


def _compare_into(
    out: str,
    jobs: list[list[str]],
    key: str,
    values: list[str],
    plans: list[RunSettings],
    settings: InterleaveSettings,
    quick: bool,
) -> int:
    """The candidates' runs into ``out`` (held), then the interleaved speed-ups unless ``quick``."""
    print(f"compare {key}: {', '.join(values)} -> {out} (runs' output: {os.path.join(out, RUNS_LOG)})")
    runs = [sweep_job(f"{key}={v}", job, out, i) for i, (job, v) in enumerate(zip(jobs, values, strict=True))]
    codes = run_all(runs, out, all(p.loop.progress for p in plans), key)
    candidates = gather(out, key, values)
    if any(c not in (EXIT_OK, EXIT_STOPPED) for c in codes) and all(c["run"] is None for c in candidates):
        raise ConfigError(last_error(out) or f"the runs did not start; see {os.path.join(out, RUNS_LOG)}")
    measurement = None
    if not quick:
        try:
            measurement = interleaved(plans, candidates, settings)
        except Exception as exc:  # the runs are done: their table is still printed, without speed-ups
            if debug():
                raise
            print(f"warning: no speed-up column: measurement failed: {describe(exc)}", file=sys.stderr)
    return write(out, key, values, candidates, measurement)


def write(
    out: str,
    key: str,
    values: list[str],
    candidates: list[dict[str, Any]],
    measurement: Interleaved | None,
) -> int:
    from evalharness.report.commands import sweep
    from evalharness.run import compare_view

    table = compare_view.rows(candidates, measurement)
    section = compare_view.section(key, table, measurement, out)
    try:
        first = candidates[0]["params"].get(key, values[0])  # as the job recorded it
        sweep.write_report(out, None, {key: first}, "compare.txt" if measurement else None)
    except Exception as exc:  # noqa: BLE001 - the table stands without the sweep files
        print(f"warning: sweep files not written: {describe(exc)}", file=sys.stderr)
    doc = {"key": key, "candidates": values, "rows": table, "interleaved": measurement}
    title = f"evalharness compare: {key}={','.join(values)}"
    write_tables(out, FILES, title, section, doc, " and sweep.csv/.md/.html")
    return EXIT_OK if all(c["status"] == "complete" for c in candidates) else EXIT_STOPPED


def chain_steps(overrides: list[str]) -> list[dict[str, Any]]:
    """Each step: ``{"label", "job"}`` (its overrides), the first the start, then one move each."""
    from evalharness.run.compare_view import short_name

    moves, fixed = [], []
    for arg in overrides:
        if arg.startswith("-"):
            raise ConfigError(f"{arg}: compare --chain runs its steps itself; give overrides only (no -m)")
        (override,) = parse([arg])
        if not override.is_sweep_override():
            fixed.append(arg)
            continue
        key, values = override.key_or_group, options(override)
        if values is None:
            raise ConfigError(f"{arg}: give a chain's values as a comma list, e.g. {key}=a,b")
        if any(a == b for a, b in zip(values, values[1:], strict=False)):
            raise ConfigError(f"{arg}: a value repeated in a row is no step; give each once")
        moves.append((key, values))
    if not moves:
        raise ConfigError("compare --chain needs KEY=A,B (one step per value after the first), "
                          "e.g. model.path=src.onnx,fp32.tflite quant=none,int8")  # fmt: skip
    current = {key: values[0] for key, values in moves}
    states = [(", ".join(f"{k}={short_name(v)}" for k, v in current.items()), dict(current))]
    for key, values in moves:
        for value in values[1:]:
            current[key] = value
            states.append((f"{key}={short_name(value)}", dict(current)))
    return [{"label": label, "job": [*fixed, *(f"{k}={v}" for k, v in at.items())]} for label, at in states]


def chain(overrides: list[str], out: str) -> int:
    """Validate every step, run them in order into ``out``, print and write the waterfall."""
    from evalharness.settings.validate import validate_job

    steps = chain_steps(overrides)
    for i, step in enumerate(steps):
        validate_job(step["job"], f"chain step {i} ({step['label']})")
    if os.path.isdir(out) and os.listdir(out):
        raise ConfigError(f"--out {out} is not empty; give a new directory for the chain's runs")
    with hold(out):  # the claim of every writer (rundir/state.py); each step claims its own directory
        return _run_chain(steps, out)


def _run_chain(steps: list[dict[str, Any]], out: str) -> int:
    from evalharness.run import compare_view
    from evalharness.rundir.reader import load_run

    print(f"compare --chain: {len(steps)} steps -> {out} (runs' output: {os.path.join(out, RUNS_LOG)})")
    for i, step in enumerate(steps):
        step["dir"] = os.path.join(out, f"{i}_{_slug(step['label'])}")
    run_all([single_run(s["label"], s["job"], s["dir"]) for s in steps], out, shown=False)
    for i, step in enumerate(steps):
        try:
            step["run"] = load_run(step["dir"], f"step {i}")
        except EvalHarnessError as exc:
            step["run"], step["error"] = None, f"no run ({exc}); see {os.path.join(out, RUNS_LOG)}"
    table = compare_view.waterfall(steps)
    title = "evalharness compare --chain: " + " -> ".join(s["label"] for s in steps)
    doc = {"steps": [{"label": s["label"], "job": s["job"], "dir": s["dir"]} for s in steps], "rows": table,
           "loses_most": compare_view.loser(table)}  # fmt: skip
    write_tables(out, CHAIN_FILES, title, compare_view.chain_section(table, out), doc)
    return EXIT_OK if all(r["status"] == "complete" for r in table) else EXIT_STOPPED


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in label)[:80]


def _given(args: argparse.Namespace) -> dict[str, Any]:
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(InterleaveSettings)}


def _now() -> str:
    from datetime import datetime

    return datetime.now().strftime("%Y-%m-%d_%H-%M-%S")


def main(argv: list[str] | None = None) -> int:
    """``evalharness compare ...``: the subcommand contract, ``main(argv) -> int``."""
    return guarded(lambda: compare(parser().parse_intermixed_args(argv)))
