"""The sections of a ``report diff``, built from the diff dict for every output format."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

from evalharness.core.documents import DiffDocument, DiffRow, RunSummary
from evalharness.core.numbers import fmt, fmt_pct
from evalharness.core.tables import Section
from evalharness.report.presenters import paired_of
from evalharness.report.runs import definition_of
from evalharness.report.shared_images import shared_note
from evalharness.report.views.op_profile_table import diff_section as op_profile_sections
from evalharness.stats import speedup
from evalharness.stats.validity import comparison_notes
from evalharness.tasks.definition import view_of


def title(doc: DiffDocument) -> str:
    return f"evalharness diff: A = {_name(doc['a'])} vs B = {_name(doc['b'])}"


def _name(run: RunSummary) -> str:
    """The side by what differs from the other (a diff made before names: model @ delegate)."""
    return run.get("name") or f"{run['model']} @ {run['delegate']}"


def sections(doc: DiffDocument, max_rows: int = 20) -> list[Section]:
    out = [
        _runs(doc),
        _comparability(doc),
        _inputs(doc),
        _value_table("Metrics", "metrics", doc["metrics"], ".4f", "+.4f"),
    ]
    out.append(_latency(doc))
    out.append(_value_table("Model and delegation", "model", doc["model"], ".6g", "+.6g"))
    out += op_profile_sections(doc, max_rows)
    definition = definition_of(doc)
    if (paired := paired_of(definition, doc)) is not None:
        out += view_of(definition).diff_sections(paired, max_rows)
    if doc.get("gates"):
        out.append(_gates(doc["gates"]))
    out.append(Section("Verdict", notes=[doc["verdict"]], key="verdict"))
    return out


def _runs(doc: DiffDocument) -> Section:
    a, b = doc["a"], doc["b"]
    fields = ("model", "delegate", "runtime", "status", "dataset", "num_scored", "cpu", "dir")
    rows = [[f, fmt(a.get(f)), fmt(b.get(f))] for f in fields]
    rows.append(["model sha256", (a["model_sha256"] or "")[:12], (b["model_sha256"] or "")[:12]])
    notes = [
        f"ops left on CPU in {r['label']}: {r['ops_on_cpu_by_type']}"
        for r in (a, b)
        if r["ops_on_cpu_by_type"]
    ]
    return Section("Runs", ["", "A", "B"], rows, notes, key="runs")


def _comparability(doc: DiffDocument) -> Section:
    c = doc["comparability"]
    tag = "warning (acknowledged)" if c["acknowledged"] else "WARNING"
    notes = [f"refused: {r}" for r in c["refused"]] + [f"{tag}: {w}" for w in c["warnings"]]
    notes += [f"note: {n}" for n in c["notes"]]
    if doc.get("paired_on"):  # first: every figure below is on these images
        notes.insert(0, shared_note(doc["paired_on"]))
    if c.get("cache"):
        notes.append(f"WARNING: {c['cache']}")
    return Section(
        "Comparability",
        notes=notes or ["same task, images, ground truth, preprocessing and label set"],
        key="comparability",
    )


def _inputs(doc: DiffDocument) -> Section:
    """Were both runs fed the same inputs (the records' hashes; report/input_check.py)."""
    block = doc.get("inputs") or {}
    return Section("Inputs", notes=[block.get("summary") or "inputs: not compared"], key="inputs")


def _value_table(name: str, key: str, rows: list[DiffRow], spec: str, delta_spec: str) -> Section:
    cells = [
        [
            r["name"],
            fmt(r["a"], spec),
            fmt(r["b"], spec),
            fmt(r["delta"], delta_spec),
            fmt_pct(r["delta_pct"]),
        ]
        for r in rows
    ]
    return Section(name, ["metric", "A", "B", "delta (B-A)", "delta %"], cells, key=key)


def _latency(doc: DiffDocument) -> Section:
    rows = [
        [r["name"], fmt(r["a"], ".3f"), fmt(r["b"], ".3f"), fmt_pct(r["delta_pct"]), fmt(r["speedup"], ".3f")]
        for r in doc["latency"]
    ]
    notes = ["ms; timed region invoke() only; speed-up = A / B (> 1: B is faster)"]
    notes += (
        [f"speed-up: {speedup.SEQUENTIAL}"] if any(r["speedup"] is not None for r in doc["latency"]) else []
    )
    notes += comparison_notes(doc.get("latency_validity") or {})
    return Section("Latency", ["stat", "A", "B", "delta %", "speed-up"], rows, notes, key="latency")


def _gates(gates: list[dict[str, Any]]) -> Section:
    rows = [[g["rule"], g["detail"], "FAIL" if g["failed"] else "ok"] for g in gates]
    return Section("Gates (--fail-if)", ["rule", "tested", "result"], rows, key="gates")


def render_html(doc: DiffDocument, max_rows: int = 20) -> str:
    """The diff as one HTML page: the tables plus latency and per-class plots and thumbnails."""
    from evalharness.report.views import analysis_view, html, plots

    runs = [(f"{r['label']}: {_name(r)}", _inference(doc, r["label"].lower())) for r in (doc["a"], doc["b"])]
    after = {
        "latency": [html.figure_html("Latency summary", plots.latency_summary(runs), plots.LATENCY_NOTE)]
    }
    definition = definition_of(doc)
    paired, view = paired_of(definition, doc), view_of(definition)
    if paired is not None and view.delta_figure:
        key, field, heading = view.delta_figure
        after[key] = [html.figure_html(heading, plots.class_deltas(paired[field]))]
    if paired is not None:
        for key, figures in analysis_view.blocks(view.figures(paired)).items():
            after[key] = after.get(key, []) + figures
    if paired is not None and (place := view.thumbnail_place(paired)) is not None:
        key, heading = place
        samples = view.changed_samples(paired)[:max_rows]
        draw = functools.partial(view.thumbnail_shapes, paired)
        after[key] = [_thumbnails(doc, samples, heading, draw)]
    after["verdict"] = [_explain_link(doc)]
    return html.page(title(doc), sections(doc, max_rows), after)


def _explain_link(doc: DiffDocument) -> str:
    """A link to ``python -m evalharness.explain``'s page for these runs, when it was made."""
    from evalharness.core.escape import html_text
    from evalharness.report.views.explain_location import HTML_FILE, explain_dir

    if not (doc["a"].get("dir") and doc["b"].get("dir")):
        return ""
    path = os.path.join(explain_dir(doc["a"]["dir"], doc["b"]["dir"]), HTML_FILE)
    if not os.path.isfile(path):
        return ""
    return (
        f'<p class="note">Why did the answer change? <a href="file://{html_text(path)}">{html_text(path)}</a></p>'
    )


def _inference(doc: DiffDocument, side: str) -> dict[str, Any]:
    return {r["name"].removeprefix("latency_"): r.get(side) for r in doc["latency"]}


def _thumbnails(
    doc: DiffDocument, samples: list[tuple[str, str]], heading: str, draw: Callable[[Any, Any], Any]
) -> str:
    """Thumbnails of the listed samples as run A read them (the runs saw the same images): files under
    its dataset root, or its container's members checked against their sha256 (views/thumbnails.py),
    with what the task draws of the two runs' records on each (a seg model's masks, a pose model's
    skeletons)."""
    from evalharness.report.views import html
    from evalharness.report.views.shape_drawing import LEGEND
    from evalharness.report.views.thumbnails import shapes_of, thumbnail_items

    shapes = shapes_of((doc["a"], doc["b"]), [i for i, _ in samples], draw)
    drawn = [i for i, _ in samples if shapes(i)] if shapes is not None else []
    items, notes = thumbnail_items(doc["a"], samples, definition_of(doc).abilities.sample_key, shapes)
    return html.thumbnails_html(heading, items, [LEGEND] * bool(drawn) + notes)
