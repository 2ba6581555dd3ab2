"""How detection results read beyond the generic presenters: COCOeval.summarize()'s 12 lines and the
analysis in results.txt, the ΔAP verdict, the box, image, per-class and analysis tables and
figures of ``report diff``, ``report analysis``, captions of the images whose boxes changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalharness.core.numbers import fmt
from evalharness.core.tables import Section, more_rows
from evalharness.rundir.metrics_file import Document
from evalharness.rundir.reader import Run
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS
from evalharness.stats.intervals import CONFIDENCE, fmt_interval, interval_lines
from evalharness.tasks.coco import analysis
from evalharness.tasks.coco.shape_store import SHAPE_BOOTSTRAP_STATS
from evalharness.tasks.coco.thumbnail_shapes import thumbnail_shapes
from evalharness.tasks.view import Shapes, TaskView

# TFLite's coco evaluation tool's AP: its own recipe, a second opinion beside COCO's AP above
TOOL_AP_LABEL = "TFLite tool's AP, a secondary figure (0.5:0.95, 101-point, no area ranges)"


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
        ap = next((r for r in diff["metrics"] if r["name"] == "AP"), None)
        det = diff["detection"]
        boxes = det["detections"]
        iou = "n/a" if det["mean_iou"] is None else f"{det['mean_iou']:.4f}"
        total = boxes["a"] + boxes["b"]
        where = f"{det['unmatched']} of {total} boxes unmatched on {det['images_changed']} images"
        if ap is None or ap["delta"] is None:
            return f"no AP to compare; {where}"
        if ap["delta"] == 0 and det["unmatched"] == 0:
            return f"B detects the same boxes as A (AP {ap['a']:.4f}, mean IoU {iou})"
        boot = (det.get("paired_bootstrap") or {}).get("AP")
        if not boot or boot["interval"] is None:
            test = "no significance test for AP"
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
                f"{finding}: paired bootstrap ΔAP {CONFIDENCE:.0%} interval [{low:+.4f}, {high:+.4f}], "
                f"p={boot['p']:.3g}, alpha={alpha:g}"
            )
        return (
            f"B's AP differs from A's by {ap['delta']:+.4f} ({ap['a']:.4f} -> {ap['b']:.4f}); {where}, "
            f"mean IoU of matched boxes {iou} ({test})"
        )

    def diff_sections(self, d: dict[str, Any], max_rows: int) -> list[Section]:
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
            [r["id"], str(r["a"]), str(r["b"]), str(r["matched"]), str(r["only_a"]), str(r["only_b"]),
             fmt(r["mean_iou"], ".3f"), analysis.error_text(r)]
            for r in d["changed_images"][:max_rows]
        ]  # fmt: skip
        resamples = (d.get("paired_bootstrap") or {}).get("resamples")
        classes = [analysis.per_class_cells(r, resamples) for r in d["per_class"][:max_rows]]
        boot = d.get("paired_bootstrap")
        if boot:
            stats += [
                [
                    f"Δ{name} {boot['confidence']:.0%} paired interval, p (B={boot['resamples']})",
                    f"{fmt_interval(boot[name]['interval'], '+.4f')}, p={fmt(boot[name]['p'], '.3g')}",
                ]
                for name in (*BOOTSTRAP_STATS, *SHAPE_BOOTSTRAP_STATS)
                if name in boot
            ]
        return [
            Section(
                "Boxes",
                ["", "value"],
                stats,
                [f"detections with score >= {d['min_score']:g} ({d.get('min_score_source', '--min-score')})"],
                key="boxes",
            ),
            Section(
                f"Images with changed boxes ({len(d['changed_images'])})",
                ["image", "A", "B", "matched", "only A", "only B", "mean IoU", "error types"],
                images,
                [f"error types: {d.get('error_types_note')}", *more_rows(len(d["changed_images"]), max_rows)],
                key="changed_images",
            ),
            Section(
                "Per-class AP (largest |delta| first)",
                ["class", "A", "B", "delta", "paired interval", "p", "p (Holm)", "gt boxes"],
                classes,
                [*analysis.PER_CLASS_NOTES, *more_rows(len(d["per_class"]), max_rows)],
                key="per_class",
            ),
            *analysis.sections(d, max_rows),
        ]

    def figures(self, d: dict[str, Any]) -> list[dict[str, Any]]:
        return analysis.figures(d)

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

    def changed_samples(self, d: dict[str, Any]) -> list[tuple[str, str]]:
        return [(r["id"], analysis.changed_caption(r)) for r in d["changed_images"]]

    def thumbnail_shapes(
        self, comparison: dict[str, Any], record_a: Mapping[str, Any], record_b: Mapping[str, Any]
    ) -> Shapes | None:
        """A seg / pose run's masks and skeletons, A's and B's, of the boxes the diff counts."""
        return thumbnail_shapes(record_a, record_b, comparison["min_score"])
