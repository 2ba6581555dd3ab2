"""``python -m evalharness``: the thin entry point. Hydra composes the config; :mod:`evalharness.run.job`
validates it into a plan and runs it; here user errors become exit codes.

A user error (bad config, missing file, unavailable delegate, model that does not fit the task)
is printed as one ``error:`` line and exits 2 without a traceback; a run that stops part-way
still writes ``metrics.json`` with ``status: partial`` and exits 1. ``evalharness SUBCOMMAND ...``
is one of :data:`SUBCOMMANDS` (the one table, for dispatch and ``--help``), each ``main(argv) -> int``.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import Any, cast

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from evalharness.core.boundary import (
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_USER_ERROR,
    debug,
    describe,
    guarded,
    report,
    report_interrupt,
)
from evalharness.core.errors import ConfigError, EvalHarnessError, RunStopped
from evalharness.core.interrupts import Interrupted, interrupt_policy, interrupted
from evalharness.core.native_output import (
    VERBOSE_ENV,
    exit_code,
    failure_tail,
    leave,
    quiet_native_output,
    silence_teardown,
)
from evalharness.core.paths import CONF_DIR, SWEPT_ENV, bundled, model_stem, quant_tag, swept_tag
from evalharness.core.registry import load_object
from evalharness.run.job import run
from evalharness.rundir.document import holds_run, now
from evalharness.rundir.files import keep_native_log
from evalharness.settings.cli import help_text, precheck
from evalharness.settings.launchers import scan_plugins

OmegaConf.register_new_resolver("bundled", bundled, replace=True)
OmegaConf.register_new_resolver("model_stem", model_stem, replace=True)
OmegaConf.register_new_resolver("quant_tag", quant_tag, replace=True)
OmegaConf.register_new_resolver("swept_tag", swept_tag, replace=True)

_failed_jobs: list[str] = []
_exit_codes: list[int] = []  # a single run's code, returned after Hydra's job-end callbacks (tracking)
__all__ = ["SUBCOMMANDS", "main", "process", "run"]


def _write_failure(run_dir: str, cfg: DictConfig, message: str) -> None:
    """A failed job leaves a record without metrics, so sweeps list it instead of dropping it."""
    from evalharness.rundir.document import write_failure
    from evalharness.rundir.state import hold

    try:
        config = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - the config itself may be what failed to resolve
        config = OmegaConf.to_container(cfg, resolve=False)
    try:
        with hold(run_dir):  # the claim of every writer: a run another process is writing stays its own
            if not holds_run(run_dir):
                task_overrides = list(HydraConfig.get().overrides.task)
                mapping = cast("dict[str, Any]", config)  # cfg is a DictConfig: its container is a dict
                write_failure(run_dir, message, mapping, task_overrides)
    except EvalHarnessError:
        pass  # held by another process: the failure is this command's error line only


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def _app(cfg: DictConfig) -> None:
    """One job, inside the error boundary: a failure is one line (exit 2 before results, 1 after)."""
    hc = HydraConfig.get()
    run_dir = hc.runtime.output_dir
    native: list[str] = []  # what native libraries print on fd 2: the run's native.log
    started, ours = now(), True
    try:
        with quiet_native_output(native), interrupt_policy():  # a launcher's worker process too
            run(cfg, run_dir)
    except Exception as exc:
        if debug():
            raise
        message = describe(exc)
        stopped = isinstance(exc, RunStopped)
        ours = stopped or not holds_run(run_dir)
        if not stopped and ours:  # a fresh job dir records why it failed; a run
            _write_failure(run_dir, cfg, message)  # already there is never touched by a refusal
        where = keep_native_log(run_dir, native, started) if ours else None
        tail = failure_tail(native, where)
        if hc.mode == RunMode.MULTIRUN:
            print(f"job {hc.job.num} failed: {message}", *tail, sep="\n", file=sys.stderr)
            _failed_jobs.append(f"{hc.job.num}: {message}")
            if name := interrupted():  # the signal ends the sweep, not only this job
                raise Interrupted(signal.Signals[name]) from None
            return
        print(f"error: {message}", *tail, sep="\n", file=sys.stderr)
        _exit_codes.append(EXIT_STOPPED if stopped else EXIT_USER_ERROR)  # sys.exit here would skip them
        return
    keep_native_log(run_dir, native, started)


SUBCOMMANDS = {  # THE table of subcommands: name -> ("module:function", its line in --help)
    "report": ("evalharness.report.commands.entry:main", "reports on runs: diff, sweep, rescore, ..."),
    "explain": ("evalharness.explain.__main__:main", "why did the answer change between two runs"),
    "inspect": ("evalharness.inspect.facts:main", "what a .tflite file is and what each delegate here takes"),
    "compare": ("evalharness.run.compare:main", "run candidates (delegate=cpu,gpu): one table, Δ, speed-up"),
}  # fmt: skip


Subcommand = Callable[[list[str]], int | None]  # a subcommand's ``main(argv)``: its exit code (None: 0)


def _quietly(command: Subcommand, args: list[str]) -> int:
    """A subcommand (``main(argv) -> int``) with native output held back; its tail shown only when
    the command fails. Inside the one boundary, so ``SystemExit(0)`` and ``return 0`` are success."""
    native: list[str] = []
    code = EXIT_STOPPED  # an interrupt part-way shows the tail
    try:
        with quiet_native_output(native):
            code = guarded(lambda: command(args))
    finally:
        if code:
            for line in failure_tail(native, None):
                print(line, file=sys.stderr)
    return code


def process() -> None:
    """The process entry (console script, ``python -m``): :func:`main`, then :func:`leave` (the exit
    code without the native libraries' teardown). In-process callers (tests) call :func:`main`."""
    try:
        main()
        code = EXIT_OK
    except SystemExit as exc:
        code = exit_code(exc)
    except BrokenPipeError:  # the reader left (`| head`): the output was cut, said by the code alone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_STOPPED
    leave(code)


def main() -> None:
    """The command under the one interrupt policy (:mod:`evalharness.core.interrupts`): a signal that
    reaches here (before a run claimed its directory, between jobs, in a report) is one line, exit 1."""
    with interrupt_policy():
        try:
            _main()
        except Interrupted as exc:
            if debug():
                raise
            report_interrupt(exc)
            sys.exit(EXIT_STOPPED)


def swept_keys(overrides: list[str]) -> list[str]:
    """The keys a multirun's command line sweeps (``delegate.num_threads=1,2``), read with Hydra's
    grammar; an override it cannot read is left to Hydra's own error."""
    from evalharness.core.override_grammar import parse_override

    keys = []
    for text in overrides:
        if text.startswith("-"):
            continue
        try:
            override = parse_override(text)
        except ConfigError:  # Hydra says what is wrong with it, once it composes
            continue
        if override.is_sweep_override():
            keys.append(override.key_or_group)
    return keys


def _main() -> None:
    if {"-v", "--verbose"} & set(sys.argv[1:]):  # native runtime output live, as it is printed
        os.environ[VERBOSE_ENV] = "1"
        sys.argv[1:] = [a for a in sys.argv[1:] if a not in ("-v", "--verbose")]
    if sys.argv[1:2] and sys.argv[1] in SUBCOMMANDS:  # `evalharness report|explain|inspect|compare ...`
        command = cast(Subcommand, load_object(SUBCOMMANDS[sys.argv[1]][0], f"subcommand {sys.argv[1]}"))
        code = _quietly(command, sys.argv[2:])
        silence_teardown()
        sys.exit(code)
    if {"--help", "-h"} & set(sys.argv[1:]):
        print(help_text(sys.argv[1:], {name: line for name, (_, line) in SUBCOMMANDS.items()}))
        sys.exit(EXIT_OK)
    sys.argv[1:], problem = precheck(sys.argv[1:])
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    scan_plugins(sys.argv[1:])  # Hydra's plug-in scan, without the launchers this command does not choose
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")  # Hydra's own errors reach the boundary below
    if swept := swept_keys(sys.argv[1:]):  # the job directories' names carry their values (swept_tag)
        os.environ[SWEPT_ENV] = ",".join(swept)  # in this process and a launcher's workers alike
    try:
        _app()
    except Exception as exc:  # composing the config failed (override grammar, unknown option, ...)
        if debug():
            raise
        report(exc)
        sys.exit(EXIT_USER_ERROR)
    silence_teardown()
    if _exit_codes:
        sys.exit(_exit_codes[-1])
    if _failed_jobs:
        print(f"error: {len(_failed_jobs)} job(s) failed: " + "; ".join(_failed_jobs), file=sys.stderr)
        sys.exit(EXIT_STOPPED)


if __name__ == "__main__":
    process()
