"""``python -m evalharness``: the thin entry point. Hydra composes the config; :mod:`evalharness.run.job`
validates it into a plan and runs it; here user errors become exit codes.

A user error (bad config, missing file, unavailable delegate, model that does not fit the task)
is printed as one ``error:`` line and exits 2 without a traceback; a run that stops part-way
still writes ``metrics.json`` with ``status: partial`` and exits 1.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from typing import Any, cast

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from evalharness.core.boundary import EXIT_STOPPED, EXIT_USER_ERROR, debug, describe, report
from evalharness.core.errors import RunStopped
from evalharness.core.native_output import VERBOSE_ENV, failure_tail, quiet_native_output, silence_teardown
from evalharness.core.paths import CONF_DIR, bundled, model_stem, quant_tag
from evalharness.run.cli import conf_dirs, help_text, unknown_key
from evalharness.run.job import run
from evalharness.rundir.document import holds_run, now
from evalharness.rundir.files import keep_native_log

OmegaConf.register_new_resolver("bundled", bundled, replace=True)
OmegaConf.register_new_resolver("model_stem", model_stem, replace=True)
OmegaConf.register_new_resolver("quant_tag", quant_tag, replace=True)

_failed_jobs: list[str] = []
_exit_codes: list[int] = []  # a single run's code, returned after Hydra's job-end callbacks (tracking)
__all__ = ["conf_dirs", "main", "run"]


def _write_failure(run_dir: str, cfg: DictConfig, message: str) -> None:
    """A failed job leaves a record without metrics, so sweeps list it instead of dropping it."""
    from evalharness.rundir.document import write_failure

    try:
        config = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - the config itself may be what failed to resolve
        config = OmegaConf.to_container(cfg, resolve=False)
    # a DictConfig converts to a dict
    write_failure(run_dir, message, cast(dict[str, Any], config), list(HydraConfig.get().overrides.task))


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def _app(cfg: DictConfig) -> None:
    """One job, inside the error boundary: a failure is one line (exit 2 before results, 1 after)."""
    hc = HydraConfig.get()
    run_dir = hc.runtime.output_dir
    native: list[str] = []  # what native libraries print on fd 2: the run's native.log
    started, ours = now(), True
    try:
        with quiet_native_output(native):
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
            return
        print(f"error: {message}", *tail, sep="\n", file=sys.stderr)
        _exit_codes.append(EXIT_STOPPED if stopped else EXIT_USER_ERROR)  # sys.exit here would skip them
        return
    keep_native_log(run_dir, native, started)


_GROUP_OVERRIDE = re.compile(r"^[+]?(?P<group>[A-Za-z_][\w/]*)=(?P<value>[^()\[\]{}*]*)$")


def check_group_options(args: list[str]) -> str | None:
    """A one-line error for ``group=option`` naming no config file (Hydra's own is several lines)."""
    dirs = conf_dirs(args)
    for arg in args:
        m = _GROUP_OVERRIDE.match(arg)
        group = m.group("group") if m else None
        if m is None or not group or group.startswith("hydra") or not any((d / group).is_dir() for d in dirs):
            continue
        valid = sorted({p.stem for d in dirs for p in (d / group).glob("*.yaml")})
        for option in filter(None, (v.strip() for v in m.group("value").split(","))):
            if option not in valid and option != "null":
                close = difflib.get_close_matches(option, valid, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                return f"unknown {group} {option!r}; valid: {', '.join(valid)}.{hint}"
    return None


def plain_key(arg: str) -> str:
    return arg.split("=", 1)[0].lstrip("+~")


def rewrite_overrides(args: list[str]) -> list[str]:
    """The spellings a user tries, made into Hydra's: ``model.preprocess=<preset>`` is the
    ``model/preprocess`` group; ``model.path=X`` without ``model=`` selects the ``file`` preset (the
    run is named after X and its settings come from the file, see ``evalharness.run.model_settings``)."""
    presets = {p.stem for d in conf_dirs(args) for p in (d / "model" / "preprocess").glob("*.yaml")}
    out = []
    for arg in args:
        key, _, value = arg.partition("=")
        if key == "model.preprocess" and value and all(v.strip() in presets for v in value.split(",")):
            arg = f"model/preprocess={value}"
        out.append(arg)
    keys = [plain_key(a) for a in out]
    if "model.path" in keys and "model" not in keys:
        out.append("model=file")  # at the end: options such as -m must stay before the overrides
    return out


def _report():
    from evalharness.report.cli import main as report_main

    return report_main


def _explain():
    from evalharness.explain.__main__ import main as explain_main

    return explain_main


def _inspect():
    from evalharness.inspect.facts import main as inspect_main

    return inspect_main


def _compare():
    from evalharness.run.compare import main as compare_main

    return lambda argv: compare_main(argv, precheck)


def _quietly(command, args: list[str]) -> int:
    """A subcommand with native output held back; shown (its tail) only when the command fails."""
    native: list[str] = []
    code = 1
    try:
        with quiet_native_output(native):
            code = command(args)
    finally:
        if code:
            for line in failure_tail(native, None):
                print(line, file=sys.stderr)
    return code


# one line each: run/cli.py
SUBCOMMANDS = {"report": _report, "explain": _explain, "inspect": _inspect, "compare": _compare}


def precheck(args: list[str]) -> tuple[list[str], str | None]:
    """The overrides as Hydra will get them, and the one-line problem found before composing."""
    from evalharness.run.launchers import missing_launcher_plugin
    from evalharness.run.renamed_keys import renamed_override

    args = rewrite_overrides(args)
    checks = (renamed_override, check_group_options, unknown_key, missing_launcher_plugin)
    problem = next((found for found in (c(args) for c in checks) if found), None)
    return args, problem


def main() -> None:
    if {"-v", "--verbose"} & set(sys.argv[1:]):  # native runtime output live, as it is printed
        os.environ[VERBOSE_ENV] = "1"
        sys.argv[1:] = [a for a in sys.argv[1:] if a not in ("-v", "--verbose")]
    if sys.argv[1:2] and sys.argv[1] in SUBCOMMANDS:  # `evalharness report|explain|inspect ...`
        code = _quietly(SUBCOMMANDS[sys.argv[1]](), sys.argv[2:])
        silence_teardown()
        sys.exit(code)
    if {"--help", "-h"} & set(sys.argv[1:]):
        print(help_text(sys.argv[1:]))
        sys.exit(0)
    sys.argv[1:], problem = precheck(sys.argv[1:])
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")  # Hydra's own errors reach the boundary below
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
    main()
