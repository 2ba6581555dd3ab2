"""The COCO run's error analysis as people read it: results.txt lines, ``report diff`` sections and
the figures the HTML draws (PR curves, TIDE bars, confusion matrices, per-class ΔAP).

The numbers come from ``metrics.analysis`` (:mod:`evalharness.stats.detection_analysis`,
:mod:`evalharness.stats.tide`) and, between two runs, from the paired bootstrap ``report diff``
already runs for ΔAP (:func:`evalharness.stats.coco_intervals.paired_ap_bootstrap`): no interval
here has code of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.numbers import fmt
from evalharness.core.tables import Section, more_rows
from evalharness.stats.detection_analysis import BACKGROUND, IOU, confusion, confusion_pairs
from evalharness.stats.intervals import fmt_interval
from evalharness.stats.paired import holm
from evalharness.stats.tide import MAIN, NAMES, tide_delta, tide_line
from evalharness.tasks.coco.analysis_comparison import AnalysisComparison

if TYPE_CHECKING:  # for the types only
    from evalharness.rundir.reader import Run

TOP = 5  # classes and confusions named in results.txt
CURVE_CLASSES = 6  # per-class PR curves drawn in a diff: the classes whose AP changed most
CURVES_FILE = "pr_curves.json"  # a run's per-class PR curves (beside metrics.json)
PER_CLASS_NOTES = (
    "paired interval and p: the paired bootstrap of ΔAP above (same image resamples), per class; "
    "a class's figures come from the resamples that hold it, so with few gt boxes they are coarse",
    "p (Holm): adjusted for the number of classes tested (Holm-Bonferroni step-down)",
)


def _classes(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['name']} {r['AP']:.3f} ({r['num_gt']})" for r in rows)


def summary_lines(metrics: dict[str, Any]) -> list[str]:
    """The analysis in four lines, five with a seg model's TIDE of its masks (nothing for a run made
    before it, or with ``task.analysis=false``)."""
    a = metrics.get("analysis")
    if not a:
        return []
    f1 = a["f1"]
    lines = [
        f"Analysis at IoU {a['iou_threshold']:.2f} (pycocotools' matching, maxDets 100): "
        + (
            f"F1-optimal score threshold {f1['score_threshold']:.4g}: precision {f1['precision']:.4f}, "
            f"recall {f1['recall']:.4f}, F1 {f1['f1']:.4f} ({f1['detections_kept']} detections kept, "
            f"{f1['num_gt']} objects)"
            if f1["score_threshold"] is not None
            else "no true positive, no F1 threshold"
        )
    ]
    rows = a["per_class"]
    if rows:
        head = f"Per-class AP (ground-truth boxes), {len(rows)} class{'es' if len(rows) > 1 else ''}"
        if len(rows) <= 2 * TOP:  # best and worst would name some classes twice: all of them, once
            lines.append(f"{head}, best first: {_classes(rows)}")
        else:
            lines.append(f"{head}: best {_classes(rows[:TOP])}; worst {_classes(rows[::-1][:TOP])}")
    names = {r["category_id"]: r["name"] for r in rows}
    pairs = confusion_pairs(a["confusion"]["cells"], names, TOP)
    text = ", ".join(f"{_name(p['truth_name'])} -> {_name(p['predicted_name'])} {p['count']}" for p in pairs)
    lines.append(
        f"Confusions at score >= {fmt(a['confusion']['score_threshold'], '.4g')}, IoU {IOU:.2f} "
        f"(truth -> detected): {text or 'none'}"
    )
    lines.append(tide_line(a.get("tide")))
    if "tide_segm" in a:
        lines.append(tide_line(a["tide_segm"], "masks"))
    return lines


def _name(name: str) -> str:
    return "[background]" if name == "background" else name


def compare(
    a: Run, b: Run, ground_truth: dict[str, Any], per_class: list[dict[str, Any]]
) -> AnalysisComparison:
    """Between runs ``a`` and ``b`` (:class:`~evalharness.rundir.reader.Run`): TIDE of A, B and Δ per
    type, the F1 threshold shift, both confusion matrices at A's F1-optimal threshold (one threshold,
    so a changed count is a changed model, not a moved threshold) with the pairs that changed most,
    and the PR curves of the classes whose AP changed most (``per_class``: rows by |ΔAP|)."""
    a_metrics, b_metrics = a.metrics, b.metrics
    preds_a, preds_b = a.predictions, b.predictions
    image_ids = [r["image_id"] for r in preds_a]
    aa, ab = a_metrics.get("analysis"), b_metrics.get("analysis")
    out: AnalysisComparison = {"recorded": {"a": aa is not None, "b": ab is not None}}
    if aa is None or ab is None:
        return out
    threshold = aa["f1"]["score_threshold"]
    counts = []
    for preds in (preds_a, preds_b):
        cells = confusion(ground_truth, detection_blocks(preds), image_ids, threshold)["cells"]
        counts.append({(g, d): n for g, d, n in cells})
    names = {c["id"]: c["name"] for c in ground_truth["categories"]}
    changes = []
    for key in sorted(set(counts[0]) | set(counts[1])):
        na, nb = counts[0].get(key, 0), counts[1].get(key, 0)
        if key[0] != key[1] and na != nb:
            changes.append(
                {
                    "truth": key[0],
                    "predicted": key[1],
                    "truth_name": names.get(key[0], "background"),
                    "predicted_name": names.get(key[1], "background"),
                    "a": na,
                    "b": nb,
                    "delta": nb - na,
                }
            )
    changes.sort(key=lambda r: (-abs(r["delta"]), r["truth"], r["predicted"]))
    fa, fb = aa["f1"], ab["f1"]
    if "tide_segm" in aa and "tide_segm" in ab:  # a seg pair: TIDE of its masks beside the boxes'
        out["tide_segm"] = tide_delta(aa["tide_segm"], ab["tide_segm"])
        out["tide_segm_reason"] = _tide_reasons(aa["tide_segm"], ab["tide_segm"])
    return {
        **out,
        "tide": tide_delta(aa.get("tide"), ab.get("tide")),
        "tide_reason": _tide_reasons(aa.get("tide"), ab.get("tide")),
        "f1": {"a": fa, "b": fb, "threshold_shift": _minus(fb["score_threshold"], fa["score_threshold"])},
        "confusion": {
            "score_threshold": threshold,
            "iou": IOU,
            "background": BACKGROUND,
            "changes": changes,
            "a": [[*k, n] for k, n in sorted(counts[0].items())],
            "b": [[*k, n] for k, n in sorted(counts[1].items())],
        },
        "pr_curves": {"a": aa["pr_curves"], "b": ab["pr_curves"]},
        "class_curves": _class_curves(a, b, [r["category_id"] for r in per_class[:CURVE_CLASSES]]),
    }


def _tide_reasons(a: dict[str, Any] | None, b: dict[str, Any] | None) -> list[str | None]:
    """Why a run's TIDE breakdown is missing, for each run without one."""
    return [(t or {}).get("reason") for t in (a, b) if not (t or {}).get("available")]


