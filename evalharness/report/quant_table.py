"""The quantization tables of a ``quant=...`` sweep, in the shape of TFLite's model-optimization guide.

Table 1: one row per (delegate, ..., variant): top-1/top-5, change against the float model
(``quant=none`` with the same other parameters), latency mean/p50, size, delegation coverage, and,
from the per-image predictions, top-1 agreement with the float model and the exact McNemar p of
their paired correctness, so a 0.02 drop says whether it is beyond chance on this many images.
Table 2: float vs int8 vs int16x8 (16-bit activations), one row per other-parameter group.
Failed jobs stay in both tables with their error. Reads run files only (no runtime import).
"""

from __future__ import annotations

import os

from evalharness.core.errors import EvalHarnessError
from evalharness.core.numbers import delta, fmt
from evalharness.core.tables import Section
from evalharness.rundir.reader import load_run
from evalharness.stats.paired import classification_diff, format_p

FLOAT = "none"
QUANT_COLUMNS = ("d_top1_vs_float", "d_top5_vs_float", "top1_agreement", "mcnemar_p")
SCORED = ("complete", "partial")


def variant(row: dict) -> str:
    return row.get("quant") or FLOAT  # a job without a quant override ran the float model


def _float_row(rows: list[dict], row: dict, others: list[str]) -> dict | None:
    for r in rows:
        if variant(r) == FLOAT and all(r.get(k) == row.get(k) for k in others):
            return r
    return None


def _paired(load, a: dict, b: dict) -> dict | None:
    """classification_diff of two jobs' predictions, or None when either has none to pair."""
    try:
        run_a, run_b = load(a["run"]), load(b["run"])
        same_labels = run_a.prov("labels.sha256") == run_b.prov("labels.sha256")
        return classification_diff(run_a.predictions, run_b.predictions, same_labels)
    except (EvalHarnessError, KeyError):
        return None


def add_quant_columns(multirun_dir: str, rows: list[dict], keys: list[str]) -> list[str]:
    """Fill QUANT_COLUMNS in every scored row that has a scored float row with the same other values."""
    others = [k for k in keys if k != "quant"]
    loaded: dict[str, object] = {}  # each float run is the base of several rows: read it once

    def load(name: str):
        if name not in loaded:
            loaded[name] = load_run(os.path.join(multirun_dir, name), name)
        return loaded[name]

    for row in rows:
        base = _float_row(rows, row, others)
        if base is None or row["status"] not in SCORED or base["status"] not in SCORED:
            continue
        row["d_top1_vs_float"] = delta(base.get("top1"), row.get("top1"))
        row["d_top5_vs_float"] = delta(base.get("top5"), row.get("top5"))
        paired = _paired(load, base, row) if "top1" in row else None
        if paired and paired["paired_images"]:
            row["top1_agreement"] = paired["top1_agreement"]
            row["mcnemar_p"] = paired["mcnemar_p"]
            row["paired_images"] = paired["paired_images"]
    return list(QUANT_COLUMNS)


def _num(value, spec: str) -> str:
    return fmt(value, spec, missing="")


def _error(row: dict) -> str:
    return "" if row["status"] == "complete" else f"{row['status']}: {row.get('error') or ''}".strip()


def _table1(rows: list[dict], others: list[str]) -> Section:
    headers = [*others, "variant", "top-1", "top-5", "Δ top-1 vs float", "Δ top-5 vs float"]
    headers += ["latency mean ms", "latency p50 ms", "size MB", "coverage", "top-1 agreement"]
    headers += ["McNemar p", "error"]
    cells = []
    for r in sorted(rows, key=lambda r: ([str(r.get(k)) for k in others], _order(variant(r)))):
        p = r.get("mcnemar_p")
        cells.append(
            [
                *(str(r.get(k)) for k in others),
                variant(r),
                *(_num(r.get(key), fmt) for key, fmt in _TABLE1_NUMBERS),
                format_p(p) if p is not None else "",
                _error(r),
            ]
        )
    paired = {r["paired_images"] for r in rows if r.get("paired_images")}
    notes = [
        "Δ, agreement and McNemar p are against the float model (quant=none) with the same other "
        f"parameters, paired image by image ({', '.join(map(str, sorted(paired))) or 'no'} images); "
        "McNemar: exact two-sided test on the images one model gets right and the other wrong."
    ]
    return Section("Table 1: quantization variants", headers, cells, notes, key="quant")


_TABLE1_NUMBERS = (  # (row key, format) of Table 1's numeric columns, in header order
    ("top1", ".4f"),
    ("top5", ".4f"),
    ("d_top1_vs_float", "+.4f"),
    ("d_top5_vs_float", "+.4f"),
    ("latency_mean_ms", ".2f"),
    ("latency_p50_ms", ".2f"),
    ("size_MB", ".2f"),
    ("coverage", ".3f"),
    ("top1_agreement", ".4f"),
)


def _table2(rows: list[dict], others: list[str]) -> Section | None:
    if not any(variant(r) == "int16x8" for r in rows):
        return None
    groups = sorted({tuple(str(r.get(k)) for k in others) for r in rows})
    headers = [*others, "float top-1", "int8 top-1", "int16x8 top-1", "int16x8 Δ vs float"]
    headers += ["int8 p50 ms", "int16x8 p50 ms", "int16x8 error"]
    cells = []
    for g in groups:
        by_variant = {variant(r): r for r in rows if tuple(str(r.get(k)) for k in others) == g}
        f, i8, i16 = (by_variant.get(v, {}) for v in (FLOAT, "int8", "int16x8"))
        cells.append(
            [
                *g,
                *(
                    _num(row.get(key), fmt)
                    for row, key, fmt in (
                        (f, "top1", ".4f"),
                        (i8, "top1", ".4f"),
                        (i16, "top1", ".4f"),
                        (i16, "d_top1_vs_float", "+.4f"),
                        (i8, "latency_p50_ms", ".2f"),
                        (i16, "latency_p50_ms", ".2f"),
                    )
                ),
                _error(i16) if i16 else "not in sweep",
            ]
        )
    notes = ["16-bit activations with 8-bit weights: int16 kernels are the reference ones on CPU."]
    return Section("Table 2: int16 activations (16x8)", headers, cells, notes, key="quant16x8")


ORDER = ("none", "fp16", "dynamic_int8", "weight_only_int8", "int8", "int16x8")


def _order(name: str) -> tuple:
    return (ORDER.index(name), "") if name in ORDER else (len(ORDER), name)


def host_note(multirun_dir: str, rows: list[dict]) -> str:
    """Which CPU ran the sweep: int8 speed depends on it (VNNI, dot-product instructions)."""
    for r in rows:
        if r["status"] in SCORED:
            run = load_run(os.path.join(multirun_dir, r["run"]), r["run"])
            features = run.prov("host.cpu_features") or []
            return f"host CPU: {run.prov('host.cpu', '?')}; features: {', '.join(features) or 'none listed'}"
    return "host CPU: unknown (no job completed)"


def quant_sections(multirun_dir: str, rows: list[dict], keys: list[str]) -> list[Section]:
    others = [k for k in keys if k != "quant"]
    table1 = _table1(rows, others)
    table1.notes.append(host_note(multirun_dir, rows))
    table2 = _table2(rows, others)
    return [table1, *([table2] if table2 else [])]
