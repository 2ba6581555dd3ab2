"""The quantization tables of a ``quant=...`` sweep, in the shape of TFLite's model-optimization guide.

Table 1: one row per (delegate, ..., variant): the task's sweep metrics (its metrics declared
``sweep``: top-1/top-5, AP/AP50, a plug-in's own), their change against the float model
(``quant=none`` with the same other parameters), latency mean/p50, size, delegation coverage, and the
task's own sample-by-sample agreement with the float model (``Comparison.agreement``: top-1
agreement with McNemar's exact p, the box-match rate, ...), so a 0.02 drop says whether it is beyond
chance on this many samples. Table 2: float vs int8 vs int16x8 (16-bit activations), one row per
other-parameter group. Failed jobs stay in both tables with their error. Reads run files and task
definitions only (no runtime import).
"""

from __future__ import annotations

from typing import Any

from evalharness.core.errors import EvalHarnessError
from evalharness.core.numbers import delta, fmt
from evalharness.core.tables import Section
from evalharness.report.presenters import sweep_metrics, sweep_values
from evalharness.report.runs import Comparability, ReportError, comparability, definition_of
from evalharness.report.shared_images import on_shared_images, shared_note
from evalharness.rundir.reader import Run
from evalharness.stats.paired import format_p
from evalharness.tasks.comparison import Comparison
from evalharness.tasks.definition import TaskDefinition, comparer

FLOAT = "none"
SCORED = ("complete", "partial")


def variant(row: dict[str, Any]) -> str:
    return row.get("quant") or FLOAT  # a job without a quant override ran the float model


def _float_row(rows: list[dict[str, Any]], row: dict[str, Any], others: list[str]) -> dict[str, Any] | None:
    for r in rows:
        if variant(r) == FLOAT and all(r.get(k) == row.get(k) for k in others):
            return r
    return None


