"""``report sweep --baseline KEY=VALUE``: each row's change against the job with the baseline value
and the same other parameters, and how its speed-up was measured.

The changes of accuracy carry ``report diff``'s paired interval of the pair (the same code). The
speed-up carries none: a sweep's jobs ran one after another, so the machine's drift between them is
in the ratio and no interval of the runs' own invokes covers it; one line says so and names the
``compare`` command that measures the same values interleaved, with an interval. A run is never
compared with itself: the baseline rows get no change columns.
"""

from __future__ import annotations

from typing import Any

from evalharness.core.numbers import delta, ratio, relative_pct
from evalharness.report.commands.diff import build_diff, quantities
from evalharness.report.runs import ReportError, comparability
from evalharness.rundir.reader import Run

SCORED = ("complete", "partial")  # statuses with metrics
SEQUENTIAL_NOTE = (
    "speed-up: the baseline's p50 / the row's, measured sequentially (the jobs ran one after another, "
    "so no interval is given: the machine's drift between jobs is in it); {interleaved}"
)


def _baseline_row(
    rows: list[dict[str, Any]], row: dict[str, Any], baseline: dict[str, Any], others: list[str]
) -> dict[str, Any] | None:
    """The scored row with the baseline values and ``row``'s values of every other varying key."""
    wanted = {**{k: row[k] for k in others}, **baseline}
    matches = (r for r in rows if r["status"] in SCORED and all(r[k] == v for k, v in wanted.items()))
    return next(matches, None)


def add_baseline(
    jobs: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    keys: list[str],
    baseline: dict[str, str],
    metrics: list[str],
) -> list[str]:
    """Add d_<metric>, d_latency_p50_pct and speedup_p50 to every row that has a baseline row other
    than itself (a run is never compared with itself: the baseline rows get none), and the paired
    interval of each change (``d_<metric>_ci_low/high``) where the two runs are on the same images:
    taken from :func:`baseline_pairwise`, never from the two runs' own intervals (the difference of
    two intervals' bounds is no interval of the difference). The speed-up has no interval: a sweep's
    jobs ran one after another, so the machine's drift between them is in the ratio and no interval
    of their invokes covers it (:data:`SEQUENTIAL_NOTE`; ``compare`` interleaves)."""
    unknown = [k for k in baseline if k not in keys]
    if unknown:
        raise ReportError(
            f"--baseline {unknown[0]}: not a parameter that varies in this sweep ({', '.join(keys)})"
        )
    if not any(all(r[k] == v for k, v in baseline.items()) for r in rows):
        spec = ",".join(f"{k}={v}" for k, v in baseline.items())
        raise ReportError(f"--baseline {spec}: no job of this sweep has these values")
    others = [k for k in keys if k not in baseline]
    runs = {j["run"]: j["doc"] for j in jobs}
    for row in rows:
        base = _baseline_row(rows, row, baseline, others)
        if base is None or base is row or row["status"] not in SCORED:
            continue
        for m in metrics:
            row[f"d_{m}"] = delta(base.get(m), row.get(m))
        row["d_latency_p50_pct"] = relative_pct(base["latency_p50_ms"], row["latency_p50_ms"])
        row["speedup_p50"] = ratio(base["latency_p50_ms"], row["latency_p50_ms"])
        paired, shared = baseline_pairwise(runs[base["run"]], runs[row["run"]])
        if shared is not None:  # a held-out part: the changes too are on the images both runs scored
            row.update({f"d_{m}": r["delta"] for m, r in shared["rows"].items() if m in metrics})
            row["baseline_paired_on"] = shared["paired_on"]
        for name, value in paired.items():
            if name.endswith(("_ci_low", "_ci_high")) and not name.startswith("speedup_"):
                row[f"d_{name}"] = value
    bounds = [f"d_{m}_ci_{end}" for m in metrics for end in ("low", "high")]
    intervals = [c for c in bounds if any(c in r for r in rows)]
    return [*(f"d_{m}" for m in metrics), "d_latency_p50_pct", "speedup_p50", *intervals]


def baseline_pairwise(base: Run, run: Run) -> tuple[dict[str, float], dict[str, Any] | None]:
    """The gate quantities of ``report diff BASE RUN`` with its default options (paired intervals of
    each change, McNemar or bootstrap p): the same code, so a sweep row and the diff of the same
    pair print the same interval. Empty where the pair is not comparable image by image. Second:
    where one run scores a held-out part of the other's list, the diff's rows (recomputed on the
    images both scored) and its ``paired_on``; else None."""
    comp = comparability(base, run)
    if comp.refused:
        return {}, None
    try:
        doc = build_diff(base, run, comp)
    except ReportError:  # a held-out part that is no part of the other's images: not paired
        return {}, None
    rows, values = quantities(doc)
    return values, ({"rows": rows, "paired_on": doc["paired_on"]} if doc.get("paired_on") else None)


def speed_note(
    rows: list[dict[str, Any]], baseline: dict[str, str] | None, interleaved_in: str | None = None
) -> str | None:
    """The one line that says how the speed-up column was measured (sequentially) and where an
    interleaved one is: ``interleaved_in`` (compare's own table), else the ``compare`` command that
    measures the sweep's values of the baseline key interleaved."""
    if not baseline or not any(r.get("speedup_p50") is not None for r in rows):
        return None
    if interleaved_in:
        return SEQUENTIAL_NOTE.format(interleaved=f"interleaved, with intervals: {interleaved_in}")
    key, first = next(iter(baseline.items()))
    values = [first, *dict.fromkeys(str(r[key]) for r in rows if r.get(key) not in (None, first))]
    command = f"evalharness compare {key}={','.join(values)} (and the sweep's other overrides)"
    return SEQUENTIAL_NOTE.format(interleaved=f"for an interval, measure them interleaved: {command}")
