"""How detection results read beyond the generic presenters: COCOeval.summarize()'s 12 lines and the
analysis in results.txt, the ΔAP verdict, the box, image, per-class and analysis tables and
figures of ``report diff``, ``report analysis``, captions of the images whose boxes changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from evalharness.core.numbers import fmt
from evalharness.core.tables import Section, more_rows
from evalharness.rundir.metrics_file import Document
from evalharness.rundir.reader import Run
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS
from evalharness.stats.intervals import CONFIDENCE, fmt_interval, interval_lines
from evalharness.stats.shape_overlap import OVERLAPS
from evalharness.tasks.coco import analysis
from evalharness.tasks.coco.changed_images import changed_caption, error_text
from evalharness.tasks.coco.shape_store import SHAPES
from evalharness.tasks.coco.thumbnail_shapes import thumbnail_shapes
from evalharness.tasks.view import Shapes, TaskView

# TFLite's coco evaluation tool's AP: its own recipe, a second opinion beside COCO's AP above
TOOL_AP_LABEL = "TFLite tool's AP, a secondary figure (0.5:0.95, 101-point, no area ranges)"


class KindWords(NamedTuple):
    """How a kind of detection reads in the diff's tables and verdict."""

    title: str  # its section, and its clause of the verdict
    things: str  # what is matched
    one: str  # a count of them in a caption
    measure: str  # what they are matched by
    ap: str  # its AP's name in headings
    truth: str  # its ground-truth column


WORDS = {
    kind: KindWords(title, OVERLAPS[kind].things, one, OVERLAPS[kind].measure, ap, truth)
    for kind, title, one, ap, truth in (
        ("bbox", "Boxes", "box(es)", "AP", "gt boxes"),
        ("segm", "Masks", "mask(s)", "mask AP", "gt objects"),
        ("keypoints", "Keypoints", "pose(s)", "keypoint AP", "gt persons"),
    )
}


def kinds_in(comparison: Mapping[str, Any]) -> list[str]:
    """``bbox`` and the kinds the pair also matched (``report diff``'s ``segm`` / ``keypoints`` blocks)."""
    return ["bbox", *(kind for kind in SHAPES if kind in comparison)]


def _block(comparison: Mapping[str, Any], kind: str) -> Any:
    return comparison if kind == "bbox" else comparison[kind]


def _key(kind: str, part: str) -> str:
    """A section's key: the boxes' as before (``changed_images``), a kind's prefixed (``segm_...``)."""
    return part if kind == "bbox" else f"{kind}_{part}"


