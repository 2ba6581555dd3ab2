"""``report sweep``: one table for a Hydra multirun, one row per job, failed jobs included.

Columns are the override keys whose values differ between jobs (read from each job's
``.hydra/overrides.yaml``, else ``provenance.overrides``), then status, key metrics, latency, model
size and delegation coverage. A sweep over ``quant`` also gets the quantization tables
(:mod:`evalharness.report.views.quant_table`). ``--baseline delegate=cpu`` adds, per row, the change
against the row that has the baseline value and the same other parameters. Runs on the same images are also
compared image by image (:mod:`evalharness.report.commands.sweep_pairs`: interval columns, an N×N agreement
matrix with McNemar's p). Written as ``sweep.csv``, ``sweep.md`` and ``sweep.html`` (with an
accuracy-vs-latency scatter with interval bars and the Pareto front, and latency distributions from
the per-invoke samples, when matplotlib is installed).
"""

from __future__ import annotations

import os
import re
from typing import Any

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.errors import ConfigError
from evalharness.core.escape import csv_lines, csv_text
from evalharness.core.markdown import render_markdown
from evalharness.core.numbers import fmt, fmt_pct
from evalharness.core.override_grammar import override_parts, recorded_parts
from evalharness.core.tables import Section, render_text
from evalharness.core.untrusted import read_yaml
from evalharness.report.cache_states import sweep_note
from evalharness.report.commands.sweep_baseline import SCORED, add_baseline, speed_note
from evalharness.report.commands.sweep_pairs import (
    add_interval_columns,
    agreement_sections,
    latency_samples,
    pareto_front,
)
from evalharness.report.outputs import check_output_dir
from evalharness.report.presenters import sweep_metrics, sweep_values
from evalharness.report.runs import ReportError, definition_of
from evalharness.report.shared_images import shared_note
from evalharness.report.views.quant_table import add_quant_columns, quant_sections
from evalharness.rundir.files import METRICS_FILE
from evalharness.rundir.reader import Run, load_run

# the model's size as the optimisation guide measures it (provenance.model, runtime/model_size.py):
# column -> (where in provenance, factor); one declaration per column, read by job_row
SIZE_COLUMNS = {
    "size_MB": ("model.bytes", 1e-6),
    "gzip_MB": ("model.size.gzip_bytes", 1e-6),
    "zstd_MB": ("model.size.zstd_bytes", 1e-6),
    "weight_sparsity": ("model.size.weights.sparsity", 1.0),
    "unique_max": ("model.size.weights.unique_max", 1.0),
}
VALUE_COLUMNS = ("latency_mean_ms", "latency_p50_ms", *SIZE_COLUMNS, "coverage", "num_scored")
SPECS = {
    "latency_mean_ms": ".3f",
    "latency_p50_ms": ".3f",
    "size_MB": ".3f",
    "gzip_MB": ".3f",
    "zstd_MB": ".3f",
    "weight_sparsity": ".3f",
    "unique_max": ".0f",
    "coverage": ".3f",
    "num_scored": "d",
}
BENCHMARK_COLUMNS = ("init_ms", "first_inference_ms", "peak_rss_MB")  # latency-only tasks' rows
SPECS.update(dict.fromkeys(BENCHMARK_COLUMNS, ".3f"))
FILES = ("sweep.csv", "sweep.md", "sweep.html")


def parse_override(text: str) -> tuple[str, str]:
    """(key, value) of a job's recorded override: as Hydra reads it, else as recorded
    (core.override_grammar.recorded_parts)."""
    parts = recorded_parts(text)
    return parts.key, parts.value


def job_params(job_dir: str, run: Run | None) -> dict[str, str]:
    path = os.path.join(job_dir, ".hydra", "overrides.yaml")
    overrides: object = list(run.provenance.overrides) if run else []
    if os.path.lexists(path):  # a FIFO or a dangling link there is refused by name, not passed over
        fix = "remove the file or rerun the job"
        overrides = read_yaml(path, "overrides file", (list, type(None)), ReportError, fix) or []
    if not isinstance(overrides, list):
        raise ReportError(f"{path}: overrides are not a list; remove the file or rerun the job")
    try:
        return dict(parse_override(str(o)) for o in overrides)
    except ConfigError as exc:
        raise ReportError(f"{job_dir}: {exc}") from None


def collect(multirun_dir: str) -> list[dict[str, Any]]:
    """Every job directory of the multirun, with its parameters and run (None without metrics.json)."""
    if not os.path.isdir(multirun_dir):
        raise ReportError(f"{multirun_dir} is not a directory; give a multirun dir (outputs/multirun/<time>)")
    jobs = []
    for name in sorted(os.listdir(multirun_dir)):
        job_dir = os.path.join(multirun_dir, name)
        has_metrics = os.path.isfile(os.path.join(job_dir, METRICS_FILE))
        if not (has_metrics or os.path.isdir(os.path.join(job_dir, ".hydra"))):
            continue
        run = load_run(job_dir, name) if has_metrics else None
        jobs.append({"run": name, "dir": job_dir, "params": job_params(job_dir, run), "doc": run})
    if not jobs:
        raise ReportError(f"no job directories (with .hydra/ or {METRICS_FILE}) under {multirun_dir}")
    return jobs


