"""``evalharness compare KEY=A,B[,C...] [OVERRIDES...]``: run each candidate, then one table.

Each candidate is a normal run (its own run directory and metrics.json): the command is the multirun
``evalharness -m KEY=A,B ... hydra.sweep.dir=OUT`` in a child process, so a candidate that crashes
its accelerator cannot take the comparison down, and the sweep files come from ``report sweep``'s
writer (with ``--baseline KEY=A``). Then the candidates that completed are loaded together in this
process and their latency is measured interleaved (:mod:`evalharness.loop.interleave`); the table
(:mod:`evalharness.run.compare_view`) takes its accuracy changes from ``report diff``'s code.

Every candidate is composed and validated before anything runs, so an unknown key, a single
candidate or a bad value is one ``error:`` line and exit 2 with nothing written; a candidate that
fails or stops part-way is a row saying so, and exit 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from evalharness.core import interrupts as children
from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.boundary import EXIT_OK, EXIT_STOPPED, ArgumentParser, debug, describe, guarded
from evalharness.core.errors import ConfigError
from evalharness.core.markdown import render_markdown
from evalharness.core.numbers import stable_json
from evalharness.core.schema import check
from evalharness.core.tables import render_text
from evalharness.core.untrusted import read_json
from evalharness.loop.interleave import InterleaveSettings
from evalharness.rundir.files import METRICS_FILE
from evalharness.rundir.state import hold
from evalharness.settings.groups import RunSettings
from evalharness.settings.overrides import options, parse

RUNS_LOG = "runs.log"
FILES = ("compare.json", "compare.txt", "compare.md")


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


def validate_candidates(overrides: list[str], index: int, key: str, values: list[str]) -> list[Any]:
    """Each candidate's composed, validated settings (the run's own checks), before anything runs."""
    from evalharness.settings.validate import validate_job

    jobs = [[*overrides[:index], f"{key}={value}", *overrides[index + 1 :]] for value in values]
    return [validate_job(job, f"candidate {key}={value}") for job, value in zip(jobs, values, strict=True)]


def run_candidates(overrides: list[str], out: str, key: str, values: list[str], shown: bool) -> int:
    """The multirun in a child process, its output kept in ``out/runs.log``; returns its exit code.
    Meanwhile a bar on stderr counts the candidates done and names the one running (``shown``)."""
    from evalharness.core.bars import progress

    os.makedirs(out, exist_ok=True)
    cmd = [sys.executable, "-m", "evalharness", "-m", *overrides, f"hydra.sweep.dir={out}"]
    with open(os.path.join(out, RUNS_LOG), "a", encoding="utf-8") as log:
        proc = children.start(cmd, stdout=log, stderr=subprocess.STDOUT)
        with progress(len(values), "compare", "candidate", shown and bool(values)) as bar:
            while True:
                done = _jobs_done(out)
                bar.update(min(done, len(values)) - bar.n)
                if done < len(values):
                    bar.set_postfix_str(f"running {key}={values[done]}")
                try:
                    proc.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    continue
        children.forget(proc)
        return proc.returncode


def _jobs_done(out: str) -> int:
    """The multirun's jobs that have written their metrics.json (Hydra runs them in value order)."""
    names = os.listdir(out) if os.path.isdir(out) else []
    return sum(
        os.path.isfile(os.path.join(out, n, METRICS_FILE)) for n in names if n.split("_", 1)[0].isdigit()
    )


def last_error(out: str) -> str | None:
    try:
        with open(os.path.join(out, RUNS_LOG), encoding="utf-8", errors="replace") as f:
            errors = [line.strip() for line in f if line.startswith("error:")]
    except OSError:
        return None
    return errors[-1][len("error:") :].strip() if errors else None


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
        error = (run.doc.get("error") or run.doc.get("stop_reason")) if run is not None else None
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
) -> dict[str, Any] | None:
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
        from evalharness.run.chain import chain

        return chain(overrides, args.out or os.path.join("outputs", "chain", _now()))
    index, key, values = swept(overrides)
    settings = InterleaveSettings(**check(InterleaveSettings, _given(args), "compare options"))
    if settings.rounds_per_load % 2:
        raise ConfigError(f"--rounds-per-load {settings.rounds_per_load}: give an even number (or 0)")
    plans = validate_candidates(overrides, index, key, values)
    out = args.out or os.path.join("outputs", "compare", _now())
    check_out(out, key, values)
    with hold(out):  # the claim of every writer (rundir/state.py); each job claims its own directory
        return _compare_into(out, overrides, key, values, plans, settings, args.no_interleave)


def _compare_into(
    out: str,
    overrides: list[str],
    key: str,
    values: list[str],
    plans: list[RunSettings],
    settings: InterleaveSettings,
    quick: bool,
) -> int:
    """The candidates' runs into ``out`` (held), then the interleaved speed-ups unless ``quick``."""
    print(f"compare {key}: {', '.join(values)} -> {out} (runs' output: {os.path.join(out, RUNS_LOG)})")
    code = run_candidates(overrides, out, key, values, all(p.loop.progress for p in plans))
    candidates = gather(out, key, values)
    if code not in (EXIT_OK, EXIT_STOPPED) and all(c["run"] is None for c in candidates):
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
    measurement: dict[str, Any] | None,
) -> int:
    from evalharness.report.commands import sweep
    from evalharness.run import compare_view

    table = compare_view.rows(candidates, measurement)
    section = compare_view.section(key, table, measurement, out)
    title = f"evalharness compare: {key}={','.join(values)}"
    text = render_text(title, [section])
    try:
        first = candidates[0]["params"].get(key, values[0])  # as the job recorded it
        sweep.write_report(out, None, {key: first})
    except Exception as exc:  # noqa: BLE001 - the table stands without the sweep files
        print(f"warning: sweep files not written: {describe(exc)}", file=sys.stderr)
    doc = {"key": key, "candidates": values, "rows": table, "interleaved": measurement}
    for name, body in zip(FILES, (stable_json(doc), text, render_markdown(title, [section])), strict=True):
        atomic_write_text(os.path.join(out, name), body)
    sys.stdout.write(text)
    print(f"wrote {', '.join(os.path.join(out, n) for n in FILES)} and sweep.csv/.md/.html")
    return EXIT_OK if all(c["status"] == "complete" for c in candidates) else EXIT_STOPPED


def _given(args: argparse.Namespace) -> dict[str, Any]:
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(InterleaveSettings)}


def _now() -> str:
    from datetime import datetime

    return datetime.now().strftime("%Y-%m-%d_%H-%M-%S")


def main(argv: list[str] | None = None) -> int:
    """``evalharness compare ...``: the subcommand contract, ``main(argv) -> int``."""
    return guarded(lambda: compare(parser().parse_intermixed_args(argv)))
