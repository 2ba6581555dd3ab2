"""The sections of a ``report diff``, built from the diff dict for every output format."""

from __future__ import annotations

import os

from evalharness.report.numbers import fmt, fmt_pct
from evalharness.report.paired import format_p
from evalharness.report.tables import Section

CHANGE_TEXT = {
    "regression": "A right -> B wrong",
    "improvement": "A wrong -> B right",
    "changed": "both wrong, prediction changed",
}


def short(label: str | None) -> str:
    """The first synonym of an ImageNet label ("tabby, tabby cat" -> "tabby"): tables stay readable."""
    return "n/a" if label is None else label.split(",")[0]


def title(doc: dict) -> str:
    return f"evalharness diff: A = {_name(doc['a'])} vs B = {_name(doc['b'])}"


def _name(run: dict) -> str:
    return f"{run['model']} @ {run['delegate']}"


def sections(doc: dict, max_rows: int = 20) -> list[Section]:
    out = [_runs(doc), _comparability(doc), _value_table("Metrics", "metrics", doc["metrics"], ".4f", "+.4f")]
    out.append(_latency(doc))
    out.append(_value_table("Model and delegation", "model", doc["model"], ".6g", "+.6g"))
    if "classification" in doc:
        out += _classification(doc["classification"], max_rows)
    elif "detection" in doc:
        out += _detection(doc["detection"], max_rows)
    if doc.get("gates"):
        out.append(_gates(doc["gates"]))
    out.append(Section("Verdict", notes=[doc["verdict"]], key="verdict"))
    return out


def _runs(doc: dict) -> Section:
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


def _comparability(doc: dict) -> Section:
    c = doc["comparability"]
    tag = "warning (acknowledged)" if c["acknowledged"] else "WARNING"
    notes = [f"refused: {r}" for r in c["refused"]] + [f"{tag}: {w}" for w in c["warnings"]]
    notes += [f"note: {n}" for n in c["notes"]]
    return Section(
        "Comparability",
        notes=notes or ["same task, images, ground truth, preprocessing and label set"],
        key="comparability",
    )


def _value_table(name: str, key: str, rows: list[dict], spec: str, delta_spec: str) -> Section:
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


def _latency(doc: dict) -> Section:
    rows = [
        [r["name"], fmt(r["a"], ".3f"), fmt(r["b"], ".3f"), fmt_pct(r["delta_pct"]), fmt(r["speedup"], ".3f")]
        for r in doc["latency"]
    ]
    notes = ["ms; timed region invoke() only; speed-up = A / B (> 1: B is faster)"]
    return Section("Latency", ["stat", "A", "B", "delta %", "speed-up"], rows, notes, key="latency")


def _classification(c: dict, max_rows: int) -> list[Section]:
    stats = [
        ["paired images", fmt(c["paired_images"])],
        ["only in A / only in B", f"{c['only_in_a']} / {c['only_in_b']}"],
        ["top-1 agreement", fmt(c["top1_agreement"], ".4f")],
        ["mean top-5 overlap", fmt(c["top5_overlap"], ".4f")],
        ["A right -> B wrong (regressions)", fmt(c["regressions"])],
        ["A wrong -> B right (improvements)", fmt(c["improvements"])],
        ["both wrong, top-1 changed", fmt(c["changed_both_wrong"])],
        ["McNemar exact p (two-sided)", format_p(c["mcnemar_p"])],
    ]
    changes = c["top1_changes"]
    rows = [
        [ch["id"], short(ch["label"]), short(ch["a_top1"]), short(ch["b_top1"]), CHANGE_TEXT[ch["kind"]]]
        for ch in changes[:max_rows]
    ]
    return [
        Section("Paired top-1", ["", "value"], stats, key="paired"),
        Section(
            f"Top-1 changes ({len(changes)})",
            ["image", "label", "A top-1", "B top-1", "change"],
            rows,
            ["labels: first synonym only (full text in --format json)", *_more(len(changes), max_rows)],
            key="flips",
        ),
    ]


