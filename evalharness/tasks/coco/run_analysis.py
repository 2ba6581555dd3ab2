"""One COCO run's ``metrics.analysis`` as report tables and figures (``report analysis RUN``): the
per-class table, the F1-optimal threshold, the commonest confusions and TIDE, with PR curves (all
classes and the classes with the most objects), per-class AP bars, TIDE bars and the confusion
matrix. Nothing is recomputed: the numbers are the run's own.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from evalharness.core.errors import EvalHarnessError
from evalharness.core.numbers import fmt
from evalharness.core.tables import Section, more_rows
from evalharness.core.untrusted import read_json
from evalharness.rundir.json_fields import mapping
from evalharness.stats.detection_analysis import IOU, confusion_pairs
from evalharness.stats.tide import MAIN, NAMES, SPECIAL

if TYPE_CHECKING:  # for the types only
    from evalharness.rundir.reader import Run

CLASSES_DRAWN = 25  # per-class AP bars: the classes with the most ground truth
CURVE_CLASSES = 6


def sections_and_figures(
    run: Run, curves_file: str, max_rows: int
) -> tuple[list[Section], list[dict[str, Any]]]:
    a = run.document.metrics.analysis
    if not a:
        raise EvalHarnessError(
            f"run {run.label} records no metrics.analysis (made before schema 4, or with "
            "task.analysis=false); rerun it with task.analysis=true"
        )
    rows = a["per_class"]
    table = [
        [
            f"{r['name']} ({r['category_id']})",
            fmt(r["AP"], ".4f"),
            fmt(r["AP50"], ".4f"),
            fmt(r["recall"], ".4f"),
            fmt(r["recall50"], ".4f"),
            str(r["num_gt"]),
            str(r["num_detections"]),
        ]
        for r in rows[:max_rows]
    ]
    f1 = a["f1"]
    f1_rows = [
        [label, fmt(f1[key], spec)]
        for label, key, spec in (
            ("score threshold", "score_threshold", ".4g"),
            ("precision", "precision", ".4f"),
            ("recall", "recall", ".4f"),
            ("F1", "f1", ".4f"),
            ("detections kept", "detections_kept", "d"),
            ("objects", "num_gt", "d"),
        )
    ]
    names = {r["category_id"]: r["name"] for r in rows}
    pairs = confusion_pairs(a["confusion"]["cells"], names)
    confusions = [[f"{p['truth_name']} -> {p['predicted_name']}", str(p["count"])] for p in pairs[:max_rows]]
    sections = [
        Section(
            f"Per-class AP ({len(rows)} classes, highest first)",
            ["class", "AP", "AP50", "recall", "recall@.50", "gt boxes", "detections"],
            table,
            [
                "AP/AP50 from pycocotools' precision array; recall at maxDets 100",
                *more_rows(len(rows), max_rows),
            ],
            key="per_class",
        ),
        Section(
            "F1-optimal score threshold",
            ["", "value"],
            f1_rows,
            [f"IoU {IOU:g}, all classes pooled, pycocotools' matching"],
            key="f1",
        ),
        Section(
            f"Confusions ({len(pairs)} pairs)",
            ["truth -> detected", "count"],
            confusions,
            [
                f"at score >= {fmt(a['confusion']['score_threshold'], '.4g')}, IoU {IOU:g}; background: no "
                "object (truth) / not found (detected)",
                *more_rows(len(pairs), max_rows),
            ],
            key="confusion",
        ),
        _tide_section(run.document.metrics.analysis_part("tide"), "TIDE error breakdown", "tide"),
    ]
    if "tide_segm" in a:  # a seg model's masks, by mask IoU
        masks = run.document.metrics.analysis_part("tide_segm")
        sections.append(_tide_section(masks, "TIDE error breakdown (masks, by mask IoU)", "tide_segm"))
    return sections, _figures(run, a, curves_file)


def _figures(run: Run, a: dict[str, Any], curves_file: str) -> list[dict[str, Any]]:
    curves = a["pr_curves"]
    out = []
    per_class = _class_curves(run, curves_file, a["per_class"])
    for iou in ("IoU=0.50", "IoU=0.50:0.95"):
        stem = iou[4:].replace(":", "-")
        if curves[iou]:
            out.append(
                {
                    "after": "f1",
                    "kind": "curves",
                    "name": f"pr_{stem}",
                    "x": "recall",
                    "y": "precision",
                    "title": f"Precision-recall, all classes, {iou} (mean over classes)",
                    "panels": [("", [("run", curves[iou])])],
                }
            )
        if per_class:
            out.append(
                {
                    "after": "f1",
                    "kind": "curves",
                    "name": f"pr_classes_{stem}",
                    "x": "recall",
                    "y": "precision",
                    "title": f"Precision-recall, {iou}, the classes with the most objects",
                    "panels": [(title, [("run", c[iou])]) for title, c in per_class],
                }
            )
    drawn = sorted(a["per_class"], key=lambda r: (-r["num_gt"], r["category_id"]))[:CLASSES_DRAWN]
    out.append(
        {
            "after": "per_class",
            "kind": "bars",
            "name": "per_class_ap",
            "title": "AP per class",
            "labels": [r["name"] for r in drawn],
            "series": [("AP", [r["AP"] for r in drawn]), ("AP50", [r["AP50"] for r in drawn])],
        }
    )
    if run.document.metrics.analysis_part("tide").get("available"):
        out.append(
            {
                "after": "tide",
                "kind": "bars",
                "name": "tide",
                "title": "TIDE dAP50 points per error type",
                "labels": [NAMES[t] for t in MAIN],
                "series": [("run", [100 * a["tide"]["dAP"][t] for t in MAIN])],
            }
        )
    out.append(
        {
            "after": "confusion",
            "kind": "matrix",
            "name": "confusion",
            "title": "Confusion matrix (truth rows, detected columns; 0 = background)",
            "sides": [("run", a["confusion"]["cells"])],
        }
    )
    return out


def _class_curves(run: Run, curves_file: str, rows: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    path = os.path.join(run.dir or "", curves_file)
    if not os.path.isfile(path):
        return []
    classes = read_json(path, "the run's per-class curves", required={"classes": dict})["classes"]
    top = sorted(rows, key=lambda r: (-r["num_gt"], r["category_id"]))[:CURVE_CLASSES]
    return [
        (f"{r['name']} ({r['category_id']})", classes[str(r["category_id"])])
        for r in top
        if str(r["category_id"]) in classes
    ]


def _tide_section(tide: dict[str, Any], title: str, key: str) -> Section:
    """TIDE's dAP and error count per type, with how it was made, or why it was not."""
    counts, main, special = mapping(tide, "counts"), mapping(tide, "dAP"), mapping(tide, "special_dAP")
    rows = [
        [NAMES[t], fmt(None if v is None else 100 * v, ".2f"), fmt(counts.get(t))]
        for t, v in [*((t, main.get(t)) for t in MAIN), *((t, special.get(t)) for t in SPECIAL)]
    ]
    note = (
        f"{tide.get('package')}, IoU {tide.get('pos_threshold')} / background "
        f"{tide.get('background_threshold')}; its own AP50 {fmt(100 * tide['AP50'], '.2f')}"
        + _tide_ap_cause(tide)
        if tide.get("available")
        else f"not computed: {tide.get('reason', 'not recorded')}"
    )
    return Section(title, ["error type", "dAP50 points", "errors"], rows, [note], key=key)


def _tide_ap_cause(tide: dict[str, Any]) -> str:
    """Why TIDE's AP50 is not pycocotools' (stats/tide.py): classes detected but absent from these
    images count as AP 0 in TIDE's average, and pycocotools leaves them out."""
    absent, averaged = tide.get("classes_without_truth"), tide.get("classes_averaged")
    if not absent:  # none, or a run recorded before the count
        return ""
    return (
        f" (over {averaged} classes, {absent} of them detected but absent from these images, which TIDE "
        f"counts as AP 0 and pycocotools leaves out; over the {averaged - absent} classes with ground truth "
        f"{fmt(100 * tide['AP50_classes_with_truth'], '.2f')})"
    )
