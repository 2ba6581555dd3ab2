"""explain.json as people read it: a summary sentence, tables, an HTML section, Model Explorer data.

The HTML plots the accumulated SNR along the graph (changed vs control images) with the culprit op
marked; ``report diff --format html`` links ``explain.html`` when it sits in the diff's runs'
``explain`` folder. ``model_explorer.json`` is Model Explorer's per-graph node data
(``{"results": {tensor name: {"value": ...}}, "gradient": [...]}``): load it beside the model
to see each op's local SNR on the changed images on the graph, the culprit painted red.
"""

from __future__ import annotations

import math
from typing import Any

from evalharness.core.numbers import fmt
from evalharness.core.tables import Section
from evalharness.report.views import html, plots

SNR_CAP = 120.0  # |dB| shown in Model Explorer for identical tensors (+inf) and NaN outputs (-inf)


def _snr(row: dict[str, Any], group: str, kind: str) -> Any:
    return row.get(group, {}).get(kind, {}).get("snr_db")


def _db(value: Any) -> str:
    if value is None:
        return "n/a"
    return "inf" if math.isinf(value) and value > 0 else f"{value:.1f}"


def _short(name: str, width: int = 48) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def culprit(doc: dict[str, Any]) -> dict[str, Any] | None:
    found = (doc.get("bisection") or {}).get("culprits") or []
    return found[0] if found else None


def summary(doc: dict[str, Any]) -> str:
    """The one sentence that answers "why did the answer change?"."""
    first = doc.get("first_nonfinite")
    if first:  # NaN mode: where B's path first goes non-finite while A's stays finite
        how = (
            "its own kernel makes them from A's finite inputs"
            if first["own"]
            else "it inherits them (its kernel is finite on A's inputs)"
        )
        head = (
            f"NaN mode: op {first['op']} {first['type']} is the first whose output on B's path is not "
            f"finite (NaN/inf) while A's is, on {len(first['images'])} image(s); {how}; "
        )
        return head + _why(doc)
    bad = [r for r in doc["ops"] if any((r[g]["local"]["nonfinite"] or 0) for g in ("changed", "controls"))]
    head = (
        f"op {bad[0]['index']} {bad[0]['type']} is the first whose output on B's path is not finite "
        "(NaN/inf) when fed A's finite inputs; "
        if bad
        else ""
    )
    return head + _why(doc)


def _why(doc: dict[str, Any]) -> str:
    b, ops = doc.get("bisection"), doc["ops"]
    traced = [i for i in doc["images"] if i["group"] == "changed"]
    if not b:
        worst = min(ops, key=lambda r: _snr(r, "controls", "accumulated") or math.inf)
        out = ops[-1]
        head = (
            f"no changed answer to explain ({len(traced)} changed image(s) traced, none reproduced)"
            if traced
            else "no answer changed between the runs"
        )
        return (
            f"{head}; B's error along the graph on {sum(i['group'] == 'control' for i in doc['images'])} "
            f"images: output SNR {_db(_snr(out, 'controls', 'accumulated'))} dB, lowest "
            f"{_db(_snr(worst, 'controls', 'accumulated'))} dB at op {worst['index']} {worst['type']}"
        )
    k = b["split_op"]
    text = (
        f"{len(b['restored_at_split'])} of {b['changed']} changed answers come back when ops 0–{k} run on "
        f"A's path"
        if k is not None
        else f"only {len(b['restored_at_split'])} of {b['changed']} changed answers come back even with "
        "every op on A's path: B's output tensor itself (its type or quantization) changes the others"
    )
    if b.get("output_saturated"):
        text += (
            f"; on {len(b['output_saturated'])} of them B's integer output is clipped at its maximum and "
            "the top classes tie (the lowest index wins)"
        )
    c = culprit(doc)
    if c is None:
        return text + "; no single op restores any of them alone (the change builds up over several ops)"
    row = ops[c["op"]]
    snr = {(g, k): _db(_snr(row, g, k)) for g in ("changed", "controls") for k in ("local", "accumulated")}
    text = (
        f"{text}; op {row['index']} {row['type']} '{_short(row['name'], 80)}' carries "
        f"{len(c['restores'])} of them: local SNR {snr['changed', 'local']} dB on changed images vs "
        f"{snr['controls', 'local']} dB on controls (accumulated {snr['changed', 'accumulated']} vs "
        f"{snr['controls', 'accumulated']} dB)"
    )
    more = b["culprits"][1:]
    fixed = [str(c["op"])]
    for c in more:
        text += (
            f"; with op{'s' if len(fixed) > 1 else ''} {', '.join(fixed)} fixed (A's kernel on B's path), "
            f"op {c['op']} {ops[c['op']]['type']} brings back {len(c['restores'])} more"
        )
        fixed.append(str(c["op"]))
    if b.get("unexplained"):
        text += f"; {len(b['unexplained'])} stay unexplained by any one more op"
    return text