def varying_keys(jobs: list[dict[str, Any]]) -> list[str]:
    keys = list(dict.fromkeys(k for j in jobs for k in j["params"]))
    return [k for k in keys if len({j["params"].get(k) for j in jobs}) > 1]


def _natural(value: str | None) -> tuple[Any, ...]:
    if value is None:
        return (2, "")
    return (0, float(value), "") if re.fullmatch(r"-?\d+(\.\d+)?", value) else (1, value)


def _job_number(name: str) -> int:
    head = name.split("_", 1)[0]
    return int(head) if head.isdigit() else -1


def job_row(job: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    row = {"run": job["run"], **{k: job["params"].get(k) for k in keys}}
    run: Run | None = job["doc"]
    if run is None:
        return {**row, "status": "missing", "error": f"no {METRICS_FILE} (job crashed or still running)"}
    document = run.document
    inference = document.latency.inference
    for column, (where, factor) in SIZE_COLUMNS.items():
        value = run.provenance.named(where)  # the size block's figures, named by their dotted paths
        row[column] = value * factor if isinstance(value, int | float) else None
    row.update(
        status=run.status,
        error=document.error or (document.stop_reason if run.status != "complete" else None),
        latency_mean_ms=inference.mean,
        latency_p50_ms=inference.p50,
        coverage=document.provenance.delegate.coverage.fraction,
        num_scored=document.metrics.num_scored,
    )
    if run.task:
        definition = definition_of(run)
        values = sweep_values(definition, run.metrics)
        row.update({m: v for m, v in values.items() if isinstance(v, float)})
        if definition.abilities.latency_only:  # benchmark_model's other figures: start-up and memory
            row.update(
                init_ms=document.latency.init,
                first_inference_ms=document.latency.first_inference,
                peak_rss_MB=document.memory.peak_rss,
            )
    return row


def sweep_table(
    jobs: list[dict[str, Any]], baseline: dict[str, str] | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of ``jobs`` (:func:`collect`) sorted by the varying parameters, then job number."""
    keys = varying_keys(jobs)
    rows = [job_row(j, keys) for j in jobs]
    rows.sort(key=lambda r: ([_natural(r[k]) for k in keys], _job_number(r["run"]), r["run"]))
    metrics = metric_columns(jobs, rows)
    extra = add_baseline(jobs, rows, keys, baseline, metrics) if baseline else []
    metrics += add_interval_columns(jobs, rows, metrics)
    if "quant" in keys:  # a quantization sweep: change, agreement and McNemar against the float job
        extra += add_quant_columns(jobs, rows, keys)
    extra += [c for c in BENCHMARK_COLUMNS if any(r.get(c) is not None for r in rows)]
    return ["run", *keys, "status", *metrics, *VALUE_COLUMNS, *extra, "error"], rows


def metric_columns(jobs: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[str]:
    """Each task's sweep metrics (its declared ``sweep`` metrics) that some row has, in order."""
    declared = [
        m
        for j in jobs
        if j["doc"] is not None and j["doc"].task
        for m in sweep_metrics(definition_of(j["doc"]))
    ]
    return [m for m in dict.fromkeys(declared) if any(m in r for r in rows)]


def to_csv(columns: list[str], rows: list[dict[str, Any]]) -> str:
    return csv_lines(
        [[csv_text(c) for c in columns], *([_csv_cell(r.get(c)) for c in columns] for r in rows)]
    )


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return csv_text(value)
    return format(value, ".10g") if isinstance(value, float) else str(value)


def _cell(column: str, value: Any) -> str:
    if column.endswith("_pct"):
        return fmt_pct(value) if value is not None else ""
    if column.endswith(("_ci_low", "_ci_high")):
        return fmt(value, ".4f", missing="")
    if column in SPECS or column.startswith(("d_", "speedup")):
        spec = SPECS.get(column, "+.4f" if column.startswith("d_") else ".3f")
        return fmt(value, spec, missing="")
    return fmt(value, ".4f", missing="")


def sections(
    multirun_dir: str,
    jobs: list[dict[str, Any]],
    columns: list[str],
    rows: list[dict[str, Any]],
    speed: str | None = None,
) -> list[Section]:
    cells = [[_cell(c, r.get(c)) for c in columns] for r in rows]
    bad = sum(r["status"] not in ("complete",) for r in rows)
    notes = [f"{len(rows)} jobs, {bad} not complete; multirun dir {os.path.abspath(multirun_dir)}"]
    notes += [speed] if speed else []
    cache_note = sweep_note([job["doc"] for job in jobs if job["doc"] is not None])
    notes += [cache_note] if cache_note else []
    notes += [
        f"{r['run']}: changes against the baseline {shared_note(r['baseline_paired_on'])}"
        for r in rows
        if r.get("baseline_paired_on")
    ]
    return [Section("Runs", columns, cells, notes, key="sweep")]


def write_report(
    multirun_dir: str,
    out: str | None = None,
    baseline: dict[str, str] | None = None,
    interleaved_in: str | None = None,
) -> dict[str, Any]:
    """Write sweep.csv/.md/.html into ``out`` (default: the multirun dir); returns paths and text.
    ``interleaved_in``: where the jobs' interleaved speed-ups are (compare's table), for the note."""
    from evalharness.report.views import html, plots

    jobs = collect(multirun_dir)  # every run document read once, for the table, notes and figures
    columns, rows = sweep_table(jobs, baseline)
    out = out or multirun_dir
    check_output_dir(out, [j["doc"] for j in jobs if j["doc"] is not None])
    title = f"evalharness sweep: {os.path.basename(os.path.normpath(multirun_dir))}"
    secs = sections(multirun_dir, jobs, columns, rows, speed_note(rows, baseline, interleaved_in))
    keys = columns[1 : columns.index("status")]
    if "quant" in keys:
        secs = [*quant_sections(jobs, rows, keys), *secs]
    labels = {r["run"]: _label(r, columns) for r in rows}
    secs += agreement_sections(jobs, lambda job: labels[job["run"]])
    figures = []
    for metric in (m for m in ("top1", "AP") if m in columns):
        points = [
            (_label(r, columns), r["latency_p50_ms"], r[metric])
            for r in rows
            if r.get(metric) is not None and r.get("latency_p50_ms") is not None
        ]
        bars = {_label(r, columns): [r[f"{metric}_ci_low"], r[f"{metric}_ci_high"]]
                for r in rows if r.get(f"{metric}_ci_low") is not None}  # fmt: skip
        front = pareto_front(points)
        svg = plots.scatter(points, "latency p50, ms", metric, bars, front) if points else None
        note = f"Bars: 95 % intervals. Pareto front (red): {', '.join(front)}" if points else ""
        figures.append(html.figure_html(f"{metric} against latency p50", svg, note))
    distributions = latency_samples(jobs, lambda job: labels[job["run"]])
    if distributions:
        svg = plots.latency_distributions(distributions)
        figures.append(html.figure_html("Latency distributions", svg, plots.DISTRIBUTION_NOTE))
    texts = {
        "sweep.csv": to_csv(*with_export_columns(jobs, columns, rows)),
        "sweep.md": render_markdown(title, secs),
        "sweep.html": html.page(title, secs, {"sweep": figures}),
    }
    os.makedirs(out, exist_ok=True)
    paths = {}
    for name in FILES:
        paths[name] = os.path.join(out, name)
        atomic_write_text(paths[name], texts[name])
    return {
        "paths": paths,
        "text": render_text(title, secs),
        "rows": rows,
        "columns": columns,
        "sections": secs,
    }


def with_export_columns(
    jobs: list[dict[str, Any]], columns: list[str], rows: list[dict[str, Any]]
) -> tuple[list[Any], list[Any]]:
    """The csv's columns plus ``report export``'s per-run ones (``metric.<name>``, every headline
    metric), so a sweep table and the exports of its runs join on the same names."""
    from evalharness.report.commands.export import METRIC_PREFIX, headline

    docs = {j["run"]: j["doc"] for j in jobs}
    values = {
        r["run"]: headline(run) if (run := docs.get(r["run"])) and run.task and run.status in SCORED else {}
        for r in rows
    }
    extra = [METRIC_PREFIX + m for m in dict.fromkeys(m for v in values.values() for m in v)]
    prefixed = [{**r, **{METRIC_PREFIX + m: v for m, v in values[r["run"]].items()}} for r in rows]
    return [*columns, *extra], prefixed


def _label(row: dict[str, Any], columns: list[str]) -> str:
    """A run's name in matrices and plots: its varying values, a file by its stem (``model.path``
    given as a full path made every label a path)."""
    params = columns[1 : columns.index("status")]
    return ", ".join(_short(k, row[k]) for k in params) or row["run"]


def _short(key: str, value: Any) -> str:
    if key.endswith(".path") and isinstance(value, str) and "/" in value:
        return os.path.splitext(os.path.basename(value))[0]
    return str(value)


def parse_baseline(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        try:
            parts = override_parts(item)
        except ConfigError:
            parts = None
        if parts is None or parts.prefix or not parts.key or "=" not in item:
            raise ReportError(f"--baseline {item!r}: expected KEY=VALUE, e.g. delegate=cpu")
        out[parts.key] = parts.value
    return out
