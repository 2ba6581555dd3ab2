"""``report export RUN --format csv|json|parquet``: a run's per-sample predictions as one row per sample
(a detector's: one row per detection, its task's ``export_rows``), with its headline metrics, for
spreadsheets and notebooks.

Rows are the run's prediction records as :func:`evalharness.rundir.reader.load_run` reads them (never
re-parsed here). A nested object becomes dotted columns (``a.b``); a list stays one cell: a JSON
array in the json export, JSON-encoded text in the csv (``[3, 7, 12]``, parse it with ``json.loads``).
CSV cells: text as is — but a text starting like a formula (``=``, ``+``, ``-``, ``@``, tab, CR) gets a
leading ``'`` (:func:`evalharness.core.escape.csv_text`) —, null (and NaN) empty, every other value as
JSON (numbers round-trip exactly).
The csv carries the headline metrics as ``metric.<name>`` columns, the same on every row; the json
export is ``{"run": ..., "metrics": ..., "columns": [...], "rows": [...]}``. The parquet export (with
pyarrow installed) has the csv's columns with their own types: lists stay lists, and a column whose
values Arrow cannot hold in one type (mixed kinds) is JSON-encoded text as in the csv.

Written atomically (:mod:`evalharness.core.atomic_io`), and never over a file of a run directory.
"""

from __future__ import annotations

import json
import os
from typing import Any

from evalharness.core.atomic_io import dumps, no_nan
from evalharness.core.escape import csv_lines, csv_text
from evalharness.report.presenters import headline as presented_headline
from evalharness.report.runs import ReportError, definition_of
from evalharness.rundir.files import METRICS_FILE
from evalharness.rundir.reader import Run

FORMATS = ("csv", "json", "parquet")
BINARY = ("parquet",)  # written to a file (-o), never to a terminal
METRIC_PREFIX = "metric."


def flat_record(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted key -> value; lists (and empty objects) stay whole, as one value."""
    out = {}
    for key, value in record.items():
        if isinstance(value, dict) and value:
            out.update(flat_record(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def rows_of(run: Run) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns in first-seen order, one flat row per prediction record)."""
    definition = definition_of(run)
    if not definition.abilities.writes_predictions:
        raise ReportError(
            f"run {run.label}: task {run.task} writes no per-sample predictions; nothing to export "
            f"(its metrics are in {os.path.join(run.dir, METRICS_FILE)})"
        )
    expand = definition.abilities.export_rows
    records = (no_nan(r) for r in run.predictions)
    rows = [row for r in records for row in (_expanded(r, *expand) if expand else [flat_record(r)])]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return columns, rows


def _expanded(record: dict[str, Any], field: str, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per element of ``record[field]`` (a detector's boxes: one row per detection, its
    values in ``<field>.<name>`` columns) beside the record's other fields; a record whose list is
    empty keeps one row with those columns empty, so no sample is lost."""
    base = flat_record({k: v for k, v in record.items() if k != field})
    items = record.get(field) or [[None] * len(names)]
    return [{**base, **{f"{field}.{n}": v for n, v in zip(names, item, strict=False)}} for item in items]


def headline(run: Run) -> dict[str, Any]:
    values: dict[str, Any] = no_nan(presented_headline(definition_of(run), run.metrics))
    return values


def csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return csv_text(value)
    return json.dumps(value, sort_keys=True)


def to_csv(run: Run) -> str:
    columns, rows = rows_of(run)
    metrics = headline(run)
    constant = [csv_cell(v) for v in metrics.values()]
    return csv_lines(
        [
            [csv_text(c) for c in [*columns, *(METRIC_PREFIX + m for m in metrics)]],
            *([*(csv_cell(row.get(c)) for c in columns), *constant] for row in rows),
        ]
    )


def to_json(run: Run) -> str:
    columns, rows = rows_of(run)
    about = {
        "dir": run.dir,
        "task": run.task,
        "status": run.status,
        "model": run.provenance.model.name,
        "delegate": run.provenance.delegate.name,
        "num_scored": run.document.metrics.num_scored,
    }
    return dumps({"run": about, "metrics": headline(run), "columns": columns, "rows": rows})


def to_parquet(run: Run) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ReportError(
            "--format parquet needs pyarrow: pip install 'evalharness[parquet]' (or --format csv)"
        ) from None
    columns, rows = rows_of(run)
    table = {c: _arrow_column(pa, [r.get(c) for r in rows]) for c in columns}
    for name, value in headline(run).items():
        table[METRIC_PREFIX + name] = pa.array([value] * len(rows))
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(table), sink)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _arrow_column(pa: Any, values: list[Any]) -> Any:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed kinds in one column: the csv's JSON text
        return pa.array([v if v is None or isinstance(v, str) else csv_cell(v) for v in values])


def render(run: Run, fmt: str) -> str | bytes:
    if fmt == "parquet":
        return to_parquet(run)
    return to_csv(run) if fmt == "csv" else to_json(run)
