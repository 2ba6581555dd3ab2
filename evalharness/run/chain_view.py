"""The waterfall of ``evalharness compare --chain``: per step its headline metric, the change against
the previous step with ``report diff``'s paired interval and verdict word, how many answers changed,
whether the inputs were identical (the records' hashes), the output SNR against the previous step,
its latency; under each step what moved most beyond the headline (the task view's ``moved_most``:
ImageNet's changed top-5 lists with their score gaps, COCO's per-class ΔAP); and the step that
loses most.

Every change comes from :func:`evalharness.run.compare_view.change` (``report diff``'s own
``build_diff`` and quantities), never from a new interval. The step that loses most is the one with
the lowest Δ of the headline metric whose paired interval lies below zero or, when none does, the
lowest Δ at all (said as "not significant"); ties go to the step that changed more answers.
"""

from __future__ import annotations

import math
from typing import Any

from evalharness.core.numbers import fmt
from evalharness.core.tables import Section
from evalharness.report.presenters import paired_of
from evalharness.report.runs import definition_of
from evalharness.run.compare_view import change, headline_metric
from evalharness.rundir.reader import Run
from evalharness.stats.score_snr import topk_snr_db
from evalharness.tasks.definition import view_of

COLUMNS = ["step", "change", "status", "metric", "value", "Δ vs previous [95% paired]", "accuracy",
           "answers changed", "inputs", "output SNR dB", "p50 ms"]  # fmt: skip
SHOWN_CHANGES = 5


def waterfall(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per step (``{"label", "run": Run | None, "error"}`` in), compared with the one before."""
    metric = headline_metric([{"run": s["run"]} for s in steps])
    rows = []
    for i, step in enumerate(steps):
        run: Run | None = step["run"]
        status, error = (run.status, run.doc.get("error")) if run is not None else ("missing", None)
        row: dict[str, Any] = {"step": i, "change": step["label"], "metric": metric, "status": status,
                               "error": step.get("error") or error}  # fmt: skip
        if run is not None:
            row["value"] = run.metrics.get(metric) if metric else None
            row["latency_p50_ms"] = ((run.doc.get("latency_ms") or {}).get("inference") or {}).get("p50")
            previous = steps[i - 1]["run"] if i else None
            if previous is not None and previous.status == run.status == "complete":
                row.update(_against(previous, run, metric))
        rows.append(row)
    return rows


def _against(previous: Run, run: Run, metric: str | None) -> dict[str, Any]:
    found = change(previous, run, metric)
    diff = found.pop("diff", None)
    if diff is None:
        return found
    paired = paired_of(definition_of(previous), diff)
    changed = view_of(definition_of(previous)).changed_samples(paired) if paired else []
    inputs = diff.get("inputs") or {}
    snr, pairs = topk_snr_db(previous.predictions, run.predictions)
    moved, moved_text = (
        view_of(definition_of(previous)).moved_most(paired, SHOWN_CHANGES) if paired else ([], None)
    )
    return {**found, "answers_changed": len(changed), "changed_samples": [sid for sid, _ in changed],
            "moved_most": moved, "moved_most_text": moved_text,
            "inputs": inputs, "snr_db": None if snr is None or math.isinf(snr) else snr,
            "snr_identical": snr is not None and math.isinf(snr), "snr_pairs": pairs}  # fmt: skip


def loser(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The step that loses most (module docstring), or None when no step loses."""
    losing = [r for r in rows if r.get("delta") is not None and r["delta"] < 0]
    if not losing:
        return None
    significant = [r for r in losing if r.get("delta_interval") and r["delta_interval"][1] < 0]
    worst = min(significant or losing, key=lambda r: (r["delta"], -r.get("answers_changed", 0)))
    kept = ("step", "change", "delta", "delta_interval", "answers_changed", "changed_samples")
    return {**{k: worst.get(k) for k in kept}, "significant": bool(significant)}


def _inputs_cell(inputs: dict[str, Any] | None) -> str:
    if not inputs:
        return "—"
    if not inputs.get("recorded"):
        return "not recorded"
    same, paired = inputs["identical"], inputs["paired"]
    return f"identical {same}/{paired}" if same == paired else f"differ {paired - same}/{paired}"


def cells(row: dict[str, Any]) -> list[str]:
    delta = fmt(row.get("delta"), "+.4f", missing="")
    if row.get("delta_interval"):
        low, high = row["delta_interval"]
        delta += f" [{low:+.4f}, {high:+.4f}]"
    snr = "∞ (equal)" if row.get("snr_identical") else fmt(row.get("snr_db"), ".1f", missing="—")
    return [str(row["step"]), row["change"], row["status"], row.get("metric") or "—",
            fmt(row.get("value"), ".4f", missing="—"), delta or "—",
            row.get("accuracy", "start" if not row["step"] else "—"),
            fmt(row.get("answers_changed"), "d", missing="—"), _inputs_cell(row.get("inputs")), snr,
            fmt(row.get("latency_p50_ms"), ".3f", missing="—")]  # fmt: skip


def section(rows: list[dict[str, Any]], out_dir: str) -> Section:
    notes = [
        f"each step against the one before it; run dirs in {out_dir} (report diff, explain work on them)",
        "Δ: the paired interval and verdict of `evalharness report diff PREVIOUS STEP` (same code, default "
        "options); inputs: the records' input hashes (real values, NHWC); output SNR: over the top-K "
        "scores both steps' records carry; p50 ms: each step's own run (not interleaved)",
    ]
    found = loser(rows)
    if found is None:
        notes.append("loses most: no step lowers the headline metric")
    else:
        interval = found["delta_interval"]
        shown = f" [{interval[0]:+.4f}, {interval[1]:+.4f}]" if interval else ""
        names = ", ".join(found["changed_samples"][:SHOWN_CHANGES] or [])
        more = len(found["changed_samples"] or []) - SHOWN_CHANGES
        names += f" (+{more} more)" if more > 0 else ""
        notes.append(
            f"loses most: step {found['step']} ({found['change']}): Δ {found['delta']:+.4f}{shown}"
            f"{'' if found['significant'] else ' (not significant)'}; "
            f"{found['answers_changed']} answers changed{': ' + names if names else ''}"
        )
    for row in rows:
        if row.get("error"):
            notes.append(f"step {row['step']}: {row['error']}")
        if row.get("moved_most_text"):
            notes.append(f"step {row['step']}: {row['moved_most_text']}")
        inputs = row.get("inputs") or {}
        if inputs.get("first_differing"):
            notes.append(f"step {row['step']}: {inputs['summary']}")
    return Section("Chain", COLUMNS, [cells(r) for r in rows], notes, key="chain")