class CocoView(TaskView):
    thumbnails = ("changed_images", "Thumbnails: changed boxes")
    delta_figure = ("per_class", "per_class", "Per-class AP change (B - A)")

    def summary_lines(self, doc: Document, lines: list[str]) -> list[str]:
        """COCOeval.summarize()'s 12 lines, then the TFLite-tool AP when it was computed."""
        metrics = doc.metrics.values
        lines = list(metrics["summary"])
        if "tflite_tool" in metrics:
            ap = metrics["tflite_tool"]["AP"]
            lines.append(f"{TOOL_AP_LABEL}: {ap:.6f}")
        intervals = doc.metrics.intervals  # schema 2 on, bootstrap_resamples > 0
        how = f"image bootstrap, B={intervals.get('resamples')}, seed {intervals.get('seed')}"
        lines += interval_lines(intervals, how, [(n, intervals.get(n)) for n in BOOTSTRAP_STATS])
        for kind, what in (("segm", "Masks"), ("keypoints", "Keypoints")):  # a seg / pose model's
            if isinstance(metrics.get(kind), dict):
                lines += [f"{what} (pycocotools, iouType='{kind}'):", *metrics[kind]["summary"]]
                names = [f"{kind}_{n}" for n in BOOTSTRAP_STATS if f"{kind}_{n}" in intervals]
                lines += interval_lines(intervals if names else None, how, [(n, intervals[n]) for n in names])
        return lines + analysis.summary_lines(metrics)

    def verdict(self, diff: Mapping[str, Any]) -> str:
        """The AP change with its paired test and what moved; a seg / pose pair's masks / keypoints
        first ("masks: ...; boxes: ..."), by the same sentence."""
        det = diff["detection"]
        kinds = kinds_in(det)[::-1]
        rows = {r["name"]: r for r in diff["metrics"]}
        clauses = [_verdict_of(kind, rows, det, diff) for kind in kinds]
        if len(clauses) == 1:
            return clauses[0]
        named = zip(kinds, clauses, strict=True)
        return "; ".join(f"{WORDS[kind].title.lower()}: {clause}" for kind, clause in named)

    def diff_sections(self, d: dict[str, Any], max_rows: int) -> list[Section]:
        """Boxes, then a seg / pose pair's masks / keypoints: matching, changed images, per-class ΔAP
        each; then the analysis' changes."""
        out = [s for kind in kinds_in(d) for s in _matched_sections(d, kind, max_rows)]
        return [*out, *analysis.sections(d, max_rows)]

    def figures(self, d: dict[str, Any]) -> list[dict[str, Any]]:
        """The analysis' figures; a seg / pose pair's per-class mask / keypoint ΔAP bars."""
        shapes = [
            {"after": f"{kind}_per_class", "kind": "class_deltas", "name": f"per_class_delta_{kind}_AP",
             "title": f"Per-class {WORDS[kind].ap} change (B - A)", "rows": d[kind]["per_class"]}
            for kind in kinds_in(d)[1:]
            if d[kind].get("per_class")
        ]  # fmt: skip
        return [*analysis.figures(d), *shapes]

    def run_analysis(self, run: Run, max_rows: int) -> tuple[list[Section], list[dict[str, Any]]]:
        from evalharness.tasks.coco.run_analysis import sections_and_figures

        return sections_and_figures(run, analysis.CURVES_FILE, max_rows)

    def moved_most(self, d: dict[str, Any], n: int) -> tuple[list[dict[str, Any]], str | None]:
        """A chain step's per-class ΔAP: the ``n`` classes that moved most (``report diff``'s rows,
        largest |ΔAP| first, with the paired bootstrap interval where it ran)."""
        rows = [r for r in d.get("per_class") or [] if r["delta"]][:n]
        if not rows:
            return [], "per-class AP unchanged" if d.get("per_class") else None
        shown = []
        for r in rows:
            interval = (r.get("paired") or {}).get("interval")
            shown.append(
                f"{r['name']} {r['delta']:+.4f}" + (f" {fmt_interval(interval, '+.4f')}" if interval else "")
            )
        return rows, "per-class ΔAP, most moved: " + ", ".join(shown)

    def thumbnail_place(self, comparison: dict[str, Any]) -> tuple[str, str] | None:
        """After the changed images of what the pair is judged by: a seg pair's masks, a pose
        pair's keypoints, else the boxes."""
        kind = kinds_in(comparison)[-1]
        return _key(kind, "changed_images"), f"Thumbnails: changed {WORDS[kind].things}"

    def changed_samples(self, d: dict[str, Any]) -> list[tuple[str, str]]:
        """The images that changed most by a seg pair's masks (a pose pair's keypoints, else boxes)."""
        kind = kinds_in(d)[-1]
        return [(r["id"], changed_caption(r, WORDS[kind].one)) for r in _block(d, kind)["changed_images"]]

    def thumbnail_shapes(
        self, comparison: dict[str, Any], record_a: Mapping[str, Any], record_b: Mapping[str, Any]
    ) -> Shapes | None:
        """A seg / pose run's masks and skeletons, A's and B's, of the boxes the diff counts."""
        return thumbnail_shapes(record_a, record_b, comparison["min_score"])


