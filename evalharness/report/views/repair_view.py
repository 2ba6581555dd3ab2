"""A repair as people read it (``provenance.model.quant.repair``): the frontier table, the ranking,
the held-out result, printed when the search ends and written into the run directory
(``repair/``: ``recipe.json``, ``repair.json``, ``frontier.txt``, ``frontier.md``)."""

from __future__ import annotations

import json
import os
from typing import Any

from evalharness.core.markdown import render_markdown
from evalharness.core.numbers import fmt
from evalharness.core.tables import Section, render_text
from evalharness.report.views.node_data import node_data
from evalharness.stats.intervals import fmt_interval
from evalharness.stats.power import resolution_text

TITLE = "evalharness quant.max_drop: the fewest ops in float that hold the drop"
RANKED_SHOWN = 10


def _db(value: Any) -> str:
    if isinstance(value, str):
        return value
    return fmt(value, ".1f")


def _ops(ops: list[int] | None, width: int = 6) -> str:
    if ops is None:
        return "all (the float model)"
    if not ops:
        return "none"
    shown = ", ".join(str(o) for o in ops[:width])
    return shown + (f", … (+{len(ops) - width})" if len(ops) > width else "")


def _coverage(c: dict[str, Any]) -> str:
    if c.get("ops_delegated") is None:
        return "n/a"
    return f"{c['ops_delegated']}/{c['ops_total']}"


def sections(record: dict[str, Any]) -> list[Section]:
    r = record["repair"]
    metric = r["metric"]
    rows = [
        [
            row["step"],
            "all" if row["float_ops"] is None else str(len(row["float_ops"])),
            _ops(row["float_ops"]),
            fmt(row["metric"], ".4f"),
            fmt(row["delta"], "+.4f"),
            fmt_interval(row["interval"], "+.4f"),
            _db(row["snr_db"]),
            fmt(row["bytes"] / 1e3, ".1f"),
            fmt(row["p50_ms"], ".3f"),
            _coverage(row["coverage"]),
            "yes" if row["holds"] else "no",
        ]
        for row in r["frontier"]
    ]
    split = r["split"]
    cal_rows = [row for row in r["frontier"] if row["step"].startswith("calibration")]
    notes = [
        f"search part: {split['search']} images (fraction {split['fraction']:g}, {split['scheme']}); float "
        f"{metric} {r['float_search']:.4f}; target: {r['target']} (allowed {r['allowed_drop']:.4f})",
        "Δ: variant − float on the search part with the paired 95% interval of report diff; SNR: the "
        "outputs against the float model's; p50: invoke() on the search part; coverage: ops the "
        "run's delegate took",
    ]
    cals = r["calibrations"]
    for label, cal in cals.items():
        if cal:
            notes.append(f"calibration '{label}': {cal['count']} images, source {cal['source']}")
    if len(cal_rows) > 1:
        first, second = cal_rows[:2]
        notes.append(
            f"better calibration alone: {metric} {first['metric']:.4f} -> {second['metric']:.4f} "
            f"({second['metric'] - first['metric']:+.4f} of the {r['float_search'] - first['metric']:+.4f} "
            f"drop recovered) before any op goes back to float; the search used "
            f"'{r['chosen']['calibration']}'"
        )
    headers = [*FRONTIER_HEADERS, metric, f"Δ {metric}", "95% interval", "SNR dB", "size kB", "p50 ms"]
    out = [Section("Frontier (search part)", [*headers, "coverage", "holds"], rows, notes, key="frontier")]
    if r["ranking"]:
        ranked = [
            [str(x["op"]), x["type"], _db(x["snr_gain_db"]), fmt(x["metric"], ".4f")]
            for x in r["ranking"][:RANKED_SHOWN]
        ]
        out.append(
            Section(
                f"Ops ranked by measured float fallback ({len(r['ranking'])} quantized ops)",
                ["op", "type", "SNR gain dB", f"{metric} alone in float"],
                ranked,
                [f"first {min(RANKED_SHOWN, len(r['ranking']))} shown; all in repair.json"],
                key="ranking",
            )
        )
    h = r["held_out"]
    chosen = r["chosen"]
    ops = ", ".join(f"op {o['op']} {o['type']}" for o in chosen["float_ops"]) or "none"
    out.append(
        Section(
            f"Held out ({h['images']} images, never searched on)",
            ["", "value"],
            [
                ["ops kept in float", ops],
                [f"float {metric}", fmt(h["float"], ".4f")],
                [f"variant {metric}", fmt(h["variant"], ".4f")],
                [f"Δ {metric} (variant − float)", fmt(h["delta"], "+.4f")],
                ["95% paired interval", fmt_interval(h["interval"], "+.4f")],
                ["answers changed", str(h["changed"])],
                ["drop within the target", "yes" if h["holds"] else "no"],
            ],
            [
                f"interval: {h['method']}",
                f"recipe: {r['recipe_file']} (same bytes as the searched variant: {chosen['same_bytes']})",
                f"again: {' '.join(r['reuse'])} (other settings as this run's)",
                f"{r['evaluations']['search']} model evaluations on the search part, "
                f"{r['evaluations']['held_out']} on the held-out part; {r['wall_s']:.1f} s",
            ],
            key="held_out",
        )
    )
    return out


FRONTIER_HEADERS = ["step", "float ops", "ops"]


