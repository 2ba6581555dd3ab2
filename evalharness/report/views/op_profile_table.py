"""The op profile as people read it: the short top-N table, the CSV, and per-type speed-ups between
two profiled runs (``report diff``). Pure functions of ``metrics.op_profile`` (the record written by
``runtime/op_profile.py``); nothing here runs a model."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from evalharness.core.documents import DiffDocument
from evalharness.core.tables import Section, render_text
from evalharness.stats.speedup import SEQUENTIAL

CSV_FILE = "op_profile.csv"
EXPLORER_FILE = "op_profile.model_explorer.json"
CSV_COLUMNS = (
    "index",
    "type",
    "name",
    "backend",
    "kernel",
    "mean_ms",
    "median_ms",
    "min_ms",
    "max_ms",
    "std_ms",
    "count",
)


def run_sections(record: Mapping[str, Any], n: int = 10) -> list[Section]:
    """One run's op profile as tables: the costliest ``n`` ops, per op type, per backend, and the
    sum and placement checks as notes (``results.txt``, ``report analysis`` in every format)."""
    total = record["sum_median_ms"] or 1.0
    ops = sorted(record["ops"], key=lambda o: -o["median_ms"])[:n]
    kernels = any(o.get("kernel") for o in record["ops"])  # the runtime's profiler names each kernel
    top = [
        [_index(o), o["type"], str(o["backend"]), f"{o['median_ms']:.3f}",
         f"{o['median_ms'] / total:.1%}", *([o.get("kernel") or ""] if kernels else []), o["name"][:48]]
        for o in ops
    ]  # fmt: skip
    p = record["placements"]
    verdict = "agree" if p["agree"] else "unknown" if p["agree"] is None else "DISAGREE"
    notes = [
        f"source: {record['source']}; placement from {record['placement_source']}",
        _sum_line(record),
        f"placements vs coverage: {p['ops_delegated_by_profile']} vs {p['ops_delegated_by_coverage']} "
        f"delegated ({verdict})",
        *([f"why not: {record['note']}"] if record.get("note") else []),
        *([f"speed: {record['speed_note']}"] if record.get("speed_note") else []),
    ]
    return [
        Section(f"Op profile: top {len(ops)} of {len(record['ops'])} ops by median time",
                ["#", "type", "backend", "median ms", "share", *(["kernel"] if kernels else []), "name"],
                top, key="op-profile"),
        _rollup("Op profile: per op type", "op type", record["by_type"]),
        _rollup("Op profile: per backend", "backend", record["by_backend"], notes),
    ]  # fmt: skip


_BASES = {  # the sum check's denominator, as the sum line names it
    "per invoke, the interpreter's Invoke": ("event_median_ms", "the interpreter's Invoke event"),
    "per invoke, LiteRT's run": ("runtime_median_ms", "LiteRT's whole run"),
    "per invoke, wall-clock": ("median_ms", "the wall-clock around the call"),
}


def _sum_line(record: Mapping[str, Any]) -> str:
    invoke, basis = record["invoke"], record.get("sum_basis") or "medians"
    text = (
        f"per-op medians sum to {record['sum_median_ms']:.3f} ms, invoke median {invoke['median_ms']:.3f} ms"
    )
    if basis in _BASES:
        key, name = _BASES[basis]
        ratio = record["sum_over_invoke"]
        text += f"; each invoke's op events over {name} ({invoke[key]:.3f} ms), median: x{ratio:.3f}"
    else:
        text += f"; per-op medians over it: x{record['sum_over_invoke']:.3f}"
    text += f", within {record['tolerance']:.0%}: {'yes' if record['adds_up'] else 'no'}"
    others = (
        ("sum_over_runtime", "per invoke, LiteRT's run", "LiteRT's whole run"),
        ("sum_over_wall", "per invoke, wall-clock", "the wall-clock"),
    )
    for key, other, name in others:  # the same ratio over the spans that are not the check's
        if invoke.get(key) is not None and basis != other:
            text += f"; over {name}: x{invoke[key]:.3f}"
    cpu = record["sum_over_invoke_cpu"]
    return text + f"; against the invoke's process CPU time {invoke['cpu_median_ms']:.3f} ms: x{cpu:.3f}"


def _index(op: dict[str, Any]) -> str:
    return "-" if op["index"] is None else str(op["index"])


def _rollup(title: str, what: str, groups: dict[str, Any], notes: list[str] | None = None) -> Section:
    ranked = sorted(groups.items(), key=lambda kv: -kv[1]["ms"])  # metrics.json stores keys sorted
    rows = [[name, str(g["count"]), f"{g['ms']:.3f}", f"{g['share']:.1%}"] for name, g in ranked]
    return Section(title, [what, "ops", "median ms", "share"], rows, notes or [])


def top_lines(record: Mapping[str, Any], n: int = 10) -> list[str]:
    """The op profile's lines in ``results.txt`` and on the terminal."""
    return render_text("Op profile", run_sections(record, n)).splitlines()