def runs_of(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """Job name -> its run (:func:`evalharness.report.commands.sweep.collect` read each document once)."""
    return {job["run"]: job["doc"] for job in jobs if job["doc"] is not None}


def quant_metrics(definition: TaskDefinition, rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """The metrics the quantization tables show: the task's sweep metrics that some row holds (a
    seg model's ``segm_AP``, never an empty column of it in a box model's table)."""
    return tuple(m for m in sweep_metrics(definition) if any(m in r for r in rows))


def add_quant_columns(jobs: list[dict[str, Any]], rows: list[dict[str, Any]], keys: list[str]) -> list[str]:
    """Change against the float row (``d_<metric>_vs_float``) and the task's agreement with it in
    every scored row that has a scored float row with the same other values; returns the columns."""
    others = [k for k in keys if k != "quant"]
    runs, columns = runs_of(jobs), []
    for row in rows:
        base = _float_row(rows, row, others)
        if base is None or base is row or row["status"] not in SCORED or base["status"] not in SCORED:
            continue  # no float row, not scored, or the float row itself: a run is never compared with itself
        run_float, run = runs[base["run"]], runs[row["run"]]
        try:
            definition = definition_of(run)
        except EvalHarnessError:
            continue
        try:  # a held-out part (calibrated on the rest): both runs read on the images both scored
            run_float, run, paired_on = on_shared_images(run_float, run, _comparable(run_float, run))
        except EvalHarnessError as exc:  # other images: no Δ, a note says why
            row["vs_float_refused"] = str(exc).removeprefix("runs are not comparable: ")
            continue
        float_values, values = base, row
        if paired_on is not None:  # the rows hold each run's own figures: the Δ is of the recomputed ones
            row["vs_float_paired_on"] = paired_on.as_dict()
            float_values, values = (sweep_values(definition, r.metrics) for r in (run_float, run))
        for metric in quant_metrics(definition, [base, row]):
            row[f"d_{metric}_vs_float"] = delta(float_values.get(metric), values.get(metric))
            columns.append(f"d_{metric}_vs_float")
        try:
            paired = comparer(definition)
            agreement = paired.agreement(run_float, run) if paired else None
        except (EvalHarnessError, KeyError):
            agreement = None
        if paired and agreement and agreement.get("value") is not None:
            value_key, p_key = paired.agreement_columns
            row.update({value_key: agreement["value"], p_key: agreement.get("p")})
            row.update(agreement_name=agreement["name"], paired_images=agreement.get("samples"))
            columns += [value_key, p_key]
            if agreement.get("interval"):  # the paired interval of the headline's change (report diff's)
                row["d_interval_low"], row["d_interval_high"] = agreement["interval"]
                columns += ["d_interval_low", "d_interval_high"]
    return list(dict.fromkeys(columns))


def _comparable(run_float: Run, run: Run) -> Comparability:
    """The pair's comparability, refused as :class:`ReportError` (what ``report diff`` refuses)."""
    comp = comparability(run_float, run)
    if comp.refused:
        raise ReportError("; ".join(comp.refused))
    return comp


def _num(value: Any, spec: str) -> str:
    return fmt(value, spec, missing="")


def _interval(row: dict[str, Any]) -> str:
    low, high = row.get("d_interval_low"), row.get("d_interval_high")
    return "" if low is None or high is None else f"[{low:+.4f}, {high:+.4f}]"


def _error(row: dict[str, Any]) -> str:
    return "" if row["status"] == "complete" else f"{row['status']}: {row.get('error') or ''}".strip()


def _scored_definition(runs: dict[str, Any], rows: list[dict[str, Any]]) -> TaskDefinition | None:
    for r in rows:
        if r["status"] in SCORED:
            try:
                return definition_of(runs[r["run"]])
            except EvalHarnessError:
                continue
    return None


def _table1(rows: list[dict[str, Any]], others: list[str], definition: TaskDefinition | None) -> Section:
    metrics = quant_metrics(definition, rows) if definition else ()
    paired = comparer(definition) if definition else None
    value_key, p_key = paired.agreement_columns if paired else Comparison.agreement_columns
    agreement = next((r["agreement_name"] for r in rows if r.get("agreement_name")), "agreement")
    headers = [*others, "variant", *metrics, *(f"Δ {m} vs float" for m in metrics), "paired Δ interval"]
    headers += ["latency mean ms", "latency p50 ms", "size MB", "gzip MB", "zstd MB", "sparsity"]
    headers += ["unique max", "coverage", agreement, "p", "error"]
    numbers = [
        *((m, ".4f") for m in metrics),
        *((f"d_{m}_vs_float", "+.4f") for m in metrics),
        ("latency_mean_ms", ".2f"),
        ("latency_p50_ms", ".2f"),
        ("size_MB", ".2f"),
        ("gzip_MB", ".2f"),
        ("zstd_MB", ".2f"),
        ("weight_sparsity", ".3f"),
        ("unique_max", ".0f"),
        ("coverage", ".3f"),
        (value_key, ".4f"),
    ]
    cells = []
    for r in sorted(rows, key=lambda r: ([str(r.get(k)) for k in others], _order(variant(r)))):
        p = r.get(p_key)
        cells.append(
            [
                *(str(r.get(k)) for k in others),
                variant(r),
                *(_num(r.get(key), spec) for key, spec in numbers[: 2 * len(metrics)]),
                _interval(r),
                *(_num(r.get(key), spec) for key, spec in numbers[2 * len(metrics) :]),
                format_p(p) if p is not None else "",
                _error(r),
            ]
        )
    samples = {r["paired_images"] for r in rows if r.get("paired_images")}
    notes = [
        "Δ and the agreement are against the float model (quant=none) with the same other parameters, "
        f"paired sample by sample ({', '.join(map(str, sorted(samples))) or 'all scored'} samples); p: the "
        "task's paired test of the agreement where it has one (classification: McNemar's exact "
        "two-sided test on the images one model gets right and the other wrong); paired Δ interval: "
        "the task's paired 95 % interval of the headline metric's change, as report diff gives it "
        "(classification: Newcombe's interval of Δtop-1).",
        "gzip: the model file deflated at zlib's default level (6), as TFLite's model-optimisation guide "
        "measures download size (zipfile.ZIP_DEFLATED); "
        "sparsity: share of exact zeros in the weight tensors; unique max: most distinct values in one "
        "weight tensor. prune and cluster variants are post-training (no fine-tuning): not the "
        "toolkit's trained results.",
    ]
    notes += [
        f"{variant(r)}: no Δ or agreement against the float model: {r['vs_float_refused']}"
        for r in rows
        if r.get("vs_float_refused")
    ]
    notes += [
        f"{variant(r)}: Δ and agreement against the float model {shared_note(r['vs_float_paired_on'])}"
        for r in rows
        if r.get("vs_float_paired_on")
    ]
    return Section("Table 1: quantization variants", headers, cells, notes, key="quant")


def _table2(
    rows: list[dict[str, Any]], others: list[str], definition: TaskDefinition | None
) -> Section | None:
    metrics = quant_metrics(definition, rows) if definition else ()
    if not metrics or not any(variant(r) == "int16x8" for r in rows):
        return None
    metric = metrics[0]
    groups = sorted({tuple(str(r.get(k)) for k in others) for r in rows})
    headers = [*others, f"float {metric}", f"int8 {metric}", f"int16x8 {metric}", "int16x8 Δ vs float"]
    headers += ["int8 p50 ms", "int16x8 p50 ms", "int16x8 error"]
    cells = []
    for g in groups:
        by_variant = {variant(r): r for r in rows if tuple(str(r.get(k)) for k in others) == g}
        f, i8, i16 = (by_variant.get(v, {}) for v in (FLOAT, "int8", "int16x8"))
        cells.append(
            [
                *g,
                *(
                    _num(row.get(key), spec)
                    for row, key, spec in (
                        (f, metric, ".4f"),
                        (i8, metric, ".4f"),
                        (i16, metric, ".4f"),
                        (i16, f"d_{metric}_vs_float", "+.4f"),
                        (i8, "latency_p50_ms", ".2f"),
                        (i16, "latency_p50_ms", ".2f"),
                    )
                ),
                _error(i16) if i16 else "not in sweep",
            ]
        )
    notes = ["16-bit activations with 8-bit weights: int16 kernels are the reference ones on CPU."]
    return Section("Table 2: int16 activations (16x8)", headers, cells, notes, key="quant16x8")


# the guide's order: float, its quantizations, then the weight edits and their quantizations
ORDER: tuple[str, ...] = ("none", "fp16", "dynamic_int8", "weight_only_int8", "int8", "int16x8")
ORDER += ("prune", "cluster", "prune+int8", "cluster+int8")


def _order(name: str) -> tuple[Any, ...]:
    return (ORDER.index(name), "") if name in ORDER else (len(ORDER), name)


def host_note(runs: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """Which CPU ran the sweep: int8 speed depends on it (VNNI, dot-product instructions)."""
    for r in rows:
        if r["status"] in SCORED:
            run = runs[r["run"]]
            host = run.provenance.host
            return f"host CPU: {host.cpu or '?'}; features: {', '.join(host.cpu_features) or 'none listed'}"
    return "host CPU: unknown (no job completed)"


def quant_sections(jobs: list[dict[str, Any]], rows: list[dict[str, Any]], keys: list[str]) -> list[Section]:
    others = [k for k in keys if k != "quant"]
    runs = runs_of(jobs)
    definition = _scored_definition(runs, rows)
    table1 = _table1(rows, others, definition)
    table1.notes.append(host_note(runs, rows))
    table2 = _table2(rows, others, definition)
    return [table1, *([table2] if table2 else [])]
