"""One job: an immutable run plan -> a run directory. What ``python -m evalharness`` runs per job.

The flow is one way: plan (:mod:`evalharness.config`) -> the task's live half lists and prepares
samples (:mod:`evalharness.tasks`) -> the loop invokes and times (:mod:`evalharness.loop`) -> the
task's scorer makes metrics -> the run directory gets its files (:mod:`evalharness.rundir`). What a
task or a model can do is asked through their declared abilities, never by name or ``hasattr``.
"""

from __future__ import annotations

import logging
import signal

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from evalharness.errors import ConfigError, EvalHarnessError
from evalharness.rundir.document import now

log = logging.getLogger("evalharness")


def _raise_interrupt(signum, frame):  # SIGTERM ends a run like Ctrl-C: partial results are kept
    raise KeyboardInterrupt


def is_multirun() -> bool:
    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def multirun_launcher() -> dict | None:
    """The multirun's ``hydra.launcher`` config (None for a single run), for the thread budget."""
    if is_multirun():
        return OmegaConf.to_container(HydraConfig.get().launcher, resolve=False)
    return None


def job_overrides() -> list[str]:
    """This job's command-line overrides (a multirun job's own values), for settings' provenance."""
    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def use_cache(setting: str) -> bool:
    if str(setting).lower() == "auto":
        return is_multirun()
    return str(setting).lower() == "true"


def warn_delegation(plan, coverage) -> None:
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


def delegate_record(plan, model) -> dict:
    """What metrics.json says about a delegate that ran: its plan and what it really took."""
    return {
        "name": plan.name,
        "flags": plan.flags,
        "op_resolver": plan.op_resolver,
        "coverage": model.coverage.as_dict(),
    }


def library_record(plan) -> dict | None:
    if not plan.external_path:
        return None
    from evalharness.data.manifest import sha256_file

    return {
        "path": plan.external_path,
        "sha256": sha256_file(plan.external_path),
        "options": plan.external_options,
    }


def with_quantized_variant(rp):
    """(plan running the quantized variant, ``provenance.model.quant``); ``quant=none``: unchanged."""
    from evalharness.quant import prepare_variant
    from evalharness.schema import thaw

    model = thaw(rp.model)
    record = prepare_variant(
        thaw(rp.quant), model, rp.dataset, rp.definition.reads_dataset, rp.paths["cache_dir"]
    )
    if record is None:
        return rp, {"name": rp.quant["name"], "recipe": None}
    return rp.replace(model=model), record


def run(cfg: DictConfig, run_dir: str) -> dict:
    """Run the configured task into ``run_dir``; returns the metrics.json document."""
    from evalharness.config import validate

    rp = validate(cfg, multirun_launcher(), job_overrides())
    return run_plan(rp, run_dir)


