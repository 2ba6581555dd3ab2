"""The one builder of a run's summary lines: the task's results lines (``results.txt``, what a run,
a merge and ``report merge`` print) and the ``== summary`` block that heads a live run's.

A reader should not need metrics.json to answer the two questions the tool exists for: how
accurate, how fast, on what, and whether to trust it. Every line is made from the typed document
alone (:class:`evalharness.rundir.metrics_file.Document`), so what the terminal said is what the
files hold. Each summary line is left out rather than guessed when the document lacks its figures (a
run from an older schema, a runner that times on a device). The task's lines come from its declared
metrics (:mod:`evalharness.report.presenters`) and its view, which may extend them.
"""

from __future__ import annotations

from evalharness.report.presenters import beside_headline, headline_accuracy, metric_lines
from evalharness.report.runs import definition_of
from evalharness.report.views.repair_view import verdict
from evalharness.rundir.json_fields import JSONMap
from evalharness.rundir.metrics_file import Document
from evalharness.rundir.provenance_record import QuantRecord
from evalharness.stats.intervals import fmt_interval
from evalharness.tasks.definition import TaskDefinition, view_of

HEADING = "== summary"


def results_lines(definition: TaskDefinition, document: Document) -> list[str]:
    """The ``results.txt`` lines (and what the run prints): a line per declared metric, the interval
    line of those that have one, then whatever the task's view makes of them. A run that stopped
    before it scored a sample has no metric to show: one line says so (no view is asked)."""
    if document.metrics.num_scored == 0:
        return ["no sample scored: the run stopped before its first result"]
    return view_of(definition).summary_lines(document, metric_lines(definition, document.metrics))


def summary_block(document: Document, run_dir: str | None = None) -> list[str]:
    """``== summary`` and its lines: what ran, accuracy, speed, delegate, status, run directory."""
    lines = [f"{HEADING}: {_what_ran(document)}"]
    for line in (
        _accuracy(document),
        _nms_ties(document),
        _speed(document),
        _latency_validity(document),
        _delegate(document),
        calibration_line(document.provenance.model.quant, document.output_checks),
        _repair(document),
        *_assumed(document),
        _status(document),
    ):
        if line:
            lines.append(line)
    if run_dir:
        lines.append(f"  Run:      {run_dir}")
    return lines


def _what_ran(doc: Document) -> str:
    model, delegate, dataset = doc.provenance.model, doc.provenance.delegate, doc.provenance.dataset
    quant = model.quant.name
    parts = [doc.task or "?", (model.name or "?") + (f" ({quant})" if quant and quant != "none" else "")]
    parts += [f"delegate={delegate.name or '?'}"] + ([f"dataset={dataset.name}"] if dataset.name else [])
    parts += [f"split={dataset.dataset_split}"] if dataset.dataset_split else []
    return " · ".join(parts)


def _accuracy(doc: Document) -> str | None:
    """The task's headline figure with its interval and the interval's method, named; then the
    other headline figures the run holds (a seg model's mask AP) with theirs."""
    try:
        definition = definition_of(doc)
        headline = headline_accuracy(definition, doc.metrics)
        others = beside_headline(definition, doc.metrics)
    except Exception:  # noqa: BLE001 - a document this code cannot read has no headline to show
        return None
    if headline is None:
        return None
    name, value, interval, method = headline
    text = f"  Accuracy: {name} {value:.4f}"
    if interval:
        text += f", 95% interval {fmt_interval(interval, '.4f')} ({method})"
    for title, number, also in others:  # a seg or pose model's mask or keypoint AP
        text += f"; {title} {number:.4f}" + (f" {fmt_interval(also, '.4f')}" if also else "")
    scored = doc.metrics.num_scored
    if scored is not None:
        images = doc.metrics.num_images
        text += f"; {scored} scored of {scored if images is None else images}"
    return text


def _nms_ties(doc: Document) -> str | None:
    """Said only when equal scores decided what NMS kept (a quantized score takes a few values), so
    a figure that the order of ties moves is never read as if nothing but the model decided it."""
    ties = doc.metrics.nms_ties
    if ties is None or not ties.suppressions:
        return None
    scored = doc.metrics.num_scored
    return (
        f"  NMS ties: {ties.images} of {'?' if scored is None else scored} images kept one of two "
        f"overlapping detections of equal score ({ties.suppressions} times; a quantized score); "
        "the other order of equal scores would keep the other one"
    )


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f} ms"


def _speed(doc: Document) -> str | None:
    """Per-image time by stage, as Ultralytics prints it, and the loop's images per second."""
    latency, throughput = doc.latency.inference, doc.throughput
    if not latency.count:
        return None
    preprocess = throughput.stage_ms("preprocess")
    invoke = f"{_ms(latency.mean)} invoke (p50 {latency.p50 or 0:.2f})"
    if preprocess is not None:
        post = f"{_ms(throughput.stage_ms('postprocess'))} postprocess"
        parts = [f"{_ms(preprocess)} preprocess", invoke, post]
    else:
        parts = [invoke]
    text = "  Speed:    " + ", ".join(parts) + " per image"
    if throughput.images_per_s:
        text += f"; {throughput.images_per_s:.1f} img/s"
    if doc.provenance.loop_shape == "pipelined" and preprocess is not None:
        text += " (preprocess overlaps invoke)"
    elif doc.provenance.loop_shape == "phased" and preprocess is not None:
        text += f" (preprocess on {throughput.workers or 1} threads at once, between the invokes)"
    elif (lanes := doc.provenance.loop_lanes) > 1:
        text += f" ({lanes} instances of the model side by side)"
    return text