def _class_curves(a: Run, b: Run, categories: list[int]) -> list[dict[str, Any]]:
    """The per-class PR curves of A and B (their ``pr_curves.json``) of ``categories``, where both
    runs wrote them."""
    import os

    from evalharness.core.untrusted import read_json

    curves = []
    for run in (a, b):
        path = os.path.join(run.dir or "", CURVES_FILE)
        if not os.path.isfile(path):
            return []
        curves.append(read_json(path, "the run's per-class curves", required={"classes": dict})["classes"])
    return [
        {
            "category_id": cat,
            "name": curves[0][str(cat)]["name"],
            "a": curves[0][str(cat)],
            "b": curves[1][str(cat)],
        }
        for cat in categories
        if str(cat) in curves[0] and str(cat) in curves[1]
    ]


def detection_blocks(
    records: list[dict[str, Any]], wanted: set[Any] | None = None
) -> Callable[[], Iterator[tuple[Any, np.ndarray]]]:
    """``blocks()`` of a run's records: (image_id, (n, 6) array of category, score, x, y, w, h)."""

    def blocks() -> Iterator[tuple[Any, np.ndarray]]:
        for r in records:
            if r.get("detections") and (wanted is None or r["image_id"] in wanted):
                yield r["image_id"], np.asarray(r["detections"], dtype=np.float64).reshape(-1, 6)

    return blocks