def run_plan(rp, run_dir: str) -> dict:
    """Run a validated plan into ``run_dir``; returns the metrics.json document."""
    import dataclasses

    from evalharness import provenance
    from evalharness.data.shard import Shard
    from evalharness.loop import run_loop
    from evalharness.rundir.document import run_document, write_run
    from evalharness.rundir.files import RunWriter
    from evalharness.rundir.state import claim, sweep_job_mode
    from evalharness.runtime import load_model, plan_delegate
    from evalharness.scoring import listed
    from evalharness.tasks import live_class

    started = now()
    definition, loop = rp.definition, rp.loop
    if is_multirun():  # a re-run sweep skips complete jobs (before any set-up) and resumes partial ones
        mode, finished = sweep_job_mode(run_dir, rp.config(), definition.can_resume)
        if mode == "skip":
            print(f"skipped: {run_dir} already holds a complete run of this config")
            return finished
        if mode in ("resume", "overwrite") and not (loop.resume or loop.overwrite):
            loop = dataclasses.replace(loop, **{mode: True})
    rp, quant = with_quantized_variant(rp)
    if not definition.reads_dataset and Shard.from_config(rp.dataset).count > 1:
        raise ConfigError(
            f"task={definition.name} reads no dataset samples, so dataset.shard.count>1 cannot split it; "
            f"shard {' or '.join(listed(lambda d: d.mergeable()))} runs"
        )
    task = live_class(definition)(rp.task, rp.model, rp.dataset)
    if use_cache(rp.loop.cache) and task.cacheable:
        from evalharness.data.cache import CachedTask

        task = CachedTask(task, rp.paths["cache_dir"])
    done = claim(
        run_dir, rp.config(), resume=loop.resume, overwrite=loop.overwrite, can_resume=definition.can_resume
    )
    writer = RunWriter(run_dir, resume=bool(done))
    signal.signal(signal.SIGTERM, _raise_interrupt)
    reference, ref_plan = None, None
    if (ref_pass := task.reference_pass()) is not None:  # same inputs through a reference delegate first
        ref_plan = plan_delegate(ref_pass.delegate)
        ref_model, reference = run_loop(
            ref_pass,
            lambda: load_model(rp.model["path"], ref_plan, rp.runtime["name"]),
            lambda record: None,
            rp.loop,
        )
        if reference.status != "complete":
            raise EvalHarnessError(f"reference pass stopped early: {reference.stop_reason}")
    keep = writer.append if definition.writes_predictions else (lambda record: None)
    try:
        model, result = run_loop(
            task,
            lambda: load_model(rp.model["path"], rp.plan, rp.runtime["name"], rp.runner),
            keep,
            loop,
            done,
        )
    finally:
        writer.close()
    warn_delegation(rp.plan, model.coverage)
    metrics = task.evaluator.compute()
    metrics.update(task.extra_metrics(reference and reference.inference_ms, result.inference_ms))
    metrics["num_images"] = len(task.samples)
    metrics["num_skipped"] = len(result.skipped)
    artifacts = task.artifacts()
    extra = {}
    if reference is not None:
        extra["reference"] = {
            "delegate": delegate_record(ref_plan, ref_model),
            "latency_ms": reference.latency(),
        }
    doc = run_document(
        task=definition.name,
        status=result.status,
        stop_reason=result.stop_reason,
        started_at=started,
        finished_at=now(),
        metrics=metrics,
        latency_ms=result.latency(),
        memory_mb=result.memory_mb,
        skipped=result.skipped,
        first_output_repeatable=result.first_output_repeatable,
        resumed_samples=result.resumed,
        throughput={
            "loop_wall_s": result.wall_s,
            "images_per_s": (len(result.inference_ms) - result.resumed) / result.wall_s
            if result.wall_s
            else None,
            "workers": rp.loop.workers,
            "cache": task.cache.stats() if task.cache else None,
        },
        predictions_count=writer.count,
        artifacts=list(artifacts),
        provenance={
            "model": {
                "name": rp.model["name"],
                "settings_source": rp.model_sources,
                **provenance.model_info(rp.model["path"], model.inputs, model.outputs),
                "quant": quant,
            },
            "runtime": model.runtime_info(),
            "delegate": {
                **delegate_record(rp.plan, model),
                "library": library_record(rp.plan),
                "native_log": model.native_log,
            },
            **task.provenance(),
            "host": provenance.host_info(),
            **({"device": model.device} if model.device is not None else {}),  # runner=adb: the phone
            "thread_budget": rp.thread_budget,
            "evalharness": provenance.tool_info(),
            "config": rp.config(),
            "overrides": job_overrides(),
        },
        **extra,
    )
    lines = definition.summary_lines(doc)
    path = write_run(writer, doc, lines, artifacts)
    for line in lines:
        print(line)
    print(f"metrics: {path}")
    if result.status != "complete":
        raise EvalHarnessError(f"run stopped early ({result.stop_reason}); partial results in {path}")
    failed = definition.failed_checks(metrics)
    if failed:
        raise EvalHarnessError(f"{definition.name}: check(s) failed: {'; '.join(failed)} ({path})")
    return doc