def _latency_validity(doc: Document) -> str | None:
    """Said only when the invoke latencies are not a valid measurement (too short, too few, too
    noisy, throttled: ``latency_ms.validity``), so a speed read off a 5-image run is not trusted."""
    if not doc.latency.validity or doc.latency.valid:
        return None
    text = "  Latency:  not a valid measurement (" + "; ".join(doc.latency.problems) + ")"
    return text + ("" if definition_of(doc).abilities.latency_only else "; task=benchmark measures latency")


def _delegate(doc: Document) -> str | None:
    """The delegate that actually ran, how much of the graph it took, and on what device."""
    record = doc.provenance.delegate
    if not record.raw:
        return None
    text = f"  Delegate: {record.name}"
    fp16 = record.flags.get("gpu_precision_loss_allowed")  # the GPU's precision: a result depends on it
    if isinstance(fp16, bool):
        text += ", fp16 allowed" if fp16 else ", fp32 (fp16 not allowed)"
    coverage = record.coverage
    delegated, total = coverage.ops_delegated, coverage.ops_total
    left = coverage.ops_on_cpu_by_type or {}
    if total and delegated is None and sum(left.values()) == total:  # a runtime with no delegate (ONNX)
        text += f", {total} ops; {coverage.source}"
    elif total:
        took = "?" if delegated is None else delegated
        text += f", {took}/{total} ops delegated"
        if coverage.partitions is not None:
            text += f" in {coverage.partitions} partition(s)"
        if left:
            text += " (left on CPU: " + ", ".join(f"{op} {n}" for op, n in sorted(left.items())) + ")"
    device = coverage.device
    if device.get("software_renderer"):
        text += f"; device: software renderer ({str(device.get('adapter')).split(', arch=')[0]})"
    elif device.get("adapter"):
        text += f"; device: {device['adapter']}"
    return text


def clipped(checks: JSONMap | None) -> str | None:
    """What the run measured of a clipped range: the integer outputs that reached their type's top
    value, on how many of the scored samples (``output_checks``; None: none did)."""
    checks = checks or {}
    n = checks.get("samples") or 0
    hit = [o for o in checks.get("outputs") or [] if o.get("at_max_samples")]
    if not n or not hit:
        return None
    parts = [f"{o['name']} on {o['at_max_samples']} of {n}" for o in hit]
    text = "measured: integer output at its top value (" + ", ".join(parts) + " images)"
    if any(2 * o["at_max_samples"] >= n for o in hit):
        text += ", most of them: if calibration clipped its range, the top answers tie there (explain)"
    return text


def calibration_line(quant: QuantRecord, checks: JSONMap | None = None) -> str | None:
    """The summary's ``Calibrated:`` line of ``provenance.model.quant``: source, count, the ids'
    hash, for the bundled fallback its size and risk (the choice made by
    :mod:`evalharness.transforms.calibration_choice`), and what the run measured of a clipped output range
    (``checks``: the run's ``output_checks``); None: nothing was calibrated."""
    cal = quant.calibration
    if cal is None:
        return None
    ids = (cal.manifest_sha256 or "?")[:12]
    choice, count = cal.choice, cal.count
    if cal.source == "dataset":
        what = f"{count} images of the dataset, not scored (the run reports on the rest)"
    else:
        what = f"{count} images from quant.calibration.roots ({cal.name or 'roots'})"
    text = f"  Calibrated: {what}; ids sha256 {ids}"
    if choice.chosen == "bundled" and (count or 0) < (choice.min_dataset_images or 0):
        text += f"; not a slice of the dataset because {choice.reason}; risk: {choice.risk}"
        text += "; calibrate on images like yours: quant.calibration.roots=[DIR]"
    measured = clipped(checks)
    return text + (f"; {measured}" if measured else "")


def _repair(doc: Document) -> str | None:
    """A repair's held-out verdict (``quant.max_drop``): held or missed, a check or only a report."""
    repair = doc.provenance.model.quant.repair
    return f"  Repair:   {verdict(repair)}" if repair else None


def _assumed(doc: Document) -> list[str]:
    """What the run took for granted (provenance.assumptions): said here, once, with the fix."""
    return [
        f"  Assumed:  {a.what} = {a.assumed} ({a.why}; else set {a.fix})" for a in doc.provenance.assumptions
    ]


def _status(doc: Document) -> str:
    """The run's status, and the checks that failed it (exit 1) although every sample was scored."""
    status = doc.status
    reason = doc.stop_reason or doc.error
    text = f"  Status:   {status}"
    scored, listed = doc.metrics.num_scored, doc.metrics.num_images
    if status == "partial" and scored is not None and listed is not None:  # how far it got
        text += f", {scored} of {listed} scored"
    text += f" ({reason})" if reason and status != "complete" else ""
    failed = doc.metrics.failed_checks
    return text + (f"; failed check(s): {'; '.join(failed)}" if failed else "")
