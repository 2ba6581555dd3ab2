"""``report rescore``: recompute a run's metrics from the records it stored.

A metrics.json is only as trustworthy as the path from predictions to numbers. The task's own
scorer (the one the live run used) recomputes them from ``predictions.jsonl`` and must give the
stored numbers bit for bit; any difference is listed. ``--top-k`` below the stored K rescores fewer
ranks; ``--backend`` scores detections with another COCO backend.
"""

from __future__ import annotations

from typing import Any, TypedDict

from evalharness.core.tables import Section
from evalharness.report.runs import ReportError, definition_of, malformed
from evalharness.rundir.document import metrics_for_schema
from evalharness.rundir.reader import Run, flatten
from evalharness.tasks.discovery import and_list, listed


class RescoreRow(TypedDict):
    """One recomputed value beside the stored one (a dotted name inside nested metrics)."""

    name: str
    stored: Any
    recomputed: Any
    equal: bool


class RescoreDocument(TypedDict):
    """What ``report rescore`` found (its ``--format json`` output)."""

    run: str
    task: str | None
    not_recorded: list[str]  # values this version adds inside recorded objects: not compared
    compared: int
    mismatches: list[RescoreRow]
    headline: list[RescoreRow]
    reproduced: bool


def recompute(run: Run, top_k: int | None = None, backend: str | None = None) -> dict[str, Any]:
    """The run's metrics recomputed from its records by its task's scorer."""
    definition = definition_of(run)
    if not definition.abilities.rescorable:
        names = and_list(listed(lambda d: d.abilities.rescorable))
        raise ReportError(f"run {run.label} is a {run.task} run; rescore recomputes {names} metrics")
    records = run.predictions
    with malformed(run):
        return definition.rescorer([run], records, top_k, backend).add_all(records).result()


def rescore(run: Run, top_k: int | None = None, backend: str | None = None) -> RescoreDocument:
    """Stored vs recomputed value of every recomputed field; ``reproduced`` when all are equal."""
    if run.status == "failed" or not run.metrics:
        raise ReportError(f"run {run.label} has no metrics to reproduce (status {run.status})")
    ignored = definition_of(run).abilities.rescore_ignores
    fresh_metrics = metrics_for_schema(recompute(run, top_k, backend), run.document.schema_version)
    recomputed = {k: v for k, v in fresh_metrics.items() if k not in ignored}
    stored, fresh = flatten(run.metrics), flatten(recomputed)
    # a field added inside a recorded object since the run was made (TIDE's class counts): not
    # recorded, so nothing to compare; listed, never counted as a difference (top-level metrics
    # added later are left out by schema version above)
    added = [k for k in fresh if "." in k and k not in stored]
    rows: list[RescoreRow] = [
        {"name": k, "stored": stored.get(k), "recomputed": v, "equal": stored.get(k) == v}
        for k, v in fresh.items()
        if k not in added
    ]
    return {
        "run": run.dir,
        "task": run.task,
        "not_recorded": added,
        "compared": len(rows),
        "mismatches": [r for r in rows if not r["equal"]],
        "headline": [r for r in rows if "." not in r["name"] and not isinstance(r["recomputed"], list)],
        "reproduced": all(r["equal"] for r in rows),
    }


def sections(doc: RescoreDocument) -> list[Section]:
    def cells(rows: list[RescoreRow]) -> list[list[str]]:
        return [
            [r["name"], repr(r["stored"]), repr(r["recomputed"]), "yes" if r["equal"] else "NO"] for r in rows
        ]

    headers = ["metric", "stored", "recomputed", "equal"]
    verdict = (
        f"reproduced: all {doc['compared']} recomputed values equal the stored ones"
        if doc["reproduced"]
        else f"NOT reproduced: {len(doc['mismatches'])} of {doc['compared']} values differ"
    )
    out = [Section("Headline metrics", headers, cells(doc["headline"]), key="headline")]
    if doc["mismatches"]:
        out.append(Section("Differences", headers, cells(doc["mismatches"]), key="mismatches"))
    if doc.get("not_recorded"):
        verdict += (
            f"; {len(doc['not_recorded'])} value(s) this version adds were not recorded by the run "
            f"(first: {doc['not_recorded'][0]}) and are not compared"
        )
    out.append(Section("Verdict", notes=[verdict], key="verdict"))
    return out
