"""``python -m evalharness``: compose the config, validate it, run one task, write the run files.

A user error (bad config, missing file, unavailable delegate, model that does not fit the task)
is printed as one ``error:`` line and exits 2 without a traceback; a run that stops part-way
still writes ``metrics.json`` with ``status: partial`` and exits 1.
"""

from __future__ import annotations

import datetime as dt
import difflib
import logging
import os
import re
import signal
import sys

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from evalharness.errors import EvalHarnessError
from evalharness.paths import CONF_DIR, bundled

log = logging.getLogger("evalharness")
OmegaConf.register_new_resolver("bundled", bundled, replace=True)

EXIT_PARTIAL, EXIT_USER_ERROR = 1, 2
_failed_jobs: list[str] = []


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _raise_interrupt(signum, frame):  # SIGTERM ends a run like Ctrl-C: partial results are kept
    raise KeyboardInterrupt


def _warn_delegation(plan, coverage: dict) -> None:
    """Partial delegation and software 'GPUs' are legitimate results, but never silent ones."""
    device = coverage.get("device") or {}
    if device.get("software_renderer"):
        log.warning(
            "delegate=%s ran on a SOFTWARE renderer (%s): its latency is not a hardware GPU's",
            plan.name,
            device.get("adapter"),
        )
    if plan.name in ("cpu", "reference") or coverage["ops_delegated"] == coverage["ops_total"]:
        return
    delegated = coverage["ops_delegated"]
    log.warning(
        "delegate=%s took %s of %d ops (on CPU: %s). Partially delegated graphs can be slower than "
        "the CPU alone.",
        plan.name,
        "an unknown number" if delegated is None else delegated,
        coverage["ops_total"],
        coverage.get("ops_on_cpu_by_type") or coverage.get("unsupported_ops"),
    )


def run(cfg: DictConfig, run_dir: str) -> dict:
    """Run the configured task into ``run_dir``; returns the metrics.json document."""
    from evalharness import provenance
    from evalharness.config import validate
    from evalharness.data.shard import refuse_unsharded_task
    from evalharness.loop import run_loop
    from evalharness.report.writer import RunWriter
    from evalharness.resume import prepare_run_dir, sweep_job_settings
    from evalharness.runtime import load_model, plan_delegate
    from evalharness.tasks import load_tasks
    from evalharness.thread_budget import apply_thread_budget

    started = _now()
    budget = apply_thread_budget(cfg, _multirun_launcher())
    rc = validate(cfg)
    task_class = load_tasks().get(rc.task["name"])
    can_resume = getattr(task_class, "can_resume", False)
    loop = rc.loop
    if _is_multirun():  # a re-run sweep skips complete jobs (before any set-up) and resumes partial ones
        loop, finished = sweep_job_settings(run_dir, rc.resolved, loop, can_resume)
        if finished is not None:
            print(f"skipped: {run_dir} already holds a complete run of this config")
            return finished
    quant = _prepare_quant(rc)  # quant=<variant>: rc.model["path"] now names the quantized variant
    task = task_class(rc.task, rc.model, rc.dataset)
    if not hasattr(task, "shard"):  # tasks without dataset samples cannot be split
        refuse_unsharded_task(task.name, rc.dataset)
    if _use_cache(rc.loop.cache) and hasattr(task, "cache_key"):
        from evalharness.data.cache import CachedTask

        task = CachedTask(task, rc.paths["cache_dir"])
    done = prepare_run_dir(run_dir, rc.resolved, loop, can_resume)
    writer = RunWriter(run_dir, resume=bool(done))
    signal.signal(signal.SIGTERM, _raise_interrupt)
    reference = None
    if hasattr(task, "reference_view"):  # inference_diff: same inputs through the reference delegate first
        ref_plan = plan_delegate(task.reference_delegate)
        ref_model, reference = run_loop(
            task.reference_view(),
            lambda: load_model(rc.model["path"], ref_plan, rc.runtime["name"]),
            lambda record: None,
            rc.loop,
        )
        if reference.status != "complete":
            raise EvalHarnessError(f"reference pass stopped early: {reference.stop_reason}")
    try:
        model, result = run_loop(
            task,
            lambda: load_model(rc.model["path"], rc.plan, rc.runtime["name"], rc.runner),
            writer.append,
            loop,
            done,
        )
    finally:
        writer.close()
    _warn_delegation(rc.plan, model.coverage)
    metrics = task.evaluator.compute()
    if reference is not None:
        metrics.update(task.latency_metrics(reference.inference_ms, result.inference_ms))
    metrics["num_images"] = len(task.samples)
    metrics["num_skipped"] = len(result.skipped)
    doc = {
        "task": task.name,
        "status": result.status,
        "stop_reason": result.stop_reason,
        "started_at": started,
        "finished_at": _now(),
        "metrics": metrics,
        "latency_ms": result.latency(),
        "memory_mb": result.memory_mb,
        "skipped": result.skipped,
        "first_output_repeatable": result.first_output_repeatable,
        "resumed_samples": result.resumed,
        "throughput": {
            "loop_wall_s": result.wall_s,
            "images_per_s": (len(result.inference_ms) - result.resumed) / result.wall_s
            if result.wall_s
            else None,
            "workers": rc.loop.workers,
            "cache": task.cache.stats() if getattr(task, "cache", None) else None,
        },
        "predictions": {
            "path": os.path.basename(writer.predictions_path),
            "format": "jsonl",
            "count": writer.count,
        },
        "provenance": {
            "model": {
                "name": rc.model["name"],
                **provenance.model_info(rc.model["path"], model.inputs, model.outputs),
                "quant": quant,
            },
            "runtime": model.runtime_info(),
            "delegate": {
                **_delegate_record(rc.plan, model),
                "library": _library(rc.plan),
                "native_log": model.native_log,
            },
            **task.provenance(),
            "host": provenance.host_info(),
            **({"device": model.device} if model.device is not None else {}),  # runner=adb: the phone
            "thread_budget": budget,
            "evalharness": provenance.tool_info(),
            "config": rc.resolved,
            "overrides": list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else [],
        },
    }
    artifacts = getattr(task, "artifacts", dict)()
    for name, obj in artifacts.items():
        writer.write_json(name, obj)
    doc["artifacts"] = sorted(artifacts)
    if reference is not None:
        doc["reference"] = {
            "delegate": _delegate_record(ref_plan, ref_model),
            "latency_ms": reference.latency(),
        }
    lines = task.summary_lines(doc)
    writer.write_results(lines)
    path = writer.write_metrics(doc)
    for line in lines:
        print(line)
    print(f"metrics: {path}")
    if result.status != "complete":
        raise EvalHarnessError(f"run stopped early ({result.stop_reason}); partial results in {path}")
    if metrics.get("failed_checks") and getattr(task, "fail_on_check", False):
        raise EvalHarnessError(
            f"{task.name}: check(s) failed: {'; '.join(metrics['failed_checks'])} ({path})"
        )
    return doc