def _verdict_of(kind: str, rows: Mapping[str, Any], det: Mapping[str, Any], diff: Mapping[str, Any]) -> str:
    """One kind's clause: its AP's change, the paired test of it, and what its matching moved."""
    words, block, name = WORDS[kind], _block(det, kind), _key(kind, "AP")
    ap, things = rows.get(name), words.things
    total = block["detections"]["a"] + block["detections"]["b"]
    iou = "n/a" if block["mean_iou"] is None else f"{block['mean_iou']:.4f}"
    where = f"{block['unmatched']} of {total} {things} unmatched on {block['images_changed']} images"
    if ap is None or ap["delta"] is None:
        return f"no {name} to compare; {where}"
    if ap["delta"] == 0 and block["unmatched"] == 0:
        return f"B detects the same {things} as A ({name} {ap['a']:.4f}, mean {words.measure} {iou})"
    boot = (det.get("paired_bootstrap") or {}).get(name)
    if not boot or boot["interval"] is None:
        test = f"no significance test for {name}"
    else:
        low, high = boot["interval"]
        alpha, margin = diff["alpha"], diff.get("equivalence_margin", 0.01)
        if boot["p"] < alpha:
            finding = "significant"
        elif -margin <= low and high <= margin:
            finding = f"equivalent within ±{margin:g}"
        else:
            finding = "no difference detected at this size"
        test = (
            f"{finding}: paired bootstrap Δ{name} {CONFIDENCE:.0%} interval [{low:+.4f}, {high:+.4f}], "
            f"p={boot['p']:.3g}, alpha={alpha:g}"
        )
    return (
        f"B's {name} differs from A's by {ap['delta']:+.4f} ({ap['a']:.4f} -> {ap['b']:.4f}); {where}, "
        f"mean {words.measure} of matched {things} {iou} ({test})"
    )


def _matched_sections(d: Mapping[str, Any], kind: str, max_rows: int) -> list[Section]:
    """One kind's matching (boxes, masks or keypoints), the images whose detections of that kind
    changed, and its per-class ΔAP with the paired intervals."""
    words, block = WORDS[kind], _block(d, kind)
    things, measure = words.things, words.measure
    t = block["detections"]
    stats = [
        ["paired images", fmt(block["paired_images"])],
        ["detections A / B", f"{t['a']} / {t['b']}"],
        [f"matched (same class, {measure} >= " + fmt(block["iou_threshold"], "g") + ")", fmt(t["matched"])],
        ["only in A / only in B", f"{t['only_a']} / {t['only_b']}"],
        [f"images with changed {things}", fmt(block["images_changed"])],
        [f"mean {measure} of matched {things}", fmt(block["mean_iou"], ".4f")],
        [f"mean |score change| of matched {things}", fmt(block["mean_abs_score_delta"], ".4g")],
    ]
    changed = block["changed_images"]
    images = [
        [r["id"], str(r["a"]), str(r["b"]), str(r["matched"]), str(r["only_a"]), str(r["only_b"]),
         fmt(r["mean_iou"], ".3f"), error_text(r)]
        for r in changed[:max_rows]
    ]  # fmt: skip
    boot = d.get("paired_bootstrap")
    resamples = (boot or {}).get("resamples")
    classes = [analysis.per_class_cells(r, resamples) for r in block["per_class"][:max_rows]]
    if boot:
        stats += [
            [
                f"Δ{name} {boot['confidence']:.0%} paired interval, p (B={boot['resamples']})",
                f"{fmt_interval(boot[name]['interval'], '+.4f')}, "
                + _p_equals(analysis.bootstrap_p(boot[name]["p"], resamples)),
            ]
            for name in (_key(kind, n) for n in BOOTSTRAP_STATS)
            if name in boot
        ]
    ap = _key(kind, "AP")
    source = block.get("min_score_source", "--min-score")
    return [
        Section(
            words.title,
            ["", "value"],
            stats,
            [f"detections with score >= {block['min_score']:g} ({source})"],
            key="boxes" if kind == "bbox" else kind,
        ),
        Section(
            f"Images with changed {things} ({len(changed)})",
            ["image", "A", "B", "matched", "only A", "only B", f"mean {measure}", "error types"],
            images,
            [f"error types: {block.get('error_types_note')}", *more_rows(len(changed), max_rows)],
            key=_key(kind, "changed_images"),
        ),
        Section(
            f"Per-class {words.ap} (largest |delta| first)",
            ["class", "A", "B", "delta", "paired interval", "p", "p (Holm)", words.truth],
            classes,
            [
                *(n.replace("ΔAP", f"Δ{ap}") for n in analysis.PER_CLASS_NOTES),
                *more_rows(len(block["per_class"]), max_rows),
            ],
            key=_key(kind, "per_class"),
        ),
    ]


def _p_equals(p: str) -> str:
    """``p=0.03``, or ``p<0.001`` where the bootstrap's p is below its resolution."""
    return f"p{p}" if p.startswith("<") else f"p={p}"
