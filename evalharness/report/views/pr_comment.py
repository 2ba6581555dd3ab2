"""``--format markdown`` (or ``md``): a ``report diff`` or ``report sweep`` as a pull-request comment.

A reviewer reads the first line (the gate's outcome and the verdict), a compact table of the
headline numbers, and opens the rest on demand: every long list (per-class rows, changed images,
per-output rows, the full tables) sits in a ``<details>`` block. Every number is read from the diff
document or the sweep's rows as ``report diff`` / ``report sweep`` made them: the paired intervals
are the ones the ``--fail-if`` rules test (:func:`evalharness.report.commands.diff.quantities`), never
recomputed here. Built with the one Markdown renderer (:mod:`evalharness.core.markdown`): every
text from a file (model and label names, rules, verdicts) is escaped there, markup written here is
:class:`~evalharness.core.escape.Markdown`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evalharness.core.documents import DiffDocument, RunSummary
from evalharness.core.escape import Markdown, md_code, md_text
from evalharness.core.markdown import details, section_body, table
from evalharness.core.numbers import fmt
from evalharness.core.tables import Section
from evalharness.report.commands.diff import quantities
from evalharness.report.commands.sweep import VALUE_COLUMNS
from evalharness.report.presenters import sweep_metrics
from evalharness.report.runs import definition_of
from evalharness.report.shared_images import shared_note
from evalharness.stats.speedup import SEQUENTIAL
from evalharness.stats.validity import comparison_notes

DASH = "—"


def _summary(s: Section) -> str:
    count = f" ({len(s.rows)} rows)" if s.headers and f"({len(s.rows)})" not in s.title else ""
    return s.title + count


def _warnings(lines: list[str]) -> list[str]:
    return [f"> **Warning:** {md_text(w)}  " for w in lines]


# report diff ------------------------------------------------------------------------------------
def gate_line(gates: list[dict[str, Any]] | None) -> str:
    """``**Gate: passed** (2 rules)`` or ``**Gate: FAILED** — rule: detail; ...``; "" without rules."""
    if not gates:
        return ""
    failed = [g for g in gates if g["failed"]]
    n = f"{len(gates)} rule{'s' if len(gates) != 1 else ''}"
    if not failed:
        return f"**Gate: passed** ({n})"
    why = "; ".join(f"{md_code(g['rule'])}: {md_text(g['detail'])}" for g in failed)
    return f"**Gate: FAILED** ({len(failed)} of {n}) — {why}"


def top_line(doc: DiffDocument) -> str:
    """The one line a reviewer reads: the gate's outcome (when rules were given) and the verdict."""
    verdict = f"**Verdict:** {md_text(doc['verdict'])}"
    gate = gate_line(doc.get("gates"))
    return f"{gate} · {verdict}" if gate else verdict


def _run_name(run: RunSummary) -> str:
    return md_code(run.get("name") or f"{run['model']} @ {run['delegate']}")


def headline_rows(doc: DiffDocument) -> list[list[str]]:
    """The task's key metrics and every metric with a paired interval: A, B, B - A, interval, p."""
    definition = definition_of(doc)
    _, pairwise = quantities(doc)
    key = set(sweep_metrics(definition))
    rows = []
    for r in doc["metrics"]:
        name = r["name"]
        low, high = pairwise.get(f"{name}_ci_low"), pairwise.get(f"{name}_ci_high")
        if name not in key and low is None:
            continue
        interval = DASH if low is None or high is None else f"[{low:+.4f}, {high:+.4f}]"
        p = pairwise.get(f"{name}_p")
        rows.append(
            [name, fmt(r["a"], ".4f"), fmt(r["b"], ".4f"), fmt(r["delta"], "+.4f"), interval,
             DASH if p is None else fmt(p, ".3g")]
        )  # fmt: skip
    return rows


def speed_rows(doc: DiffDocument) -> list[list[str]]:
    """invoke() p50 and mean: A, B (ms), speed-up A / B and how it was measured: two runs, one after
    the other (sequential), so no interval (:data:`evalharness.stats.speedup.SEQUENTIAL`)."""
    latency = {r["name"]: r for r in doc["latency"]}
    rows = []
    for stat in ("p50", "mean"):
        r = latency.get(f"latency_{stat}")
        if r is None or (r["a"] is None and r["b"] is None):
            continue
        measured = "sequential" if r["speedup"] is not None else DASH
        rows.append(
            [
                f"latency {stat} (ms)",
                fmt(r["a"], ".3f"),
                fmt(r["b"], ".3f"),
                fmt(r["speedup"], ".3f"),
                measured,
            ]
        )
    return rows