def csv_text(record: Mapping[str, Any]) -> str:
    """One row per op (execution order), the columns of :data:`CSV_COLUMNS`."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for o in record["ops"]:
        values = [o.get(c) for c in CSV_COLUMNS]
        writer.writerow(["" if v is None else f"{v:.6f}" if isinstance(v, float) else v for v in values])
    return out.getvalue()


def model_explorer(record: Mapping[str, Any]) -> dict[str, Any]:
    """Model Explorer node data: median ms per node (keyed by the op's output tensor name, as
    ``explain``'s), the backend in the node's label colour."""
    colours: dict[str, str] = {}
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")
    for name in record["by_backend"]:
        colours[name] = palette[len(colours) % len(palette)]
    return {
        "results": {
            o["name"]: {
                "value": round(o["median_ms"], 6),
                "label": str(o["backend"]),
                "bgColor": colours.get(str(o["backend"])),
            }
            for o in record["ops"]
        },
        "gradient": [{"stop": 0, "bgColor": "#f7f7f7"}, {"stop": 1, "bgColor": "#d62728"}],
    }


def time_ratio(a_ms: float, b_ms: float) -> float | None:
    """A's time / B's time. Equal times are 1.0 even when both rounded to 0 ms (a run against itself
    is never "undefined"); a B time of 0 against a non-zero A is below the profiler's resolution:
    None, shown as "too short to time", never a made-up ratio."""
    if a_ms == b_ms:
        return 1.0
    return a_ms / b_ms if b_ms else None


def speedups(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """Per op type (and per op, where both runs profiled the same graph): A's time / B's time
    (> 1: B faster), medians. None when neither run carries an op profile; ``only`` names the one
    that does when only one does (said in the diff, never silently dropped)."""
    if not a and not b:
        return None
    if not a or not b:
        return {"only": "A" if a else "B"}
    by_type = {}
    for name, ga in a["by_type"].items():
        gb = b["by_type"].get(name)
        if gb:
            by_type[name] = {
                "a_ms": ga["ms"],
                "b_ms": gb["ms"],
                "speedup": time_ratio(ga["ms"], gb["ms"]),
            }
    same_graph = [(o["index"], o["type"]) for o in a["ops"]] == [(o["index"], o["type"]) for o in b["ops"]]
    per_op = None
    if same_graph:
        per_op = [
            {
                "index": oa["index"],
                "type": oa["type"],
                "a_ms": oa["median_ms"],
                "b_ms": ob["median_ms"],
                "speedup": time_ratio(oa["median_ms"], ob["median_ms"]),
                "a_backend": oa["backend"],
                "b_backend": ob["backend"],
            }
            for oa, ob in zip(a["ops"], b["ops"], strict=True)
        ]
    return {
        "by_type": by_type,
        "ops": per_op,
        "same_graph": same_graph,
        "sources": [a["source"], b["source"]],
    }


def diff_section(doc: DiffDocument, n: int = 10) -> list[Section]:
    """``report diff``'s op-profile section: per-type speed-ups, then the ops that moved most."""
    sp = doc.get("op_profile")
    if not sp:
        return []
    if "only" in sp:
        note = (
            f"only run {sp['only']} has an op profile: profile both (loop.op_profile=true) to compare per op"
        )
        return [Section("Op profile", notes=[note], key="op-profile-diff")]
    rows = [
        [name, f"{r['a_ms']:.3f}", f"{r['b_ms']:.3f}", _x(r["speedup"])]
        for name, r in sorted(sp["by_type"].items(), key=lambda kv: -kv[1]["a_ms"])
    ]
    sections = [
        Section(
            "Op profile: per op type (median ms, speed-up = A/B)",
            ["op type", "A", "B", "speed-up"],
            rows,
            [f"speed-up: {SEQUENTIAL}"],  # two runs' profiles: a ratio of separate measurements
        )
    ]
    if sp["ops"]:
        moved = sorted((o for o in sp["ops"] if o["speedup"]), key=lambda o: -abs(o["a_ms"] - o["b_ms"]))[:n]
        sections.append(
            Section(
                "Op profile: ops whose time moved most",
                ["#", "type", "A backend", "B backend", "A", "B", "speed-up"],
                [
                    [
                        str(o["index"]),
                        o["type"],
                        str(o["a_backend"]),
                        str(o["b_backend"]),
                        f"{o['a_ms']:.3f}",
                        f"{o['b_ms']:.3f}",
                        _x(o["speedup"]),
                    ]
                    for o in moved
                ],
            )
        )
    return sections


def _x(value: float | None) -> str:
    return "too short to time" if value is None else f"{value:.2f}x"
