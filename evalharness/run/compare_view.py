"""The tables of ``evalharness compare``: the comparison of every candidate with the first, and
``--chain``'s waterfall of every step against the one before it.

Compare: each candidate's accuracy, its change against the first candidate with the paired interval and
a verdict word, its speed-up with an interval, coverage, status.

Every accuracy change comes from :func:`evalharness.report.commands.diff.build_diff` with ``report
diff``'s default options, through :func:`evalharness.report.commands.diff.quantities` (what
``--fail-if`` rules and ``report sweep --baseline`` read): the interval printed here is the one ``report
diff FIRST OTHER`` prints, never one derived from the runs' own intervals. The verdict word is read from
the task's own verdict line (the McNemar or paired-bootstrap decision ``report diff`` states), not
decided again. The speed-up comes from the interleaved measurement when there is one (``measurement``:
the dict of :func:`evalharness.loop.interleave.measure`), else it says ``not measured``: the runs'
own invokes were timed one after the other, and a ratio of those carries no interval.

The waterfall (``--chain``): per step its headline metric, the change against the previous step with
``report diff``'s paired interval and verdict word, how many answers changed, whether the inputs were
identical (the records' hashes), the output SNR against the previous step, its latency; under each step
what moved most beyond the headline (the task view's ``moved_most``: ImageNet's changed top-5 lists with
their score gaps, COCO's per-class ΔAP); and the step that loses most.

Every change of a step comes from :func:`change` (``report diff``'s own ``build_diff`` and quantities),
never from a new interval. The step that loses most is the one with the lowest Δ of the headline metric
whose paired interval lies below zero or, when none does, the lowest Δ at all (said as "not
significant"); ties go to the step that changed more answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, TypedDict

from evalharness.core.documents import DiffDocument
from evalharness.core.numbers import fmt
from evalharness.core.tables import Section
from evalharness.report.commands.diff import build_diff, quantities
from evalharness.report.presenters import judged_metric, paired_of
from evalharness.report.run_names import precision_text
from evalharness.report.runs import comparability, definition_of
from evalharness.rundir.reader import Run
from evalharness.stats.score_snr import topk_snr_db
from evalharness.tasks.definition import view_of

if TYPE_CHECKING:
    from evalharness.loop.interleave import Interleaved

COLUMNS = ["candidate", "status", "metric", "value", "Δ vs first [95% paired]", "accuracy",
           "speed-up [95%]", "speed", "p50 ms", "coverage"]  # fmt: skip
WORDS = (  # the task's verdict line -> one word (report/diff's own decision, in its own words)
    ("significantly better", "better"),
    ("significantly worse", "worse"),
    ("no difference detected", "no difference detected"),  # before "equivalent": "not shown equivalent"
    ("equivalent within", "equivalent"),
    ("same boxes", "same"),
    ("identical to A", "same"),
)


def short_name(value: str) -> str:
    """A candidate as a reader names it: a model path by its file stem, anything else as given."""
    return PurePath(value).stem if "/" in value or value.endswith(".tflite") else value


def verdict_word(sentence: str, change: float | None) -> str:
    for phrase, word in WORDS:
        if phrase in sentence:
            return word
    if sentence.startswith("significant") or ": significant" in sentence or "significant:" in sentence:
        return "better" if (change or 0) > 0 else "worse"
    return "—"


class AccuracyFound(TypedDict, total=False):
    """``report diff BASE RUN`` for a compare table: why the runs are not comparable (``refused``),
    else the diff's verdict, its pairwise quantities, the warnings and the diff document."""

    refused: str
    verdict: str
    pairwise: dict[str, float]
    warnings: list[str]
    doc: DiffDocument


class RowChange(TypedDict, total=False):
    """A candidate's accuracy fields against the first: Δ, its paired interval, the verdict word
    (``diff``: the diff document, for what else a caller reads of it; never a table cell)."""

    accuracy: str
    accuracy_detail: str
    diff: DiffDocument
    delta: float
    delta_interval: list[float]


def accuracy_change(base: Run, run: Run) -> AccuracyFound:
    """``report diff BASE RUN``'s verdict and pairwise quantities (default options), or why none."""
    comp = comparability(base, run)
    if comp.refused:
        return {"refused": "; ".join(comp.refused)}
    doc = build_diff(base, run, comp)
    return {"verdict": doc["verdict"], "pairwise": quantities(doc)[1], "warnings": comp.warnings, "doc": doc}


def coverage_cell(run: Run) -> str:
    cov = run.provenance.delegate.coverage
    if cov.ops_total is None:
        return "n/a"
    done = cov.ops_delegated
    text = f"{'?' if done is None else done}/{cov.ops_total} ops"
    if cov.partitions:
        text += f", {cov.partitions} part."
    precision = precision_text(run)  # fp16 on the GPU moves results: the column says which it ran
    if precision:
        text += f", {precision}"
    if cov.device.get("software_renderer"):
        text += " (software renderer)"
    return text