def render_diff(doc: DiffDocument, sections: list[Section]) -> str:
    """The diff as a PR comment. ``sections``: :func:`evalharness.report.views.diff_view.sections`
    of ``doc``."""
    a, b = doc["a"], doc["b"]
    out = [top_line(doc), ""]
    out.append(
        f"A = {_run_name(a)} → B = {_run_name(b)} · task {md_text(doc['task'])} · "
        f"{fmt(b.get('num_scored'))} samples"
    )
    if doc.get("paired_on"):  # every figure below is on these images
        out += ["", md_text(shared_note(doc["paired_on"]))]
    c = doc["comparability"]
    warnings = [*c["refused"], *c["warnings"], *([c["cache"]] if c.get("cache") else [])]
    out += ["", *_warnings(warnings)] if warnings else []
    heads = headline_rows(doc)
    if heads:
        out += ["", *table(["metric", "A", "B", "Δ (B − A)", "95 % paired interval", "p"], heads)]
    speed = speed_rows(doc)
    if speed:
        out += ["", *table(["speed", "A", "B", "speed-up A / B", "measured"], speed)]
        out += ["", f"Speed-up {SEQUENTIAL}."] if any(r[-1] == "sequential" for r in speed) else []
        out += _warnings(comparison_notes(doc.get("latency_validity") or {}))
    if doc.get("gates"):
        rows = [[g["rule"], g["detail"], Markdown("**FAIL**") if g["failed"] else "ok"] for g in doc["gates"]]
        out += ["", *table(["gate (--fail-if)", "tested", "result"], rows)]
    shared = shared_note(doc["paired_on"]) if doc.get("paired_on") else None
    for s in sections:
        if s.key in ("verdict", "gates"):
            continue
        if s.key == "comparability" and shared:  # said once, at the top
            s = replace(s, notes=[n for n in s.notes if n != shared])
        out += ["", *details(_summary(s), section_body(s))]
    return "\n".join(out) + "\n"


# report sweep -----------------------------------------------------------------------------------
BASELINE_NOTE = (
    "Δ: change against the baseline job, in brackets its paired 95 % interval (the one `report diff` "
    "gives for the pair); the baseline jobs show none (a run is never compared with itself). Speed-up = "
    "the baseline's p50 / this job's p50, measured sequentially (the jobs ran one after another), so "
    "no interval; `evalharness compare KEY=A,B` measures them interleaved, with one."
)


def sweep_line(rows: list[dict[str, Any]]) -> str:
    bad = [r for r in rows if r["status"] != "complete"]
    line = f"**Sweep: {len(rows)} jobs, {len(rows) - len(bad)} complete**"
    if bad:
        line += " — not complete: " + "; ".join(f"{md_code(r['run'])} {md_text(r['status'])}" for r in bad)
    return line


def sweep_compact(columns: list[str], rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Parameters, status, each key metric with its interval, its change against the baseline,
    latency p50 and the speed-up: the sweep's rows as ``report sweep`` made them."""
    params = columns[1 : columns.index("status")]
    metrics = []
    for c in columns[columns.index("status") + 1 :]:  # the task's metrics come first, then the rest
        if c.endswith(("_ci_low", "_ci_high")) or c in VALUE_COLUMNS:
            break
        metrics.append(c)
    deltas = [c for c in columns if c.startswith("d_") and c[2:] in metrics]
    speed = [c for c in ("latency_p50_ms", "speedup_p50") if c in columns]
    headers = [*(params or ["run"]), "status", *metrics, *(f"Δ {c[2:]}" for c in deltas), *speed]
    out = []
    for r in rows:
        cells = [str(r.get(p) if r.get(p) is not None else DASH) for p in (params or ["run"])]
        cells.append(r["status"])
        cells += [_with_interval(r, m, ".4f") for m in metrics]
        cells += [_with_interval(r, d, "+.4f") for d in deltas]
        cells += [_with_interval(r, c, ".3f") for c in speed]
        out.append(cells)
    return headers, out


def _with_interval(row: dict[str, Any], column: str, spec: str) -> str:
    """``value [low, high]`` where the row holds the column's interval (a Δ's is the paired one)."""
    low, high = row.get(f"{column}_ci_low"), row.get(f"{column}_ci_high")
    shown = fmt(row.get(column), spec, missing=DASH)
    return shown + (f" [{low:{spec}}, {high:{spec}}]" if low is not None and high is not None else "")


def render_sweep(columns: list[str], rows: list[dict[str, Any]], sections: list[Section]) -> str:
    """The sweep as a PR comment: one status line, the compact table, the rest in details blocks."""
    headers, cells = sweep_compact(columns, rows)
    out = [sweep_line(rows), "", *table(headers, cells)]
    if any(c.startswith("d_latency") for c in columns):
        out += ["", BASELINE_NOTE]
    for s in sections:
        out += ["", *details(_summary(s), section_body(s))]
    return "\n".join(out) + "\n"
