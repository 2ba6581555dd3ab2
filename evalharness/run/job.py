"""One job: an immutable run plan -> a run directory. What ``python -m evalharness`` runs per job.

The flow is one way: plan (:mod:`evalharness.run.settings`) -> the task's live half lists and
prepares samples (``tasks/<task>/live.py``) -> the loop invokes and times
(:mod:`evalharness.loop.engine`) -> the task's scorer makes metrics -> the run directory gets its
files (:mod:`evalharness.rundir`). What a task or a model can do is asked through their declared
abilities, never by name or ``hasattr``.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import NamedTuple

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from evalharness.core.boundary import debug, describe
from evalharness.core.errors import ConfigError, EvalHarnessError, RunStopped
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
    if not plan.offloads or coverage["ops_delegated"] == coverage["ops_total"]:
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
        "cache": model.cache_record(),  # schema 3: cold/warm compile caches (runtime/cache.py)
    }


def library_record(plan) -> dict | None:
    if not plan.external_path:
        return None
    from evalharness.core.checksum import sha256_file

    return {
        "path": plan.external_path,
        "sha256": sha256_file(plan.external_path),
        "options": plan.external_options,
    }


def with_quantized_variant(rp):
    """(plan running the quantized variant, ``provenance.model.quant``); ``quant=none``: unchanged."""
    from evalharness.core.schema import thaw
    from evalharness.run.variants import prepare_variant

    model = thaw(rp.model)
    record = prepare_variant(
        thaw(rp.quant), model, rp.dataset, rp.definition.reads_dataset, rp.paths["cache_dir"]
    )
    if record is None:
        return rp, {"name": rp.quant["name"], "recipe": None}
    return rp.replace(model=model), record


def run_provenance(rp, task_provenance: dict, model, quant: dict, loop_shape=None) -> dict:
    """``provenance`` of metrics.json: what ran (model, runtime, delegate and what it took, host,
    device), on what (the task's dataset/labels/preprocessing) and with which config."""
    from evalharness.run import provenance

    return {
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
        **task_provenance,
        "host": provenance.host_info(),
        **({"device": model.device} if model.device is not None else {}),  # runner=adb: the phone
        "thread_budget": {**rp.thread_budget, "loop": loop_shape.record() if loop_shape else None},
        "evalharness": provenance.tool_info(),
        "config": rp.config(),
        "overrides": job_overrides(),
    }


def run(cfg: DictConfig, run_dir: str) -> dict:
    """Run the configured task into ``run_dir``; returns the metrics.json document."""
    from evalharness.run.settings import validate

    rp = validate(cfg, multirun_launcher(), job_overrides())
    return run_plan(rp, run_dir)


def record_config(run_dir: str, rp) -> None:
    """``.hydra/config.yaml`` (the resolved config) and ``.hydra/overrides.yaml``, written only once
    the run has claimed its directory (Hydra's own copies are off: conf/hydra/default.yaml)."""
    from evalharness.core.atomic_io import atomic_write_text

    folder = os.path.join(run_dir, ".hydra")
    atomic_write_text(os.path.join(folder, "config.yaml"), OmegaConf.to_yaml(OmegaConf.create(rp.config())))
    atomic_write_text(
        os.path.join(folder, "overrides.yaml"), OmegaConf.to_yaml(OmegaConf.create(job_overrides()))
    )


def run_identity(rp, task, prov: dict) -> dict:
    """The bytes a result depends on, recorded when a run starts so that a resume can refuse to mix
    inputs that changed (see :mod:`evalharness.rundir.state`)."""
    from evalharness.core.checksum import optional_sha256
    from evalharness.data.manifest import stat_digest
    from evalharness.runtime.litert import runtime_info

    dataset = prov.get("dataset") or {}
    library = library_record(rp.plan)
    return {
        "model_sha256": optional_sha256(rp.model["path"]),  # not a file: the load says so
        "delegate_library_sha256": library and library["sha256"],
        "runtime_version": runtime_info(rp.runtime["name"])["version"],
        "labels_sha256": (prov.get("labels") or {}).get("sha256"),
        "ground_truth_sha256": dataset.get("ground_truth_sha256"),
        "dataset_manifest_sha256": dataset.get("manifest_sha256"),
        "dataset_files_stat": stat_digest(task.sample_files()),
    }


def prepare(rp, run_dir: str):
    """Everything before the run directory is claimed: (plan, quant record, task, loop settings), or
    the finished document of a sweep job that is skipped. Refusals here write nothing."""
    import dataclasses

    from evalharness.data.shard import Shard
    from evalharness.run import start_up as cache_runs
    from evalharness.rundir.state import sweep_job_mode
    from evalharness.tasks.discovery import listed, live_class

    definition, loop = rp.definition, rp.loop
    if is_multirun() and not (loop.resume or loop.overwrite):
        # a re-run sweep skips complete jobs (before any set-up) and resumes partial ones
        mode, finished = sweep_job_mode(run_dir, rp.config(), definition.can_resume)
        if mode == "skip":
            print(f"skipped: {run_dir} already holds a complete run of this config")
            return finished
        if mode in ("resume", "overwrite"):
            loop = dataclasses.replace(loop, **{mode: True})
    rp, quant = with_quantized_variant(rp)
    if not definition.reads_dataset and Shard.from_config(rp.dataset).count > 1:
        raise ConfigError(
            f"task={definition.name} reads no dataset samples, so dataset.shard.count>1 cannot split it; "
            f"shard {' or '.join(listed(lambda d: d.mergeable()))} runs"
        )
    cache_runs.check(definition.start_up_passes(), rp.plan, HydraConfig.initialized())
    task = live_class(definition)(rp.task, rp.model, rp.dataset)
    if use_cache(rp.loop.cache) and task.cacheable:
        from evalharness.data.cache import CachedTask

        task = CachedTask(task, rp.paths["cache_dir"])
    return rp, quant, task, loop


def use_resize(choice: str) -> None:
    """``loop.resize``: the exact tool resize by LiteRT's reference kernel, or the numpy port."""
    from evalharness.data.preprocess import set_exact_resize
    from evalharness.runtime.native_resize import shared

    set_exact_resize(shared() if choice == "native" else None)


def run_plan(rp, run_dir: str) -> dict:
    """Run a validated plan into ``run_dir``; returns the metrics.json document.

    Before the directory is claimed a failure writes nothing there; after, a failure before the loop
    leaves a ``failed`` record; once the loop ran, whatever happens the run's metrics.json says how
    far it got and :class:`RunStopped` (exit 1) is raised when it did not complete.
    """
    from evalharness.rundir.document import write_failure
    from evalharness.rundir.state import claim

    started = now()
    use_resize(rp.loop.resize)
    prepared = prepare(rp, run_dir)
    if isinstance(prepared, dict):
        return prepared
    rp, quant, task, loop = prepared
    definition = rp.definition
    identity = run_identity(rp, task, task.provenance())
    done = claim(
        run_dir,
        rp.config(),
        identity,
        resume=loop.resume,
        overwrite=loop.overwrite,
        can_resume=definition.can_resume,
    )
    record_config(run_dir, rp)
    try:
        ran = execute(rp, task, loop, done, run_dir)
    except Exception as exc:
        write_failure(run_dir, describe(exc), rp.config(), job_overrides())
        raise
    try:
        return record_run(rp, task, quant, started, ran, identity)
    except RunStopped:
        raise
    except Exception as exc:
        if debug():
            raise
        write_failure(run_dir, describe(exc), rp.config(), job_overrides())
        raise RunStopped(f"the run could not be recorded: {describe(exc)}") from exc


class Ran(NamedTuple):
    """What the loops produced: the predictions writer, the measured pass, the reference pass."""

    writer: object
    model: object
    result: object
    reference: tuple | None  # (plan, model, loop result) of the reference pass, if the task has one
    start_up: dict | None = None  # cold/warm passes (metrics.compile_cache), if the task asked for them


def execute(rp, task, loop, done: list[dict], run_dir: str) -> Ran:
    """The cold/warm passes and the reference pass (if the task has them) and the measured loop."""
    from evalharness.loop.engine import run_loop
    from evalharness.run.start_up import measure
    from evalharness.rundir.files import RunWriter
    from evalharness.runtime import load_model, plan_delegate

    signal.signal(signal.SIGTERM, _raise_interrupt)
    start_up = measure(rp.definition.start_up_passes(), job_overrides(), run_dir)
    writer = RunWriter(run_dir, resume=bool(done))
    reference = None
    if (ref_pass := task.reference_pass()) is not None:  # same inputs through a reference delegate first
        ref_plan = plan_delegate(ref_pass.delegate)
        ref_model, ref_result = run_loop(
            ref_pass,
            lambda: load_model(rp.model["path"], ref_plan, rp.runtime["name"]),
            lambda record: None,
            rp.loop,
        )
        if ref_result.status != "complete":
            raise EvalHarnessError(f"reference pass stopped early: {ref_result.stop_reason}")
        reference = (ref_plan, ref_model, ref_result)
    keep = writer.append if rp.definition.writes_predictions else (lambda record: None)
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
    return Ran(writer, model, result, reference, start_up)


def invalid_reasons(rp, checks: dict) -> list[str]:
    """Output checks that make the run ``invalid`` unless the loop settings allow them."""
    from evalharness.loop.checks import failures

    return failures(checks, not rp.loop.allow_nonfinite, not rp.loop.allow_constant_outputs)


def moved_inputs(rp, task, prov: dict, identity: dict) -> list[str]:
    """What changed on disk while the run ran (the model file, the sample files): such a result
    mixes two inputs and is ``invalid``."""
    from evalharness.rundir.state import identity_differences

    now_ = run_identity(rp, task, prov)
    watched = ("model_sha256", "dataset_files_stat", "labels_sha256", "ground_truth_sha256")
    changed = identity_differences({k: identity[k] for k in watched}, {k: now_[k] for k in watched})
    return [f"{', '.join(changed)} changed while the run ran"] if changed else []


def record_run(rp, task, quant, started: str, ran: Ran, identity: dict) -> dict:
    """Score, build and write the run's files; raise RunStopped when it did not complete."""
    from evalharness.rundir.document import run_document, write_run

    definition, writer, model, result = rp.definition, ran.writer, ran.model, ran.result
    reference = ran.reference[2] if ran.reference else None
    warn_delegation(rp.plan, model.coverage)
    metrics = task.evaluator.compute()
    metrics.update(task.extra_metrics(reference and reference.inference_ms, result.inference_ms))
    if ran.start_up:
        metrics["compile_cache"] = ran.start_up
    metrics["num_images"] = len(task.samples)
    metrics["num_skipped"] = len(result.skipped)
    checks = result.checks.record([o.name for o in model.outputs])
    prov = task.provenance()  # once: its hashes and file manifest serve the identity check and the record
    invalid = [*invalid_reasons(rp, checks), *moved_inputs(rp, task, prov, identity)]
    status, stop_reason = result.status, result.stop_reason
    if invalid and status == "complete":
        status, stop_reason = "invalid", "; ".join(invalid)
    for problem in checks["failed"]:
        log.warning("output check: %s", problem)
    artifacts = task.artifacts()
    extra = {}
    if ran.reference is not None:
        ref_plan, ref_model, _ = ran.reference
        extra["reference"] = {
            "delegate": delegate_record(ref_plan, ref_model),
            "latency_ms": reference.latency(),
        }
    doc = run_document(
        task=definition.name,
        status=status,
        stop_reason=stop_reason,
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
            "workers": result.shape.record()["workers"] if result.shape else rp.loop.workers,
            "cache": task.cache.stats() if task.cache else None,
            "resize": rp.loop.resize,
            "batch": result.batch,
        },
        predictions_count=writer.count,
        artifacts=list(artifacts),
        provenance=run_provenance(rp, prov, model, quant, result.shape),
        output_checks=checks,
        **extra,
    )
    lines = definition.summary_lines(doc)
    if status == "invalid":
        lines = [f"INVALID: {stop_reason}", *lines]
    path = write_run(writer, doc, lines, artifacts)
    for line in lines:
        print(line)
    print(f"metrics: {path}")
    if status == "invalid":
        raise RunStopped(f"run is invalid ({stop_reason}); its numbers are in {path} but not to be trusted")
    if status != "complete":
        raise RunStopped(f"run stopped early ({stop_reason}); partial results in {path}")
    failed = [*definition.failed_checks(metrics), *task.failed_checks()]
    if failed:
        raise RunStopped(f"{definition.name}: check(s) failed: {'; '.join(failed)} ({path})")
    return doc