def rows(candidates: list[dict[str, Any]], measurement: Interleaved | None) -> list[dict[str, Any]]:
    """One row per candidate: ``{"name", "run": Run | None, "status", "error"}`` in, the figures out
    (``measured``: index of the candidate in ``measurement``'s list, None when it was not measured)."""
    base = candidates[0]["run"]
    metric = headline_metric(candidates)
    out = []
    for i, cand in enumerate(candidates):
        run: Run | None = cand["run"]
        row = {"candidate": cand["name"], "status": cand["status"], "error": cand.get("error")}
        row["metric"] = metric
        if run is not None and cand["status"] in ("complete", "partial"):
            row["value"] = run.metrics.get(metric) if metric else None
            row["latency_p50_ms"] = run.document.latency.inference.p50
            row["coverage"] = coverage_cell(run)
            if i and candidates[0]["status"] == cand["status"] == "complete":
                row.update({k: v for k, v in change(base, run, metric).items() if k != "diff"})
        row.update(_speed(i, cand, row, measurement))
        out.append(row)
    return out


def headline_metric(candidates: list[dict[str, Any]]) -> str | None:
    """The metric column: what the first run with a result is judged by (``judged_metric``)."""
    for cand in candidates:
        if cand["run"] is not None and cand["run"].task:
            return judged_metric(definition_of(cand["run"]), cand["run"].metrics)
    return None


def change(base: Run, run: Run, metric: str | None) -> RowChange:
    """The row fields of ``run`` against ``base``: Δ, its paired interval, the verdict word (and the
    diff document, ``diff``, for what else a caller reads of it)."""
    found = accuracy_change(base, run)
    if "refused" in found:
        return {"accuracy": "not comparable", "accuracy_detail": found["refused"]}
    pairwise = found["pairwise"]
    value: RowChange = {"accuracy_detail": found["verdict"], "diff": found["doc"]}
    if metric and base.metrics.get(metric) is not None and run.metrics.get(metric) is not None:
        value["delta"] = run.metrics[metric] - base.metrics[metric]
    if metric and f"{metric}_ci_low" in pairwise:
        value["delta_interval"] = [pairwise[f"{metric}_ci_low"], pairwise[f"{metric}_ci_high"]]
    value["accuracy"] = verdict_word(found["verdict"], value.get("delta"))
    return value


class SpeedCells(TypedDict, total=False):
    """A compare row's speed fields: from the interleaved measurement, else the run's own p50."""

    speed: str
    speed_source: str | None
    speedup: float
    speedup_interval: list[float] | None
    speed_detail: str
    latency_p50_ms: float | None
    valid: bool
    problems: list[str]


def _speed(i: int, cand: dict[str, Any], row: dict[str, Any], measurement: Interleaved | None) -> SpeedCells:
    index = cand.get("measured")
    if measurement is not None and index is not None and i == 0:
        m = measurement["measurements"][0]
        return {"speed": "baseline", "speed_source": "interleaved", "valid": m["valid"],
                "latency_p50_ms": m["latency_ms"].get("p50"), "problems": m["problems"]}  # fmt: skip
    if measurement is not None and index is not None:
        comp = measurement["comparisons"][index]
        m = measurement["measurements"][index]
        out: SpeedCells = {"speedup": comp["speedup"], "speedup_interval": comp["interval"],
                           "speed": comp["verdict"], "speed_source": "interleaved",
                           "latency_p50_ms": m["latency_ms"].get("p50"),
                           "valid": m["valid"], "problems": m["problems"]}  # fmt: skip
        if comp.get("why"):
            out["speed_detail"] = comp["why"]
        return out
    if i == 0:
        return {"speed": "baseline" if row.get("latency_p50_ms") is not None else "—"}
    return {"speed": "not measured", "speed_source": None}


def cells(row: dict[str, Any]) -> list[str]:
    interval = row.get("delta_interval")
    delta = fmt(row.get("delta"), "+.4f", missing="")
    if interval:
        delta += f" [{interval[0]:+.4f}, {interval[1]:+.4f}]"
    speed = fmt(row.get("speedup"), ".3f", missing="")
    if row.get("speedup_interval"):
        low, high = row["speedup_interval"]
        speed += f" [{low:.3f}, {high:.3f}]"
    accuracy = row.get("accuracy", "baseline" if row.get("value") is not None and not delta else "—")
    value = fmt(row.get("value"), ".4f", missing="—")
    return [row["candidate"], row["status"], row.get("metric") or "—", value, delta or "—", accuracy,
            speed or "—", row.get("speed", "—"),
            fmt(row.get("latency_p50_ms"), ".3f", missing="—"), row.get("coverage", "—")]  # fmt: skip


def _loads(measurement: Interleaved) -> str:
    took = f"{measurement['load_secs']:.1f} s of loading"
    if measurement["rounds_per_load"]:
        return f"each candidate loaded afresh every {measurement['rounds_per_load']} rounds, {took}"
    limit = measurement["settings"]["max_load_secs"]
    if measurement["settings"]["rounds_per_load"]:
        return f"loaded once: loading took {took.split(' of')[0]} > max_load_secs {limit:g}"
    return f"loaded once, {took}"


