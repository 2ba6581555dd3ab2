"""What a finished loop becomes: scored metrics, output checks and moved inputs that make a run
``invalid``, the metrics.json document and results.txt, and the exit class (RunStopped) of a run
that did not complete or failed a check."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from evalharness.core.documents import RunDocument
from evalharness.core.errors import RunStopped
from evalharness.core.escape import terminal
from evalharness.report.summary import results_lines, summary_block
from evalharness.report.views.op_profile_table import top_lines as op_profile_lines
from evalharness.report.views.repair_view import failed_checks
from evalharness.run.execute import Ran
from evalharness.run.hydra_access import job_overrides
from evalharness.run.identity import moved_inputs
from evalharness.run.provenance import delegate_record, run_provenance
from evalharness.rundir.document import now
from evalharness.settings.groups import RunSettings
from evalharness.tasks.definition import failed_checks as task_failed_checks
from evalharness.tasks.metrics import result_problems

if TYPE_CHECKING:
    from evalharness.core.interrupts import Interrupted
    from evalharness.loop.engine import LoopResult
    from evalharness.runtime import DelegatePlan
    from evalharness.runtime.contract import Coverage
    from evalharness.tasks.live import Task

log = logging.getLogger("evalharness")


def warn_delegation(plan: DelegatePlan, coverage: Coverage) -> None:
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


def record_config(run_dir: str, settings: RunSettings) -> None:
    """``.hydra/config.yaml`` (the resolved config) and ``.hydra/overrides.yaml``, written only once
    the run has claimed its directory (Hydra's own copies are off: conf/hydra/default.yaml)."""
    from evalharness.core.atomic_io import atomic_write_text

    folder = os.path.join(run_dir, ".hydra")
    text = OmegaConf.to_yaml(OmegaConf.create(settings.config()))
    atomic_write_text(os.path.join(folder, "config.yaml"), text)
    atomic_write_text(
        os.path.join(folder, "overrides.yaml"), OmegaConf.to_yaml(OmegaConf.create(job_overrides()))
    )


def record_interrupt(
    run_dir: str, config: dict[str, Any], exc: Interrupted, where: str, kept: tuple[int, str] | None = None
) -> RunStopped:
    """A signal outside the measured loop (start-up, scoring, the bootstrap, TIDE's child, a
    ``loop.parallel`` parent): the children end first (a shard records its own partial run), then the
    ``interrupted`` record names the predictions kept, which ``loop.resume=true`` continues from.
    Returns the exit-1 error to raise."""
    from evalharness.core.interrupts import stop_children
    from evalharness.rundir.document import write_failure
    from evalharness.rundir.files import PREDICTIONS_FILE, read_predictions

    stop_children()
    if kept is None:  # a run's own predictions (loop.parallel counts its shards')
        kept = len(read_predictions(os.path.join(run_dir, PREDICTIONS_FILE))), PREDICTIONS_FILE
    message = f"interrupted by {exc.signal} {where}; {kept[0]} prediction(s) kept ({kept[1]})"
    path = write_failure(run_dir, message, config, job_overrides(), kept)
    return RunStopped(f"{message}, recorded in {path}; loop.resume=true continues the run")


def invalid_reasons(settings: RunSettings, checks: Mapping[str, Any]) -> list[str]:
    """Output checks that make the run ``invalid`` unless the loop settings allow them."""
    from evalharness.loop.checks import failures

    return failures(checks, not settings.loop.allow_nonfinite, not settings.loop.allow_constant_outputs)


def write_op_profile(run_dir: str, profile: Mapping[str, Any]) -> None:
    """``op_profile.csv`` (one row per op) and ``op_profile.model_explorer.json`` (node data)."""
    from evalharness.core.atomic_io import atomic_write_text
    from evalharness.report.views.op_profile_table import CSV_FILE, EXPLORER_FILE, csv_text, model_explorer

    atomic_write_text(os.path.join(run_dir, CSV_FILE), csv_text(profile))
    atomic_write_text(os.path.join(run_dir, EXPLORER_FILE), json.dumps(model_explorer(profile), indent=1))


def scored_metrics(task: Task, result: LoopResult, reference_ms: Any) -> dict[str, Any]:
    """The task's metrics of the samples the loop scored. A loop that stopped before it scored any
    sample (a native failure at the first invoke, an interrupt) has none: the scorer is not asked
    (COCO's refuses an empty set of images), ``num_scored`` 0 says how far it got."""
    if result.status != "complete" and not result.inference_ms:
        return {"num_scored": 0}
    metrics = task.evaluator.compute()
    metrics.update(task.extra_metrics(reference_ms, result.inference_ms))
    return metrics


def record_run(
    settings: RunSettings, task: Task, quant: dict[str, Any], started: str, ran: Ran, identity: dict[str, Any]
) -> RunDocument:
    """Score, build and write the run's files; raise RunStopped when it did not complete."""
    from evalharness.rundir.document import run_document, write_run
    from evalharness.rundir.metrics_file import parse_document

    definition, writer, model, result = settings.definition, ran.writer, ran.model, ran.result
    reference = ran.reference[2] if ran.reference else None
    warn_delegation(settings.delegate_plan, model.coverage)
    metrics = scored_metrics(task, result, reference.inference_ms if reference else None)
    if ran.start_up:
        metrics["compile_cache"] = ran.start_up
    if ran.op_profile:
        metrics["op_profile"] = ran.op_profile
    metrics["num_images"] = len(task.samples)
    if repair_failed := failed_checks(quant):  # quant.max_drop could not be held: exit 1
        metrics["failed_checks"] = [*(metrics.get("failed_checks") or []), *repair_failed]
    metrics["num_skipped"] = len(result.skipped)
    checks = result.checks.record([o.name for o in model.outputs])
    prov = task.provenance()  # once: its hashes and file manifest serve the identity check and the record
    invalid = [*invalid_reasons(settings, checks), *moved_inputs(settings, task, prov, identity)]
    invalid += result_problems(definition.metrics, metrics)
    status, stop_reason = result.status, result.stop_reason
    if invalid and status == "complete":
        status, stop_reason = "invalid", "; ".join(invalid)
    for problem in checks["failed"]:
        log.warning("output check: %s", problem)
    artifacts = task.artifacts()
    reference_record = None
    if ran.reference is not None:
        ref_plan, ref_model, ref_result = ran.reference
        reference_record = {
            "delegate": delegate_record(ref_plan, ref_model),
            "latency_ms": ref_result.latency(),
        }
    doc = run_document(
        task=definition.name,
        status=status,
        stop_reason=stop_reason,
        started_at=started,
        finished_at=now(),
        metrics=metrics,
        latency_ms={**result.latency(), "validity": result.validity(definition.rules().latency)},
        memory_mb=result.memory_mb,
        skipped=result.skipped,
        first_output_repeatable=result.first_output_repeatable,
        resumed_samples=result.resumed,
        throughput={
            "loop_wall_s": result.wall_s,
            "images_per_s": (len(result.inference_ms) - result.resumed) / result.wall_s
            if result.wall_s
            else None,
            "workers": result.shape.record()["workers"] if result.shape else settings.loop.workers,
            "cache": task.cache.stats() if task.cache else None,
            "resize": settings.loop.resize,
            "batch": result.batch,
            # mean ms per image of each stage; preprocess overlaps invoke when pipelined
            "per_image_ms": result.stage_ms(),
        },
        predictions_count=writer.count,
        artifacts=list(artifacts),
        provenance=run_provenance(settings, prov, model, quant, result.shape),
        output_checks=checks,
        reference=reference_record,
    )
    document = parse_document(doc)
    lines = results_lines(definition, document)
    if status == "invalid":
        lines = [f"INVALID: {stop_reason}", *lines]
    if ran.op_profile:
        write_op_profile(writer.run_dir, ran.op_profile)
        lines += op_profile_lines(ran.op_profile)
    block = summary_block(document, writer.run_dir)
    path = write_run(writer, document, [*block, "", *lines], artifacts)  # results.txt escapes its lines
    for line in [*lines, *block]:  # model, label and file names come from files: controls shown
        print(terminal(line))
    print(f"metrics: {path}")
    if status == "invalid":
        raise RunStopped(f"run is invalid ({stop_reason}); its numbers are in {path} but not to be trusted")
    if status != "complete":
        raise RunStopped(f"run stopped early ({stop_reason}); partial results in {path}")
    failed = task_failed_checks(definition, metrics)
    if failed:
        raise RunStopped(f"{definition.name}: check(s) failed: {'; '.join(failed)} ({path})")
    return doc
