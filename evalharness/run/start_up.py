"""Cold and warm start-up as measured figures: the same run repeated in child processes.

A start-up is cold or warm only across processes (a driver's in-memory caches survive within one),
so each measured pass is ``python -m evalharness`` again, with this run's overrides, its own run
directory under this run's (``cache_cold/``, ``cache_warm/``), and ``delegate.compile_cache_dir`` pointing
at ``compile_cache/``, a folder this run creates empty: the first pass finds it empty (cold), the
next finds what the first left (warm). Each pass must record the state it was meant to have (its
``provenance.delegate.cache``); otherwise its figures would not be what they claim and the run
stops with an error naming the state found. The passes' figures go in the parent's
``metrics.compile_cache`` (docs/tasks/benchmark.md: Compile caches).
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TypedDict

from evalharness.core import interrupts as children
from evalharness.core.boundary import EXIT_USER_ERROR
from evalharness.core.errors import EvalHarnessError, RunStopped
from evalharness.core.numbers import relative_pct
from evalharness.core.override_grammar import names_any
from evalharness.rundir.reader import load_run

PASS_DIRS = {"cold": "cache_cold", "warm": "cache_warm"}
CACHE_FOLDER = "compile_cache"
# Overrides a pass sets itself (its caches, its run directory, no resume or progress bar).
_OWN_KEYS = (
    "task.start_up", "delegate.compile_cache_dir", "hydra.run.dir", "hydra.sweep.dir",
    "loop.resume", "loop.overwrite", "loop.progress", "loop.op_profile", "task.op_profile",
)  # fmt: skip


def child_overrides(overrides: list[str], cache_dir: str, run_dir: str) -> list[str]:
    """This run's overrides for one pass: caches taken over, its own run directory."""
    kept = [o for o in overrides if not names_any(o, _OWN_KEYS)]
    return [
        *kept,
        "task.start_up=as_found",
        f"delegate.compile_cache_dir={cache_dir}",
        f"hydra.run.dir={run_dir}",
        "loop.progress=false",
        "loop.op_profile=false",  # a pass measures start-up; the profile is the parent's
    ]


def child_failed(what: str, code: int, stderr: str, run_dir: str) -> EvalHarnessError:
    """The parent's error for a child process that failed: a user error stays one (exit 2), anything
    else (a partial or invalid child, a crash) stops the run (exit 1); the child's error line is kept."""
    errors = [line[len("error:") :].strip() for line in stderr.splitlines() if line.startswith("error:")]
    why = errors[-1] if errors else f"no error line; its output is in {run_dir}"
    message = f"{what} failed (exit {code}): {why}"
    return EvalHarnessError(message) if code == EXIT_USER_ERROR else RunStopped(message)


class PassFigures(TypedDict):
    """``metrics.compile_cache.cold``/``warm``: one pass's start-up figures and its caches' size."""

    run_dir: str
    state: str  # cold | warm
    init: float | None
    first_inference: float | None
    inference_mean: float | None
    cache_bytes: int


class Reduction(TypedDict):
    """Cold -> warm reduction of each start-up figure, in per cent (None: not measured)."""

    init: float | None
    first_inference: float | None


class StartUp(TypedDict):
    """metrics.json ``metrics.compile_cache``: the cold and warm passes asked for and the reduction."""

    mode: str  # cold | warm | both
    cache_dir: str
    cold: PassFigures | None
    warm: PassFigures | None
    reduction_pct: Reduction | None


def run_pass(overrides: list[str], cache_dir: str, run_dir: str, expected: str) -> PassFigures:
    """One pass in a child process; its figures and cache record, checked against ``expected``."""
    cmd = [sys.executable, "-m", "evalharness", *child_overrides(overrides, cache_dir, run_dir)]
    print(f"task.start_up: the {expected} pass, in a child process -> {run_dir}", file=sys.stderr, flush=True)
    done = children.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise child_failed(f"task.start_up: the {expected} pass", done.returncode, done.stderr, run_dir)
    document = load_run(run_dir, f"task.start_up's {expected} pass").document
    caches = document.provenance.delegate.cache or ()
    found = sorted({c["state"] for c in caches})
    if found != [expected]:
        raise RunStopped(
            f"task.start_up: the {expected} pass found its caches {', '.join(found) or 'absent'} "
            f"({run_dir}/metrics.json): its figures would not be {expected} ones"
        )
    lat = document.latency
    return {
        "run_dir": os.path.basename(run_dir),
        "state": expected,
        "init": lat.init,
        "first_inference": lat.first_inference,
        "inference_mean": lat.inference.mean,
        "cache_bytes": sum(c["bytes_after"] for c in caches),
    }


def measure(mode: str, overrides: list[str], run_dir: str) -> StartUp | None:
    """``mode`` cold | warm | both: the passes' figures and the cold -> warm reduction (%), for
    ``metrics.compile_cache``; None for ``as_found`` (no pass)."""
    if mode == "as_found":
        return None
    cache_dir = os.path.join(run_dir, CACHE_FOLDER)
    for folder in (CACHE_FOLDER, *PASS_DIRS.values()):  # fresh and empty, whatever a rerun left
        shutil.rmtree(os.path.join(run_dir, folder), ignore_errors=True)
    cold = run_pass(overrides, cache_dir, os.path.join(run_dir, PASS_DIRS["cold"]), "cold")
    result: StartUp = {
        "mode": mode,
        "cache_dir": CACHE_FOLDER,
        "cold": None,
        "warm": None,
        "reduction_pct": None,
    }
    if mode in ("cold", "both"):
        result["cold"] = cold
    if mode in ("warm", "both"):
        result["warm"] = run_pass(overrides, cache_dir, os.path.join(run_dir, PASS_DIRS["warm"]), "warm")
    if mode == "both" and (warm := result["warm"]) is not None:

        def reduction(a: float | None, b: float | None) -> float | None:
            return None if (pct := relative_pct(a, b)) is None else -pct

        result["reduction_pct"] = {
            "init": reduction(cold["init"], warm["init"]),
            "first_inference": reduction(cold["first_inference"], warm["first_inference"]),
        }
    return result