def _minus(b: float | None, a: float | None) -> float | None:
    return None if a is None or b is None else b - a


def sections(d: dict[str, Any], max_rows: int) -> list[Section]:
    """TIDE A/B/Δ, the F1 threshold, the changed confusion pairs; a note when a run has no analysis."""
    an = d.get("analysis")
    if not an:
        return []
    if "tide" not in an:
        missing = " and ".join(s.upper() for s in ("a", "b") if not an["recorded"][s])
        return [
            Section(
                "Error analysis",
                notes=[
                    f"not recorded in run {missing} (made before it, or "
                    "task.analysis=false): rerun it to compare"
                ],
                key="analysis",
            )
        ]
    tide = [_tide_section(an, "tide", "TIDE error breakdown (dAP50 points)", "IoU")]
    if "tide_segm" in an:  # a seg pair's masks, by mask IoU
        tide.append(_tide_section(an, "tide_segm", "TIDE error breakdown, masks (dAP50 points)", "mask IoU"))
    fa, fb = an["f1"]["a"], an["f1"]["b"]
    f1_rows = [
        [label, fmt(fa[key], spec), fmt(fb[key], spec), fmt(_minus(fb[key], fa[key]), "+" + spec)]
        for label, key, spec in (
            ("score threshold", "score_threshold", ".4g"),
            ("precision", "precision", ".4f"),
            ("recall", "recall", ".4f"),
            ("F1", "f1", ".4f"),
        )
    ]
    c = an["confusion"]
    changes = [
        [
            f"{_name(r['truth_name'])} -> {_name(r['predicted_name'])}",
            str(r["a"]),
            str(r["b"]),
            f"{r['delta']:+d}",
        ]
        for r in c["changes"][:max_rows]
    ]
    return [
        *tide,
        Section(
            "F1-optimal score threshold",
            ["", "A", "B", "delta (B-A)"],
            f1_rows,
            [f"each run's own F1-optimal threshold, IoU {IOU:g}, all classes pooled"],
            key="f1",
        ),
        Section(
            f"Confusion pairs that changed ({len(c['changes'])})",
            ["truth -> detected", "A", "B", "delta"],
            changes,
            [
                f"both runs counted at A's F1-optimal score threshold {fmt(c['score_threshold'], '.4g')}, "
                f"IoU {IOU:g}; [background]: no object (row) / not found (column)",
                *more_rows(len(c["changes"]), max_rows),
            ],
            key="confusion",
        ),
    ]


def _tide_section(an: Mapping[str, Any], key: str, title: str, measure: str) -> Section:
    """TIDE's dAP of A, B and B - A per error type (``key``: ``tide``, or a seg pair's ``tide_segm``);
    where neither run computed it, only why (once per reason), not a table of n/a."""
    reasons = an[f"{key}_reason"]
    if len(reasons) == 2 and all(r["a"] is None and r["b"] is None for r in an[key]):
        said = [f"not computed in A and B: {reasons[0]}"] if reasons[0] == reasons[1] else []
        said = said or [f"not computed in {run}: {why}" for run, why in zip("AB", reasons, strict=True)]
        return Section(title, notes=said, key=key)
    rows = [[r["name"], _points(r["a"]), _points(r["b"]), _points(r["delta"], "+.2f")] for r in an[key]]
    notes = [
        f"TIDE (tidecv): AP50 points each error type would give back if fixed alone ({measure} {IOU:g}, "
        "background below 0.1); the first six are exclusive types, the last two fix all false "
        "positives / all false negatives",
        *(f"not computed: {reason}" for reason in an[f"{key}_reason"]),
    ]
    return Section(title, ["error type", "A", "B", "delta (B-A)"], rows, notes, key=key)


def _points(value: float | None, spec: str = ".2f") -> str:
    return fmt(None if value is None else 100 * value, spec)