def sections(doc: dict[str, Any], max_ops: int | None = None) -> list[Section]:
    runs = doc["runs"]
    run_rows = [
        [label, r["delegate"] or "?", r["op_resolver"], r["model"], r["dir"]] for label, r in runs.items()
    ]
    headers, images, note = _images(doc)
    out = [
        Section("Summary", [], [], [summary(doc)], key="explain-summary"),
        Section("Runs", ["side", "delegate", "op resolver", "model", "dir"], run_rows, key="explain-runs"),
        Section(
            f"Images ({doc['changed_total']} changed in the runs)",
            headers,
            images,
            [note],
            key="explain-images",
        ),
    ]
    b = doc.get("bisection")
    if b:
        trials = [[str(k), str(n)] for k, n in b["trials"].items()]
        out.append(
            Section(
                "Bisection (ops 0..k on A's path)",
                ["k", "changed answers restored"],
                trials,
                [f"split point: op {b['split_op']}" if b["split_op"] is not None else "no split point"],
                key="explain-bisection",
            )
        )
        ops = doc["ops"]
        if "alone" in b:  # explanations since the multi-culprit search
            out.append(_culprit_table(b, ops))
        rows = [
            [
                str(c["op"]),
                ops[c["op"]]["type"],
                _short(ops[c["op"]]["name"]),
                str(len(c["restores"])),
                _db(_snr(ops[c["op"]], "changed", "local")),
                _db(_snr(ops[c["op"]], "controls", "local")),
            ]
            for c in b.get("alone", b["culprits"])
        ]
        out.append(
            Section(
                "Ops that restore changed answers alone (op's output taken from A)",
                ["op", "type", "name", "restores", "local SNR changed", "local SNR controls"],
                rows,
                key="explain-alone",
            )
        )
    if doc.get("op_types"):
        out.append(_type_table(doc["op_types"]))
    out.append(_op_table(doc, max_ops))
    return out


def _culprit_table(b: dict[str, Any], ops: list[dict[str, Any]]) -> Section:
    rows = [
        [
            str(c["round"]),
            str(c["op"]),
            ops[c["op"]]["type"],
            _short(ops[c["op"]]["name"]),
            str(len(c["restores"])),
            f"{c['restored_total']}/{b['changed']}",
            ", ".join(c["restores"][:4]) + (" ..." if len(c["restores"]) > 4 else ""),
        ]
        for c in b["culprits"]
    ]
    notes = [
        "each round fixes the culprits before it (A's kernel runs them on B's path) and takes the op "
        "whose fix brings back most of the answers still changed",
        f"unexplained by any one more op: {', '.join(b['unexplained']) or 'none'}",
    ]
    return Section(
        "Culprits, ranked (each fixed before the next is sought)",
        ["round", "op", "type", "name", "restores", "restored so far", "images"],
        rows,
        notes,
        key="explain-culprits",
    )


def _type_table(types: list[dict[str, Any]]) -> Section:
    rows = [
        [
            t["type"],
            str(t["ops"]),
            str(t["culprits"]),
            str(t["restores"]),
            _db(t["local_snr_min"]),
            _db(t["local_snr_median"]),
        ]
        for t in types
    ]
    group = types[0]["group"] if types else "changed"
    return Section(
        "By op type",
        ["type", "ops", "culprits", "answers restored", f"local SNR min ({group})", "median"],
        rows,
        key="explain-types",
    )


def _images(doc: dict[str, Any]) -> tuple[list[str], list[list[str]], str]:
    """The images table: A's and B's decoded answers side by side (classifier or detector)."""
    restored = "restored: split / culprit"
    if (doc.get("answer") or {}).get("kind") == "detector":
        o = doc["answer"]
        headers = ["image", "group", "A boxes", "B boxes", "matched", "lost", "new", "IoU min / mean",
                   "class agreement", "max |score change|", restored, "re-run agrees"]  # fmt: skip
        note = (
            f"boxes with score >= {o['min_score']}, matched any class at IoU >= {o['iou']} (class agreement "
            "over matched boxes); restored: B's boxes equal A's (same class, IoU >= "
            f"{o['iou']}, none lost or new) with ops 0..split, or only the culprit op's output, from A"
        )
        return headers, [_detector_row(i) for i in doc["images"]], note + _change_note(doc)
    headers = ["image", "group", "A top-1 (score)", "B top-1 (score)", "B score of A's", "top-5 overlap",
               restored, "re-run agrees with the runs"]  # fmt: skip
    note = (
        "scores in the output's real units; restored: A's top-1 back with ops 0..split, or only the "
        "culprit op's output, taken from A"
    )
    return headers, [_classifier_row(i) for i in doc["images"]], note + _change_note(doc)


