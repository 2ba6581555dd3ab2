"""The few lines every run ends with: how accurate, how fast, on what, and whether to trust it.

A reader should not need metrics.json to answer the two questions the tool exists for. The block is
made from the run's document alone (the same lines head ``results.txt``, a merged run's and a
rescored one's), so what the terminal said is what the files hold. Each line is left out rather than
guessed when the document lacks its figures (a run from an older schema, a runner that times on a
device).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalharness.report.presenters import headline_accuracy
from evalharness.report.runs import definition_of
from evalharness.report.views.quant_table import calibration_line
from evalharness.report.views.repair_view import verdict
from evalharness.stats.intervals import fmt_interval

HEADING = "== summary"


def summary_block(doc: Mapping[str, Any], run_dir: str | None = None) -> list[str]:
    """``== summary`` and its lines: what ran, accuracy, speed, delegate, status, run directory."""
    lines = [f"{HEADING}: {_what_ran(doc)}"]
    for line in (
        _accuracy(doc),
        _speed(doc),
        _latency_validity(doc),
        _delegate(doc),
        _calibrated(doc),
        _repair(doc),
        *_assumed(doc),
        _status(doc),
    ):
        if line:
            lines.append(line)
    if run_dir:
        lines.append(f"  Run:      {run_dir}")
    return lines


def _what_ran(doc: Mapping[str, Any]) -> str:
    prov = doc.get("provenance") or {}
    model = (prov.get("model") or {}).get("name") or "?"
    quant = ((prov.get("model") or {}).get("quant") or {}).get("name")
    delegate = (prov.get("delegate") or {}).get("name") or "?"
    dataset = (prov.get("dataset") or {}).get("name")
    parts = [doc.get("task") or "?", model + (f" ({quant})" if quant and quant != "none" else "")]
    parts += [f"delegate={delegate}"] + ([f"dataset={dataset}"] if dataset else [])
    return " · ".join(parts)


def _accuracy(doc: Mapping[str, Any]) -> str | None:
    """The task's headline figure with its interval and the interval's method, named."""
    metrics = doc.get("metrics") or {}
    try:
        headline = headline_accuracy(definition_of(doc), metrics)
    except Exception:  # noqa: BLE001 - a document this code cannot read has no headline to show
        return None
    if headline is None:
        return None
    name, value, interval, method = headline
    text = f"  Accuracy: {name} {value:.4f}"
    if interval:
        text += f", 95% interval {fmt_interval(interval, '.4f')} ({method})"
    scored = metrics.get("num_scored")
    if scored is not None:
        text += f"; {scored} scored of {metrics.get('num_images', scored)}"
    return text


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f} ms"


def _speed(doc: Mapping[str, Any]) -> str | None:
    """Per-image time by stage, as Ultralytics prints it, and the loop's images per second."""
    latency = (doc.get("latency_ms") or {}).get("inference") or {}
    if not latency.get("count"):
        return None
    throughput = doc.get("throughput") or {}
    stages = throughput.get("per_image_ms") or {}
    invoke = f"{_ms(latency.get('mean'))} invoke (p50 {latency.get('p50', 0):.2f})"
    if stages.get("preprocess") is not None:
        post = f"{_ms(stages.get('postprocess'))} postprocess"
        parts = [f"{_ms(stages['preprocess'])} preprocess", invoke, post]
    else:
        parts = [invoke]
    text = "  Speed:    " + ", ".join(parts) + " per image"
    rate = throughput.get("images_per_s")
    if rate:
        text += f"; {rate:.1f} img/s"
    shape = ((doc.get("provenance") or {}).get("thread_budget") or {}).get("loop") or {}
    if shape.get("shape") == "pipelined" and stages.get("preprocess") is not None:
        text += " (preprocess overlaps invoke)"
    return text


def _latency_validity(doc: Mapping[str, Any]) -> str | None:
    """Said only when the invoke latencies are not a valid measurement (too short, too few, too
    noisy, throttled: ``latency_ms.validity``), so a speed read off a 5-image run is not trusted."""
    validity = (doc.get("latency_ms") or {}).get("validity")
    if not validity or validity.get("valid"):
        return None
    text = "  Latency:  not a valid measurement (" + "; ".join(validity["problems"]) + ")"
    return text + ("" if definition_of(doc).abilities.latency_only else "; task=benchmark measures latency")


def _delegate(doc: Mapping[str, Any]) -> str | None:
    """The delegate that actually ran, how much of the graph it took, and on what device."""
    record = (doc.get("provenance") or {}).get("delegate") or {}
    if not record:
        return None
    text = f"  Delegate: {record.get('name')}"
    coverage = record.get("coverage") or {}
    delegated, total = coverage.get("ops_delegated"), coverage.get("ops_total")
    left = coverage.get("ops_on_cpu_by_type") or {}
    if total and delegated is None and sum(left.values()) == total:  # a runtime with no delegate (ONNX)
        text += f", {total} ops; {coverage.get('source')}"
    elif total:
        took = "?" if delegated is None else delegated
        text += f", {took}/{total} ops delegated"
        if coverage.get("partitions") is not None:
            text += f" in {coverage['partitions']} partition(s)"
        if left:
            text += " (left on CPU: " + ", ".join(f"{op} {n}" for op, n in sorted(left.items())) + ")"
    device = coverage.get("device") or {}
    if device.get("software_renderer"):
        text += f"; device: software renderer ({str(device.get('adapter')).split(', arch=')[0]})"
    elif device.get("adapter"):
        text += f"; device: {device['adapter']}"
    return text


def _calibrated(doc: Mapping[str, Any]) -> str | None:
    """What calibrated a quantized variant (source, count, the ids' hash), and the risk of the
    bundled set when the run fell back to it: a figure is only as good as its calibration."""
    quant = ((doc.get("provenance") or {}).get("model") or {}).get("quant") or {}
    return calibration_line(quant, doc.get("output_checks"))


def _repair(doc: Mapping[str, Any]) -> str | None:
    """A repair's held-out verdict (``quant.max_drop``): held or missed, a check or only a report."""
    quant = ((doc.get("provenance") or {}).get("model") or {}).get("quant") or {}
    return f"  Repair:   {verdict(quant['repair'])}" if quant.get("repair") else None


def _assumed(doc: Mapping[str, Any]) -> list[str]:
    """What the run took for granted (provenance.assumptions): said here, once, with the fix."""
    return [
        f"  Assumed:  {a.get('what')} = {a.get('assumed')} ({a.get('why')}; else set {a.get('fix')})"
        for a in (doc.get("provenance") or {}).get("assumptions") or []
    ]


def _status(doc: Mapping[str, Any]) -> str:
    """The run's status, and the checks that failed it (exit 1) although every sample was scored."""
    status = doc.get("status") or "?"
    reason = doc.get("stop_reason") or doc.get("error")
    text = f"  Status:   {status}" + (f" ({reason})" if reason and status != "complete" else "")
    failed = (doc.get("metrics") or {}).get("failed_checks") or []
    return text + (f"; failed check(s): {'; '.join(map(str, failed))}" if failed else "")