def attach_paired(rows: list[dict[str, Any]], boot: Mapping[str, Any]) -> None:
    """Each per-class ΔAP row gets ``paired``: its interval and p from the paired bootstrap of ΔAP
    (the same resamples), and ``p_holm``, p adjusted by Holm over the classes tested."""
    per_class, floor = boot.get("per_class") or {}, 1 / boot["resamples"]
    for row in rows:
        found = per_class.get(str(row["category_id"]))
        row["paired"] = dict(found) if found else None
    tested = [r for r in rows if r["paired"] and r["paired"]["p"] is not None]
    # a bootstrap p of 0 is "below 1/B": Holm is given 1/B there, an upper bound (marked <=)
    adjusted = holm([max(r["paired"]["p"], floor) for r in tested])
    for row, p in zip(tested, adjusted, strict=True):
        row["paired"]["p_holm"] = p
        row["paired"]["p_holm_bound"] = row["paired"]["p"] < floor


def per_class_cells(row: dict[str, Any], resamples: int | None) -> list[str]:
    """One row of the per-class ΔAP table: the paired bootstrap interval and p beside the delta."""
    boot = row.get("paired") or {}
    return [
        f"{row['name']} ({row['category_id']})",
        fmt(row["a"], ".4f"),
        fmt(row["b"], ".4f"),
        fmt(row["delta"], "+.4f"),
        fmt_interval(boot.get("interval"), "+.4f"),
        bootstrap_p(boot.get("p"), resamples),
        ("<=" if boot.get("p_holm_bound") else "") + fmt(boot.get("p_holm"), ".3g"),
        str(row["num_gt"]),
    ]


def bootstrap_p(p: float | None, resamples: int | None) -> str:
    """A bootstrap p of 0 is below the resolution of B resamples, not zero."""
    if p == 0 and resamples:
        return f"<{1 / resamples:.2g}"
    return fmt(p, ".3g")


def figures(d: dict[str, Any]) -> list[dict[str, Any]]:
    """Plot specifications (kind, data) for ``report/analysis_view``: placed after a section key."""
    an = d.get("analysis") or {}
    out: list[dict[str, Any]] = []
    if "pr_curves" in an:
        for iou in ("IoU=0.50", "IoU=0.50:0.95"):
            series = [
                (side.upper(), an["pr_curves"][side][iou])
                for side in ("a", "b")
                if an["pr_curves"][side][iou]
            ]
            out.append(
                {
                    "after": "f1",
                    "kind": "curves",
                    "name": f"pr_{iou[4:].replace(':', '-')}",
                    "title": f"Precision-recall, all classes, {iou} (mean over classes)",
                    "x": "recall",
                    "y": "precision",
                    "panels": [("", series)],
                }
            )
            if an.get("class_curves"):
                panels = [
                    (f"{c['name']} ({c['category_id']})", [("A", c["a"][iou]), ("B", c["b"][iou])])
                    for c in an["class_curves"]
                ]
                out.append(
                    {
                        "after": "f1",
                        "kind": "curves",
                        "name": f"pr_classes_{iou[4:].replace(':', '-')}",
                        "title": f"Precision-recall, {iou}, the classes whose AP changed most",
                        "x": "recall",
                        "y": "precision",
                        "panels": panels,
                    }
                )
    for key, of in (("tide", ""), ("tide_segm", ", masks")):
        if an.get(key) and any(r["a"] is not None for r in an[key]):
            rows = [r for r in an[key] if r["type"] in MAIN]
            out.append(
                {
                    "after": key,
                    "kind": "bars",
                    "name": key,
                    "title": f"TIDE dAP50 points per error type{of}",
                    "labels": [NAMES[r["type"]] for r in rows],
                    "series": [(s.upper(), [100 * (r[s] or 0.0) for r in rows]) for s in ("a", "b")],
                }
            )
    if d.get("per_class"):  # drawn in the HTML by the definition's delta_figure; here as a file too
        out.append({"after": "per_class", "kind": "class_deltas", "name": "per_class_delta_ap", "html": False,
                    "title": "Per-class AP change (B - A)", "rows": d["per_class"]})  # fmt: skip
    if "confusion" in an:
        out.append(
            {
                "after": "confusion",
                "kind": "matrix",
                "name": "confusion",
                "title": "Confusion matrix (truth rows, detected columns; 0 = background)",
                "sides": [("A", an["confusion"]["a"]), ("B", an["confusion"]["b"])],
            }
        )
    return out