def _change_note(doc: dict[str, Any]) -> str:
    """What changed on each changed image, in the runs' own comparison (report diff's caption)."""
    said = [f"{i['id']}: {i['change']}" for i in doc["images"] if i.get("change")]
    return "; in the runs (report diff): " + "; ".join(said) if said else ""


def _restored(d: dict[str, Any]) -> str:
    yes = {True: "yes", False: "no"}
    if "restored_at_split" not in d:
        return ""
    return f"{yes[d['restored_at_split']]} / {yes[d['restored_by_culprit']]}"


def _classifier_row(image: dict[str, Any]) -> list[str]:
    d = image.get("decoded") or {}  # explain.json written before the decoded comparison: none
    return [
        image["id"],
        image["group"],
        f"{image['a_top1']} ({fmt(d.get('a_score'), '.3g')})",
        f"{image['b_top1']} ({fmt(d.get('b_score'), '.3g')})",
        fmt(d.get("b_score_of_a_top1"), ".3g"),
        fmt(d.get("top5_overlap"), ".1f"),
        _restored(d),
        "yes" if image["reproduced"] else "NO",
    ]


def _detector_row(image: dict[str, Any]) -> list[str]:
    d = image["decoded"]
    return [
        image["id"],
        image["group"],
        str(image["a_boxes"]),
        str(image["b_boxes"]),
        str(d["matched"]),
        str(d["lost"]),
        str(d["new"]),
        f"{fmt(d['min_iou'], '.3f')} / {fmt(d['mean_iou'], '.3f')}",
        fmt(d["class_agreement"], ".2f"),
        fmt(d["max_abs_score_change"], ".3g"),
        _restored(d),
        "yes" if image["reproduced"] else "NO",
    ]


def _op_table(doc: dict[str, Any], max_ops: int | None) -> Section:
    ops = doc["ops"][:max_ops] if max_ops else doc["ops"]
    mark = (culprit(doc) or {}).get("op")
    rows = [
        [
            f"{r['index']}{' *' if r['index'] == mark else ''}",
            r["type"],
            _short(r["name"], 40),
            _db(_snr(r, "changed", "local")),
            _db(_snr(r, "controls", "local")),
            _db(_snr(r, "changed", "accumulated")),
            _db(_snr(r, "controls", "accumulated")),
            fmt(r["controls"]["accumulated"]["max_abs"], ".4g"),
            fmt(r["controls"]["accumulated"]["cosine"], ".5f"),
            _own(r),
        ]
        for r in ops
    ]
    return Section(
        "Per-op error of B against A (SNR in dB)",
        ["op", "type", "name", "local chg", "local ctl", "accum chg", "accum ctl", "max abs ctl", "cos ctl",
         "own share"],
        rows,
        [
            "local: B's kernel for the op alone, fed A's inputs; accum: B's whole path; * the culprit",
            "chg: changed images; ctl: control images; inf: identical",
            "own share: of the op's accumulated error power, the part its own kernel makes (local / "
            "accumulated noise; the rest is inherited from the ops before it), changed images (controls "
            "where none changed)",
        ],
        key="explain-ops",
    )  # fmt: skip


def _own(row: dict[str, Any]) -> str:
    for group in ("changed", "controls"):
        split = (row.get(group) or {}).get("split")
        if split:
            return fmt(split["own"], ".2f")
    return "n/a"


def render_html(doc: dict[str, Any]) -> str:
    ops = doc["ops"]

    def series(group: str, kind: str) -> list[Any]:
        return [
            v if v is not None and math.isfinite(v) else None for v in (_snr(r, group, kind) for r in ops)
        ]

    curve = plots.error_curve(
        {
            "accumulated, changed": series("changed", "accumulated"),
            "accumulated, controls": series("controls", "accumulated"),
            "local, changed": series("changed", "local"),
        },
        "SNR of B against A, dB",
        (culprit(doc) or {}).get("op"),
    )
    figure = html.figure_html("Error along the graph (gaps: identical tensors)", curve)
    return html.page(
        "evalharness explain: why did the answer change?", sections(doc), {"explain-summary": [figure]}
    )


def model_explorer(doc: dict[str, Any]) -> dict[str, Any]:
    """Model Explorer node data (one graph): local SNR on the changed images (controls when none)."""
    group = (
        "changed" if any(i["group"] == "changed" and i["reproduced"] for i in doc["images"]) else "controls"
    )
    mark = (culprit(doc) or {}).get("op")
    results = {}
    for r in doc["ops"]:
        value = _snr(r, group, "local")
        value = SNR_CAP if value is None else round(min(max(value, -SNR_CAP), SNR_CAP), 3)  # finite numbers
        results[r["tensor"]] = {"value": value, **({"bgColor": "#d62728"} if r["index"] == mark else {})}
    return {
        "results": results,
        "gradient": [{"stop": 0, "bgColor": "#f4a582"}, {"stop": 1, "bgColor": "#f7f7f7"}],
    }