def _prepare_quant(rc) -> dict:
    from evalharness.quant import prepare_variant

    record = prepare_variant(rc.quant, rc.model, rc.dataset, rc.task["name"], rc.paths["cache_dir"])
    return record or {"name": rc.quant["name"], "recipe": None}


def _delegate_record(plan, model) -> dict:
    """What metrics.json says about a delegate that ran: its plan and what it really took."""
    return {
        "name": plan.name,
        "flags": plan.flags,
        "op_resolver": plan.op_resolver,
        "coverage": model.coverage.as_dict(),
    }


def _multirun_launcher() -> dict | None:
    """The multirun's ``hydra.launcher`` config (None for a single run), for the thread budget."""
    if _is_multirun():
        return OmegaConf.to_container(HydraConfig.get().launcher, resolve=False)
    return None


def _is_multirun() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def _use_cache(setting: str) -> bool:
    if str(setting).lower() == "auto":
        return _is_multirun()
    return str(setting).lower() == "true"


def _library(plan) -> dict | None:
    if not plan.external_path:
        return None
    from evalharness.data.manifest import sha256_file

    return {
        "path": plan.external_path,
        "sha256": sha256_file(plan.external_path),
        "options": plan.external_options,
    }


def _write_failure(run_dir: str, cfg: DictConfig, message: str) -> None:
    """A failed job leaves a record without metrics, so sweeps list it instead of dropping it."""
    from evalharness.report.writer import RunWriter

    try:
        config = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # noqa: BLE001 - the config itself may be what failed to resolve
        config = OmegaConf.to_container(cfg, resolve=False)
    RunWriter(run_dir).write_metrics(
        {
            "status": "failed",
            "error": message,
            "metrics": None,
            "finished_at": _now(),
            "provenance": {"config": config},
        }
    )


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def _app(cfg: DictConfig) -> None:
    hc = HydraConfig.get()
    run_dir = hc.runtime.output_dir
    try:
        run(cfg, run_dir)
    except EvalHarnessError as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        partial = os.path.exists(os.path.join(run_dir, "metrics.json"))
        if not partial:
            _write_failure(run_dir, cfg, message)
        print(f"error: {message}", file=sys.stderr)
        if hc.mode == RunMode.MULTIRUN:
            _failed_jobs.append(f"{hc.job.num}: {message}")
            return
        sys.exit(EXIT_PARTIAL if partial else EXIT_USER_ERROR)


_GROUP_OVERRIDE = re.compile(r"^[+]?(?P<group>[A-Za-z_][\w/]*)=(?P<value>[^()\[\]{}*]*)$")


def check_group_options(args: list[str]) -> str | None:
    """A one-line error for ``group=option`` naming no file in conf/ (Hydra's own is several lines)."""
    for arg in args:
        m = _GROUP_OVERRIDE.match(arg)
        group = m and m.group("group")
        if not group or group.startswith("hydra") or not (CONF_DIR / group).is_dir():
            continue
        valid = sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))
        for option in filter(None, (v.strip() for v in m.group("value").split(","))):
            if option not in valid and option != "null":
                close = difflib.get_close_matches(option, valid, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                return f"unknown {group} {option!r}; valid: {', '.join(valid)}.{hint}"
    return None


def main() -> None:
    from evalharness.launchers import missing_launcher_plugin

    problem = check_group_options(sys.argv[1:]) or missing_launcher_plugin(sys.argv[1:])
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)
    _app()
    if _failed_jobs:
        print(f"error: {len(_failed_jobs)} job(s) failed: " + "; ".join(_failed_jobs), file=sys.stderr)
        sys.exit(EXIT_PARTIAL)


if __name__ == "__main__":
    main()