def section(key: str, table: list[dict[str, Any]], measurement: Interleaved | None, out_dir: str) -> Section:
    notes = [
        f"candidates: {key}=…; Δ and speed-up against the first ({table[0]['candidate']}); run dirs and "
        f"sweep.csv/.md/.html in {out_dir}",
        "Δ: the paired interval and verdict of `evalharness report diff FIRST CANDIDATE` (same code, "
        "default options: alpha 0.05, margin 0.01)",
    ]
    if measurement is not None:
        s = measurement["settings"]
        notes.append(
            f"speed-up: first ÷ candidate invoke time, interleaved in one process ({measurement['rounds']} "
            f"rounds of ~{s['block_secs']:g} s blocks, ABBA order, {_loads(measurement)}); 95% Student-t "
            f"interval on the log ratios per {'load' if measurement['rounds_per_load'] else 'round'}; "
            "p50 ms from the interleaved invokes"
        )
        thermal = measurement["thermal"]
        notes.append(
            f"thermal: {thermal['before']['source']} " + (
                f"read before and after; throttled: {', '.join(thermal['throttled']) or 'no'}"
                if thermal["before"]["exposed"] else "not exposed on this machine (throttling not checked)"
            )
        )  # fmt: skip
    else:
        notes.append("speed-up: not measured (interleaving off or no second complete candidate)")
    for row in table:
        for name in ("error", "accuracy_detail"):
            if row.get(name) and (name != "accuracy_detail" or row.get("accuracy") == "not comparable"):
                notes.append(f"{row['candidate']}: {row[name]}")
        if row.get("problems"):
            notes.append(f"{row['candidate']}: measurement invalid: {'; '.join(row['problems'])}")
    return Section("Compare", COLUMNS, [cells(r) for r in table], notes, key="compare")


CHAIN_COLUMNS = ["step", "change", "status", "metric", "value", "Δ vs previous [95% paired]", "accuracy",
           "answers changed", "inputs", "output SNR dB", "p50 ms"]  # fmt: skip
SHOWN_CHANGES = 5


def waterfall(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per step (``{"label", "run": Run | None, "error"}`` in), compared with the one before."""
    metric = headline_metric([{"run": s["run"]} for s in steps])
    rows = []
    for i, step in enumerate(steps):
        run: Run | None = step["run"]
        status, error = (run.status, run.document.error) if run is not None else ("missing", None)
        row: dict[str, Any] = {"step": i, "change": step["label"], "metric": metric, "status": status,
                               "error": step.get("error") or error}  # fmt: skip
        if run is not None:
            row["value"] = run.metrics.get(metric) if metric else None
            row["latency_p50_ms"] = run.document.latency.inference.p50
            previous = steps[i - 1]["run"] if i else None
            if previous is not None and previous.status == run.status == "complete":
                row.update(_against(previous, run, metric))
        rows.append(row)
    return rows


def _against(previous: Run, run: Run, metric: str | None) -> Mapping[str, Any]:
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


class LosingStep(TypedDict):
    """compare --chain's ``loses_most``: the step that lowers the headline metric most, and how."""

    step: Any
    change: Any
    delta: float
    delta_interval: list[float] | None
    answers_changed: int | None
    changed_samples: Any  # the sample ids whose answers changed; None: the step was not compared
    significant: bool  # its paired interval lies below 0


def loser(rows: list[dict[str, Any]]) -> LosingStep | None:
    """The step that loses most (module docstring), or None when no step loses."""
    losing = [r for r in rows if r.get("delta") is not None and r["delta"] < 0]
    if not losing:
        return None
    significant = [r for r in losing if r.get("delta_interval") and r["delta_interval"][1] < 0]
    worst = min(significant or losing, key=lambda r: (r["delta"], -r.get("answers_changed", 0)))
    return {
        "step": worst.get("step"),
        "change": worst.get("change"),
        "delta": worst["delta"],
        "delta_interval": worst.get("delta_interval"),
        "answers_changed": worst.get("answers_changed"),
        "changed_samples": worst.get("changed_samples"),
        "significant": bool(significant),
    }


def _inputs_cell(inputs: dict[str, Any] | None) -> str:
    if not inputs:
        return "—"
    if not inputs.get("recorded"):
        return "not recorded"
    if inputs.get("comparable") is False:  # hashed by two methods (report/input_check.py)
        return "not comparable"
    same, paired = inputs["identical"], inputs["paired"]
    return f"identical {same}/{paired}" if same == paired else f"differ {paired - same}/{paired}"


def chain_cells(row: dict[str, Any]) -> list[str]:
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


def chain_section(rows: list[dict[str, Any]], out_dir: str) -> Section:
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
    return Section("Chain", CHAIN_COLUMNS, [chain_cells(r) for r in rows], notes, key="chain")
