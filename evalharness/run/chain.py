"""``evalharness compare --chain KEY=A,B [KEY2=C,D ...] [OVERRIDES]``: the deployment chain in one
command, and the step that lost the accuracy.

A chain is ordered: the first value of every listed key is the start (the source model, say), then
each key moves to its next value in the order the keys are given, keeping the moves before it, so
``model.path=src.onnx,fp32.tflite quant=none,int8 delegate=cpu,gpu`` runs four steps: the ONNX source,
the float .tflite, its int8 variant, and that variant on the GPU. Each step is a normal run (its own
run directory), run in a child process one after the other; every step is validated first, so a bad
one is one ``error:`` line and exit 2 with nothing run. The waterfall (:mod:`evalharness.run.chain_view`)
compares each step with the one before it by ``report diff``'s code.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from evalharness.core import interrupts as children
from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.boundary import EXIT_OK, EXIT_STOPPED
from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.core.markdown import render_markdown
from evalharness.core.numbers import stable_json
from evalharness.core.tables import render_text
from evalharness.run.compare_view import short_name
from evalharness.rundir.state import hold
from evalharness.settings.overrides import options, parse

FILES = ("chain.json", "chain.txt", "chain.md")
RUNS_LOG = "runs.log"  # the steps' own output, as compare's


def chain_steps(overrides: list[str]) -> list[dict[str, Any]]:
    """Each step: ``{"label", "job"}`` (its overrides), the first the start, then one move each."""
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
    from evalharness.run import chain_view
    from evalharness.rundir.reader import load_run

    print(f"compare --chain: {len(steps)} steps -> {out} (runs' output: {os.path.join(out, RUNS_LOG)})")
    for i, step in enumerate(steps):
        step["dir"] = os.path.join(out, f"{i}_{_slug(step['label'])}")
        cmd = [sys.executable, "-m", "evalharness", *step["job"], f"hydra.run.dir={step['dir']}"]
        with open(os.path.join(out, RUNS_LOG), "a", encoding="utf-8") as log:
            children.run(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            step["run"] = load_run(step["dir"], f"step {i}")
        except EvalHarnessError as exc:
            step["run"], step["error"] = None, f"no run ({exc}); see {os.path.join(out, RUNS_LOG)}"
    table = chain_view.waterfall(steps)
    title = "evalharness compare --chain: " + " -> ".join(s["label"] for s in steps)
    section = chain_view.section(table, out)
    doc = {"steps": [{"label": s["label"], "job": s["job"], "dir": s["dir"]} for s in steps], "rows": table,
           "loses_most": chain_view.loser(table)}  # fmt: skip
    text = render_text(title, [section])
    for name, body in zip(FILES, (stable_json(doc), text, render_markdown(title, [section])), strict=True):
        atomic_write_text(os.path.join(out, name), body)
    sys.stdout.write(text)
    print(f"wrote {', '.join(os.path.join(out, n) for n in FILES)}")
    return EXIT_OK if all(r["status"] == "complete" for r in table) else EXIT_STOPPED


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in label)[:80]