def summary(record: dict[str, Any]) -> str:
    r = record["repair"]
    h, metric = r["held_out"], r["metric"]
    n = len(r["chosen"]["float_ops"])
    if r["status"] == "cannot":
        return (
            f"repair: cannot hold {r['target']} on the search part even with every quantized op in "
            "float (what stays quantized then is the model's integer input/output and the calibrated "
            f"ranges they carry); best found: {n} op(s) in float, held-out {metric} {h['variant']:.4f} vs "
            f"float {h['float']:.4f} ({h['delta']:+.4f}, 95% paired interval "
            f"{fmt_interval(h['interval'], '+.4f')})"
        )
    return (
        f"repair: {n} op(s) kept in float hold {r['target']}; held-out {metric} {h['variant']:.4f} vs "
        f"float {h['float']:.4f} ({h['delta']:+.4f}, 95% paired interval "
        f"{fmt_interval(h['interval'], '+.4f')}, {h['images']} images)"
    )


def print_repair(record: dict[str, Any]) -> None:
    print(render_text(TITLE, sections(record)), end="")
    print(summary(record))
    print(f"repair: {verdict(record['repair'])}")


def resolvable(r: dict[str, Any]) -> bool:
    """The held-out part can tell the target from noise (``resolution``; a repair recorded before
    it was measured: taken as resolvable, as it was then)."""
    return bool((r.get("resolution") or {}).get("resolves", True))


def verdict(r: dict[str, Any]) -> str:
    """The held-out result as one line (the run's summary and the repair's printout): held or
    missed, and whether that is a check (exit 1 on a miss) or, on too few images, a report only."""
    h, metric = r["held_out"], r["metric"]
    text = (
        f"held-out {metric} {h['variant']:.4f} vs float {h['float']:.4f} ({h['delta']:+.4f}, 95% paired "
        f"interval {fmt_interval(h['interval'], '+.4f')}, {h['images']} images): {r['target']} "
        + ("held" if h["holds"] else "missed")
    )
    # the metric bounded, and why that one (a repair recorded before it was said: top1, the task's)
    source = f" [{metric}: {r['metric_source']}]" if r.get("metric_source") else ""
    if not resolvable(r):
        why = resolution_text(r["resolution"], f"a drop of {r['allowed_drop']:.4g}")
        return f"{text}; not a check: {why}{source}"
    return text + ("" if h["holds"] else " (a failed check)") + source


def failed_checks(quant: dict[str, Any] | None) -> list[str]:
    """The run's failed checks (exit 1): the drop could not be held on the search part (a
    quantization repair, or the layer search of pruning or clustering, transforms/weight_search.py), or the
    held-out part, when it can resolve the target, shows a repair missed it."""
    search = ((quant or {}).get("weights") or {}).get("search") or {}
    if str(search.get("status", "")).startswith("cannot"):
        return [f"quant.weights search: {search['target']} cannot be held with even one layer edited"]
    r = (quant or {}).get("repair")
    if not r:
        return []
    if r["status"] == "cannot":
        return [f"quant repair: {r['target']} cannot be held even with every quantized op in float"]
    h = r["held_out"]
    if h["holds"] or not resolvable(r):
        return []
    return [
        f"quant repair: held-out {r['metric']} drop {h['float'] - h['variant']:.4f} misses {r['target']} "
        f"({h['images']} images)"
    ]


def write_repair(run_dir: str, record: dict[str, Any] | None) -> None:
    """``<run_dir>/repair/``: the recipe (reusable with quant.recipe=FILE), the whole record, the
    tables as text and Markdown, and Model Explorer node data of which ops stayed in float."""
    if not record or not record.get("repair"):
        return
    from evalharness.core.atomic_io import atomic_write_text
    from evalharness.core.numbers import stable_json

    folder = os.path.join(run_dir, "repair")
    write_recipe(os.path.join(folder, "recipe.json"), record["recipe_ops"])
    atomic_write_text(os.path.join(folder, "repair.json"), stable_json(record))
    atomic_write_text(os.path.join(folder, "frontier.txt"), render_text(TITLE, sections(record)))
    atomic_write_text(os.path.join(folder, "frontier.md"), render_markdown(TITLE, sections(record)))
    explorer = float_ops_data(record["repair"])
    atomic_write_text(os.path.join(folder, "model_explorer_float_ops.json"), stable_json(explorer))


def write_recipe(path: str, recipe: list[dict[str, Any]]) -> None:
    """The quantizer's JSON recipe as ``quant.recipe=FILE`` reads it back."""
    from evalharness.core.atomic_io import atomic_write_text

    atomic_write_text(path, json.dumps(recipe, indent=1) + "\n")


def float_ops_data(r: dict[str, Any]) -> dict[str, Any]:
    """Model Explorer node data (``ModelNodeData``, nodes by op index, as its TFLite adapter names
    them) of the repair on the float model's graph: 1 = kept in float, 0 = quantized, for every op the
    recipe quantizes."""
    kept = {o["op"] for o in r["chosen"]["float_ops"]}
    values = {op: 1 if op in kept else 0 for op in r["quantized_ops"]}
    gradient = [{"stop": 0, "bgColor": "#9ecae1"}, {"stop": 1, "bgColor": "#fd8d3c"}]
    return node_data(r["graph"], values, gradient, "kept in float (1) / quantized (0)")
