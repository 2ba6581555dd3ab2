"""COCO bbox detection: its config, records -> pycocotools' 12 stats, box-by-box diff.

A record holds ``image_id``, ``detections`` as ``[category_id, score, x, y, w, h]`` rows in original
pixels (model output order) and ``unmapped`` (detections of classes with no annotated category).
The scorer rebuilds the COCO results from the records image by image and scores them against the
annotation file, so a live run, ``rescore`` and a ``merge`` of shards score the same result list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.core.errors import EvalHarnessError
from evalharness.core.numbers import fmt
from evalharness.core.schema import bounds
from evalharness.core.tables import Section, more_rows
from evalharness.rundir.reader import Run
from evalharness.stats.boxes import detection_diff, per_class_deltas
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS, bootstrap_intervals, paired_ap_bootstrap
from evalharness.stats.detection_analysis import TIDE_OFF
from evalharness.stats.intervals import CONFIDENCE, fmt_interval, interval_lines
from evalharness.tasks.coco import analysis
from evalharness.tasks.coco.store import DetectionStore
from evalharness.tasks.definition import Scorer, TaskDefinition, register

RESULTS_FILE = "coco_results.json"
CURVES_FILE = analysis.CURVES_FILE  # per-class PR curves of metrics.analysis (too long for metrics.json)


@dataclass
class CocoDataset:
    annotations: Any = None  # COCO instances JSON


@dataclass
class CocoModel:
    # model class -> COCO category id: coco91 (id = class + 1) | coco80 (the 80 contiguous classes) |
    # labels (by the model's label text)
    class_map: str = field(default="coco91", metadata=bounds(choices=("coco91", "coco80", "labels")))


@dataclass
class CocoSettings:
    name: str = "coco"
    num_images: int = 0  # first N images in ascending image id; 0 = all
    backend: str = "pycocotools"  # pycocotools | faster_coco_eval
    tflite_tool_ap: bool = True  # also report AP as TFLite's coco_object_detection tool defines it
    # fail the run when more than this fraction of detections map to no annotated category
    max_unmapped_fraction: float = field(default=0.5, metadata=bounds(0.0, 1.0))
    bootstrap_resamples: int = 1000  # image-level resamples of the AP intervals; 0 = no intervals
    bootstrap_seed: int = 0  # the resamples' seed: rescore, merge and diff redraw the same images
    # metrics.analysis: per-class table, PR curves, F1-optimal threshold, confusion matrix, TIDE
    analysis: bool = True
    tide: bool = False  # TIDE's breakdown (tidecv): opt in, the analysis' one costly part


class CocoScorer(Scorer):
    def __init__(
        self,
        annotations: dict,
        backend: str,
        tflite_tool: bool,
        resamples: int = 0,
        seed: int = 0,
        analysis: bool = False,
        tide: bool = True,
    ) -> None:
        self.annotations, self.backend, self.tflite_tool = annotations, backend, tflite_tool
        self.resamples, self.seed, self.analysis, self.tide = resamples, seed, analysis, tide
        self.detections = DetectionStore()
        self.image_ids: list[int] = []
        self.unmapped = 0
        self.curves: dict | None = None  # per-class PR curves, made by result() with the analysis

    def add(self, record: dict) -> None:
        self.detections.add(record["image_id"], record["detections"])
        self.image_ids.append(record["image_id"])
        self.unmapped += record.get("unmapped", 0)

    def result(self) -> dict:
        from evalharness.stats.coco_eval import evaluate_bbox
        from evalharness.stats.coco_tool_ap import tflite_tool_ap

        results = list(self.detections.rows())  # pycocotools scores from one list; freed on return
        tide: Any = self.tide  # True, or the function that waits for the breakdown
        if self.analysis and self.tide:  # TIDE's pass runs beside pycocotools', in a child process
            from evalharness.stats.tide import tide_in_background

            tide = tide_in_background(self.annotations, self.detections.blocks, self.image_ids)
        scored = evaluate_bbox(
            self.annotations,
            results,
            self.backend,
            self.image_ids,
            keep_matching=self.resamples > 0,
            analysis=self.analysis,
        )
        metrics = {
            **scored["stats"],
            "per_class": scored["per_class"],
            "summary": scored["summary"],
            "backend": scored["backend"],
            "num_detections": len(results),
            "num_unmapped_detections": self.unmapped,
            "num_scored": len(self.image_ids),
        }
        if self.tflite_tool:
            metrics["tflite_tool"] = tflite_tool_ap(self.annotations, results, image_ids=self.image_ids)
        if self.resamples > 0:
            metrics["intervals"] = bootstrap_intervals(
                scored["matching"], self.resamples, self.seed, CONFIDENCE
            )
        if self.analysis:
            from evalharness.stats.detection_analysis import analyse, per_class_curves

            blocks, ids = self.detections.blocks, self.image_ids
            metrics["analysis"] = analyse(self.annotations, scored, blocks, ids, tide)
            names = {c["id"]: c["name"] for c in self.annotations["categories"]}
            acc = scored["accumulated"]
            self.curves = per_class_curves(acc["precision"], acc["cat_ids"], names)
        return metrics

    def matching(self):
        """pycocotools' per-image matching of the added records (for a paired bootstrap)."""
        from evalharness.stats.coco_eval import evaluate_bbox

        results = list(self.detections.rows())
        return evaluate_bbox(self.annotations, results, "pycocotools", self.image_ids, keep_matching=True)[
            "matching"
        ]


