"""The one candidate runner of ``evalharness compare`` and ``compare --chain``: each candidate is a
normal run in a child process of its own, one after the other, into a directory under the
comparison's ``--out``; then the tables are written the same way for both.

A candidate in its own process cannot take the others down when it crashes its accelerator, and
the interrupt policy of :mod:`evalharness.core.interrupts` ends the one running (it claims its own
run directory; the caller holds ``--out``). The children's output goes to ``out/runs.log``; a bar on
stderr counts the candidates done and names the one running.

A compare candidate runs as a one-job multirun into ``--out`` (:func:`sweep_job`): a job of the
sweep ``evalharness -m KEY=A,B hydra.sweep.dir=OUT`` would be, with its job number and directory
name, so a comparison run again into the same ``--out`` skips its complete candidates as a re-run
sweep does and ``report sweep OUT`` reads it. A chain step is a single run (:func:`single_run`).
The Hydra multirun itself is not run through here: its jobs are started by the launcher the user
picks (``hydra/launcher=joblib``, submitit, Ray), in its own processes or hosts.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from typing import Any

from evalharness.core import interrupts as children
from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.markdown import render_markdown
from evalharness.core.numbers import stable_json
from evalharness.core.tables import Section, render_text

RUNS_LOG = "runs.log"  # the candidates' own output


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One candidate: how the bar names it and its ``python -m evalharness`` arguments."""

    label: str
    args: tuple[str, ...]


def single_run(label: str, job: list[str], run_dir: str) -> Candidate:
    """A normal run of ``job`` into ``run_dir``."""
    return Candidate(label, (*job, f"hydra.run.dir={run_dir}"))


def sweep_job(label: str, job: list[str], out: str, number: int) -> Candidate:
    """``job`` as job ``number`` of a multirun into ``out``, in the directory Hydra's
    ``hydra.sweep.subdir`` (conf/hydra/default.yaml) names it."""
    subdir = _sweep_subdir().replace("${hydra.job.num}", str(number))
    return Candidate(label, ("-m", *job, f"hydra.sweep.dir={out}", f"hydra.sweep.subdir='{subdir}'"))


def _sweep_subdir() -> str:
    from evalharness.core.paths import CONF_DIR
    from evalharness.core.untrusted import read_yaml

    found = read_yaml(os.path.join(CONF_DIR, "hydra", "default.yaml"), "hydra config", dict)
    return str(found["sweep"]["subdir"])


def run_all(candidates: list[Candidate], out: str, shown: bool, swept: str = "") -> list[int]:
    """Run each candidate in turn (module docstring); their exit codes, in order. ``swept``: the key
    the candidates differ in, so each job directory's name carries its value (core.paths.swept_tag)."""
    from evalharness.core.bars import progress
    from evalharness.core.paths import SWEPT_ENV

    os.makedirs(out, exist_ok=True)
    codes = []
    bar = progress(len(candidates), "compare", "candidate", shown and bool(candidates))
    with open(os.path.join(out, RUNS_LOG), "a", encoding="utf-8") as log, bar:
        for candidate in candidates:
            bar.set_postfix_str(f"running {candidate.label}")
            cmd = [sys.executable, "-m", "evalharness", *candidate.args]
            env = {**os.environ, SWEPT_ENV: swept} if swept else None
            codes.append(children.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode)
            bar.update(1)
    return codes


def last_error(out: str) -> str | None:
    """The last ``error:`` line the candidates printed, without the word."""
    try:
        with open(os.path.join(out, RUNS_LOG), encoding="utf-8", errors="replace") as f:
            errors = [line.strip() for line in f if line.startswith("error:")]
    except OSError:
        return None
    return errors[-1][len("error:") :].strip() if errors else None


def write_tables(
    out: str, files: tuple[str, str, str], title: str, section: Section, doc: dict[str, Any], also: str = ""
) -> None:
    """The comparison's files (``files``: its .json, .txt and .md names) into ``out``, the table on
    stdout, and a line naming what was written (and ``also``)."""
    text = render_text(title, [section])
    for name, body in zip(files, (stable_json(doc), text, render_markdown(title, [section])), strict=True):
        atomic_write_text(os.path.join(out, name), body)
    sys.stdout.write(text)
    print(f"wrote {', '.join(os.path.join(out, n) for n in files)}{also}")
