"""Everything ``report diff`` knows about two runs, as one JSON-able dict.

The renderers (terminal, Markdown, HTML, JSON) and the gate all read this dict, so a number shown in
a table is the number a ``--fail-if`` rule tests. Rows named here (``top1``, ``AP50``,
``latency_p50``, ``size_bytes``, ``coverage``, ...) are the metric names of the gate grammar. What
is compared image by image, and the verdict, come from the task's definition
(:mod:`evalharness.tasks.discovery`): nothing here knows a task by name.
"""

from __future__ import annotations

from typing import Any, cast

from evalharness.core.documents import DiffDocument, DiffRow, JSONMap, RunSummary
from evalharness.core.numbers import delta, ratio, relative_pct
from evalharness.report.input_check import compare_inputs
from evalharness.report.presenters import headline, paired_of, verdict
from evalharness.report.run_names import side_names
from evalharness.report.runs import Comparability, definition_of, malformed
from evalharness.report.shared_images import on_shared_images
from evalharness.report.views.latency_rows import run_speedups
from evalharness.report.views.op_profile_table import speedups as op_speedups
from evalharness.rundir.reader import Run
from evalharness.stats.validity import compact
from evalharness.tasks.definition import TaskDefinition, comparer

LATENCY_STATS = ("mean", "p50", "p90", "p99", "min", "max")


def latency_values(run: Run) -> dict[str, float | None]:
    latency = run.document.latency
    figures = latency.inference.figures(LATENCY_STATS)
    values = {f"latency_{s}": figure for s, figure in zip(LATENCY_STATS, figures, strict=True)}
    values["latency_init"] = latency.init
    values["latency_first_inference"] = latency.first_inference
    return values


def model_values(run: Run) -> dict[str, Any]:
    coverage = run.provenance.delegate.coverage
    return {
        "size_bytes": run.provenance.model.bytes,
        "coverage": coverage.fraction,
        "ops_delegated": coverage.ops_delegated,
        "partitions": coverage.partitions,
    }


def _rows(va: dict[str, Any], vb: dict[str, Any], speedup: bool = False) -> list[DiffRow]:
    rows = []
    for name in [*va, *(k for k in vb if k not in va)]:
        a, b = va.get(name), vb.get(name)
        row: DiffRow = {"name": name, "a": a, "b": b, "delta": delta(a, b), "delta_pct": relative_pct(a, b)}
        if speedup:
            row["speedup"] = ratio(a, b)
        rows.append(row)
    return rows


def run_summary(run: Run) -> RunSummary:
    """The run's identity; its ``name`` alone, as no other run is beside it (:func:`side_names`
    names a pair)."""
    prov = run.provenance
    return {
        "name": side_names([run])[0],
        "label": run.label,
        "dir": run.dir,
        "status": run.status,
        "task": run.task,
        "model": prov.model.name,
        "model_sha256": prov.model.sha256,
        "delegate": prov.delegate.name,
        "runtime": f"{prov.runtime.name} {prov.runtime.version}",
        "dataset": prov.dataset.name,
        "dataset_root": prov.dataset.root,
        "num_scored": run.document.metrics.num_scored,
        "ops_on_cpu_by_type": prov.delegate.coverage.ops_on_cpu_by_type,
        "cpu": prov.host.cpu,
    }


def build_diff(
    a: Run,
    b: Run,
    comp: Comparability,
    alpha: float = 0.05,
    iou: float = 0.5,
    min_score: float | None = None,
    margin: float = 0.01,
) -> DiffDocument:
    """The full comparison of two comparable runs (``comp.refused`` must be empty); a run on a
    held-out part of the other's list (``comp.subset``) is compared on the images both scored, both
    runs' figures recomputed there, and ``paired_on`` says how many and what was left out.

    ``margin``: the equivalence margin of the verdicts (a change whose interval lies within ±margin
    is called equivalent)."""
    definition = definition_of(a)
    a, b, paired_on = on_shared_images(a, b, comp)  # a held-out part: both runs on the shared images
    with malformed(a, b):
        doc = _build_diff(definition, a, b, comp, alpha, iou, min_score, margin)
    if paired_on is not None:
        doc["paired_on"] = paired_on.as_dict()
    return doc


def _build_diff(
    definition: TaskDefinition,
    a: Run,
    b: Run,
    comp: Comparability,
    alpha: float,
    iou: float,
    min_score: float | None,
    margin: float,
) -> DiffDocument:
    # a plain dict while it is built: the paired comparison goes under the definition's own key
    names = side_names([a, b])  # each side named by what differs (variant, delegate, threads, dataset)
    doc: JSONMap = {
        "a": {**run_summary(a), "name": names[0]},
        "b": {**run_summary(b), "name": names[1]},
        "task": a.task,
        "comparability": comp.as_dict(),
        "metrics": _rows(headline(definition, a.metrics), headline(definition, b.metrics)),
        "latency": _rows(latency_values(a), latency_values(b), speedup=True),
        "model": _rows(model_values(a), model_values(b)),
        "alpha": alpha,
        "equivalence_margin": margin,
        "latency_speedup": run_speedups(a, b),
        "latency_validity": {side: compact(r.document.latency.validity) for side, r in (("a", a), ("b", b))},
    }
    if definition.abilities.writes_predictions and definition.abilities.reads_dataset:
        doc["inputs"] = compare_inputs(a, b)  # per-record input hashes; a benchmark feeds random data
    if (ops := op_speedups(a.document.metrics.op_profile, b.document.metrics.op_profile)) is not None:
        doc["op_profile"] = ops
    if (paired := comparer(definition)) is not None:
        doc[paired.key] = paired.compare(a, b, {"alpha": alpha, "iou": iou, "min_score": min_score})
    doc["verdict"] = verdict(definition, doc)
    return cast(DiffDocument, doc)


def quantities(doc: DiffDocument) -> tuple[dict[str, DiffRow], dict[str, float]]:
    """(per-run rows by name, pairwise values by name): what ``--fail-if`` rules can name."""
    rows = {r["name"]: r for section in ("metrics", "latency", "model") for r in doc[section]}
    definition = definition_of(doc)
    paired = paired_of(definition, doc)
    compared = comparer(definition)
    values = compared.pairwise(paired) if paired and compared else {}
    for name, row in ((doc.get("latency_speedup") or {}).get("stats") or {}).items():
        if row["interval"] is not None:  # e.g. speedup_p50_ci_low > 1: B faster beyond noise
            values[f"speedup_{name}_ci_low"], values[f"speedup_{name}_ci_high"] = row["interval"]
    return rows, values