# TFLite's coco evaluation tool's AP: its own recipe, a second opinion beside COCO's AP above
TOOL_AP_LABEL = "TFLite tool's AP, a secondary figure (0.5:0.95, 101-point, no area ranges)"


@register
class CocoDefinition(TaskDefinition):
    name = "coco"
    schema = CocoSettings
    dataset_schema = CocoDataset
    model_schema = CocoModel
    live = "evalharness.tasks.coco.live:CocoTask"
    listing_order = 1
    sample_key = "image_id"
    can_resume = True
    rescorable = True
    comparison = "detection"
    sweep_metrics = ("AP", "AP50")
    thumbnails = ("changed_images", "Thumbnails: changed boxes")
    delta_figure = ("per_class", "per_class", "Per-class AP change (B - A)")
    # rescore --backend scores with another backend on purpose; the unmapped-class check counts what
    # the live session's decoder produced, which the records keep only as scored boxes
    rescore_ignores = ("backend", "failed_checks")

    def scorer(self, ground_truth=None, backend: str | None = None) -> CocoScorer:
        s = self.settings
        return CocoScorer(
            ground_truth,
            backend or s.get("backend", "pycocotools"),
            s.get("tflite_tool_ap", True),
            *self._bootstrap(),
            analysis=bool(s.get("analysis", False)),
            tide=bool(s.get("tide", True)),
        )

    def _bootstrap(self) -> tuple[int, int]:
        """(resamples, seed) of the run's settings; runs made before them get the defaults."""
        s = self.settings
        return int(s.get("bootstrap_resamples", 1000)), int(s.get("bootstrap_seed", 0))

    def load_ground_truth(self, run: Run) -> dict:
        """The annotation file the run recorded, refused if it changed since (sha256)."""
        from evalharness.core.checksum import sha256_file
        from evalharness.data.coco_annotations import load_annotations

        path = run.prov("dataset.ground_truth")
        if not path:
            raise EvalHarnessError(
                f"run {run.label}: provenance.dataset.ground_truth is empty; no annotations to score"
            )
        annotations = load_annotations(path)
        recorded = run.prov("dataset.ground_truth_sha256")
        if recorded and sha256_file(path) != recorded:
            raise EvalHarnessError(
                f"run {run.label}: {path} changed since the run (sha256 differs from provenance)"
            )
        return annotations

    def rescorer(self, runs: list[Run], records: list[dict], top_k=None, backend=None) -> Scorer:
        if top_k is not None:
            raise EvalHarnessError(f"--top-k applies to classification runs, not to task {self.name}")
        first = runs[0]
        stored = first.metrics.get("backend") or self.settings.get("backend", "pycocotools")
        tflite = "tflite_tool" in first.metrics  # score what the run reported
        analysis = "analysis" in first.metrics
        tide = (first.metrics.get("analysis") or {}).get("tide", {}).get("reason") != TIDE_OFF
        return CocoScorer(
            self.load_ground_truth(first), backend or stored, tflite, *self._bootstrap(), analysis, tide
        )

    def artifacts(self, scorer: CocoScorer) -> dict[str, object]:  # type: ignore[override]  # its own scorer
        """The standard COCO results JSON, re-scorable by any COCO tool; the per-class PR curves."""
        curves = {CURVES_FILE: scorer.curves} if scorer.curves else {}
        return {RESULTS_FILE: scorer.detections.rows(), **curves}

    def summary_lines(self, doc: Mapping[str, Any]) -> list[str]:
        """COCOeval.summarize()'s 12 lines, then the TFLite-tool AP when it was computed."""
        metrics = doc["metrics"]
        lines = list(metrics["summary"])
        if "tflite_tool" in metrics:
            ap = metrics["tflite_tool"]["AP"]
            lines.append(f"{TOOL_AP_LABEL}: {ap:.6f}")
        intervals = metrics.get("intervals") or {}  # schema 2 on, bootstrap_resamples > 0
        how = f"image bootstrap, B={intervals.get('resamples')}, seed {intervals.get('seed')}"
        lines += interval_lines(intervals, how, [(n, intervals.get(n)) for n in BOOTSTRAP_STATS])
        return lines + analysis.summary_lines(metrics)

    def headline_accuracy(self, metrics: dict) -> tuple[str, float, list | None, str]:
        intervals = metrics.get("intervals") or {}
        how = f"percentile bootstrap over images, B={intervals.get('resamples')}: asymmetric by nature"
        return "AP@[.5:.95]", metrics["AP"], intervals.get("AP"), how

    def headline(self, metrics: dict) -> dict[str, float]:
        from evalharness.stats.coco_eval import COCO_STAT_NAMES

        values: dict[str, Any] = {name: metrics.get(name) for name in COCO_STAT_NAMES if name in metrics}
        if isinstance(metrics.get("tflite_tool"), dict):
            values["tflite_AP"] = metrics["tflite_tool"].get("AP")
        return values

    undefined_hint = ": the scored images hold no annotation box (pycocotools' -1)"

    def fractions(self, metrics: dict) -> list[str]:
        return ["AP", "AP50", "AP75"]

    @staticmethod
    def diff_score_threshold(a: Run, given: float | None) -> tuple[float, str]:
        """The score from which boxes count as a detector's answer in a diff: given, else what run
        A would ship (its F1-optimal threshold), never every box down to 0 unasked."""
        if given is not None:
            return given, "--min-score"
        f1 = ((a.metrics.get("analysis") or {}).get("f1") or {}).get("score_threshold")
        if f1 is not None:
            return float(f1), "run A's F1-optimal score threshold"
        return 0.5, "default: run A records no F1-optimal threshold"

    def compare(self, a: Run, b: Run, options) -> dict:
        min_score, source = self.diff_score_threshold(a, options.get("min_score"))
        det = detection_diff(a.predictions, b.predictions, options["iou"], min_score)
        det["min_score_source"] = source
        if det["changed_images"]:
            why = analysis.label_changed_images(
                det["changed_images"], self.load_ground_truth(a), a.predictions, b.predictions
            )
            det["error_types_note"] = why or "TIDE error types (tidecv) of B minus A on the image"
        det["per_class"] = per_class_deltas(
            a.metrics.get("per_class") or {}, b.metrics.get("per_class") or {}
        )
        resamples, seed = self._bootstrap()
        if resamples > 0:
            det["paired_bootstrap"] = boot = self._paired_bootstrap(a, b, resamples, seed)
            analysis.attach_paired(det["per_class"], boot)
        if "analysis" in a.metrics or "analysis" in b.metrics:
            det["analysis"] = analysis.compare(a, b, self.load_ground_truth(a), det["per_class"])
        return det

    def agreement(self, a: Run, b: Run) -> dict:
        """Box-match rate: matched boxes (same class, IoU >= 0.5) over the mean box count."""
        boxes = detection_diff(a.predictions, b.predictions, 0.5, 0.0)["detections"]
        total = boxes["a"] + boxes["b"]
        return {"name": "box-match rate", "value": 2 * boxes["matched"] / total if total else None, "p": None}

    def _paired_bootstrap(self, a: Run, b: Run, resamples: int, seed: int) -> dict:
        """ΔAP, ΔAP50, ΔAP75 with paired intervals and p: both runs' matchings re-accumulated on the
        same image resamples (runs are comparable, so they scored the same images)."""
        ground_truth = self.load_ground_truth(a)
        matchings = []
        for run in (a, b):
            scorer = CocoScorer(ground_truth, "pycocotools", False).add_all(run.predictions)
            matchings.append(scorer.matching())
        return paired_ap_bootstrap(matchings[0], matchings[1], resamples, seed, CONFIDENCE)

    def pairwise(self, comparison: dict) -> dict[str, float]:
        values = super().pairwise(comparison)
        values.pop("iou_threshold", None)
        values.pop("min_score", None)
        boot = comparison.get("paired_bootstrap") or {}
        for name in BOOTSTRAP_STATS:
            if isinstance(boot.get(name), dict) and boot[name]["interval"] is not None:
                low, high = boot[name]["interval"]
                values.update({f"{name}_ci_low": low, f"{name}_ci_high": high, f"{name}_p": boot[name]["p"]})
        return values

    def verdict(self, diff: Mapping[str, Any]) -> str:
        ap = next((r for r in diff["metrics"] if r["name"] == "AP"), None)
        det = diff[self.comparison]
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

    def diff_sections(self, d: dict, max_rows: int) -> list[Section]:
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
                for name in BOOTSTRAP_STATS
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

    def figures(self, d: dict) -> list[dict]:
        return analysis.figures(d)

    def run_analysis(self, run: Run, max_rows: int) -> tuple[list[Section], list[dict]]:
        from evalharness.tasks.coco.run_analysis import sections_and_figures

        return sections_and_figures(run, CURVES_FILE, max_rows)

    def changed_samples(self, d: dict) -> list[tuple[str, str]]:
        return [(r["id"], analysis.changed_caption(r)) for r in d["changed_images"]]