def _detection(d: dict, max_rows: int) -> list[Section]:
    t = d["detections"]
    stats = [
        ["paired images", fmt(d["paired_images"])],
        ["detections A / B", f"{t['a']} / {t['b']}"],
        ["matched (same class, IoU >= " + fmt(d["iou_threshold"], "g") + ")", fmt(t["matched"])],
        ["only in A / only in B", f"{t['only_a']} / {t['only_b']}"],
        ["images with changed boxes", fmt(d["images_changed"])],
        ["mean IoU of matched boxes", fmt(d["mean_iou"], ".4f")],
        ["mean |score change| of matched boxes", fmt(d["mean_abs_score_delta"], ".4g")],
    ]
    images = [
        [
            r["id"],
            str(r["a"]),
            str(r["b"]),
            str(r["matched"]),
            str(r["only_a"]),
            str(r["only_b"]),
            fmt(r["mean_iou"], ".3f"),
        ]
        for r in d["changed_images"][:max_rows]
    ]
    classes = [
        [
            f"{r['name']} ({r['category_id']})",
            fmt(r["a"], ".4f"),
            fmt(r["b"], ".4f"),
            fmt(r["delta"], "+.4f"),
            str(r["num_gt"]),
        ]
        for r in d["per_class"][:max_rows]
    ]
    return [
        Section("Boxes", ["", "value"], stats, [f"detections with score >= {d['min_score']:g}"], key="boxes"),
        Section(
            f"Images with changed boxes ({len(d['changed_images'])})",
            ["image", "A", "B", "matched", "only A", "only B", "mean IoU"],
            images,
            _more(len(d["changed_images"]), max_rows),
            key="changed_images",
        ),
        Section(
            "Per-class AP (largest |delta| first)",
            ["class", "A", "B", "delta", "gt boxes"],
            classes,
            _more(len(d["per_class"]), max_rows),
            key="per_class",
        ),
    ]


def _gates(gates: list[dict]) -> Section:
    rows = [[g["rule"], g["detail"], "FAIL" if g["failed"] else "ok"] for g in gates]
    return Section("Gates (--fail-if)", ["rule", "tested", "result"], rows, key="gates")


def _more(total: int, shown: int) -> list[str]:
    return [f"... {total - shown} more (all of them in --format json)"] if total > shown else []


def render_html(doc: dict, max_rows: int = 20) -> str:
    """The diff as one HTML page: the tables plus latency and per-class plots and thumbnails."""
    from evalharness.report import html, plots

    runs = [(f"{r['label']}: {_name(r)}", _inference(doc, r["label"].lower())) for r in (doc["a"], doc["b"])]
    after = {
        "latency": [html.figure_html("Latency summary", plots.latency_summary(runs), plots.LATENCY_NOTE)]
    }
    if "detection" in doc:
        svg = plots.class_deltas(doc["detection"]["per_class"])
        after["per_class"] = [html.figure_html("Per-class AP change (B - A)", svg)]
        after["changed_images"] = [
            _thumbnails(doc, doc["detection"]["changed_images"][:max_rows], "Thumbnails: changed boxes")
        ]
    elif "classification" in doc:
        after["flips"] = [
            _thumbnails(doc, doc["classification"]["top1_changes"][:max_rows], "Thumbnails: top-1 changes")
        ]
    return html.page(title(doc), sections(doc, max_rows), after)


def _inference(doc: dict, side: str) -> dict:
    return {r["name"].removeprefix("latency_"): r[side] for r in doc["latency"]}


def _thumbnails(doc: dict, rows: list[dict], heading: str) -> str:
    """Thumbnails of the listed images, read from A's dataset root (the runs saw the same images)."""
    from evalharness.report import html

    root = doc["a"].get("dataset_root") or ""
    items = []
    for row in rows:
        uri = html.thumbnail_uri(os.path.join(root, row["id"]))
        if uri:
            items.append((f"{row['id']}: {_caption(row)}", uri))
    return html.thumbnails_html(heading, items)


def _caption(row: dict) -> str:
    if "kind" in row:
        labels = f"truth {short(row['label'])}; A {short(row['a_top1'])}; B {short(row['b_top1'])}"
        return f"{CHANGE_TEXT[row['kind']]}; {labels}"
    return f"{row['only_a']} box(es) only in A, {row['only_b']} only in B"
