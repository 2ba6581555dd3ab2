"""Two detection runs paired box by box: matched boxes and IoU, changed images with their error
types, per-class AP changes, the paired image bootstrap of ΔAP, and the analysis' changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalharness.core.documents import JSONMap
from evalharness.rundir.reader import Run
from evalharness.stats.boxes import detection_diff, per_class_deltas
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS, paired_ap_bootstrap
from evalharness.stats.intervals import CONFIDENCE
from evalharness.tasks.coco import analysis
from evalharness.tasks.coco.scorer import CocoScorer, bootstrap_settings, load_ground_truth
from evalharness.tasks.coco.shape_store import SHAPE_BOOTSTRAP_STATS
from evalharness.tasks.comparison import Agreement, Comparison, PairQuantities


class DetectionComparison(Comparison):
    key = "detection"

    @staticmethod
    def diff_score_threshold(a: Run, given: float | None) -> tuple[float, str]:
        """The score from which boxes count as a detector's answer in a diff: given, else what run
        A would ship (its F1-optimal threshold), never every box down to 0 unasked."""
        if given is not None:
            return given, "--min-score"
        f1 = a.document.metrics.analysis_part("f1").get("score_threshold")
        if f1 is not None:
            return float(f1), "run A's F1-optimal score threshold"
        return 0.5, "default: run A records no F1-optimal threshold"

    def compare(self, a: Run, b: Run, options: Mapping[str, Any]) -> JSONMap:
        min_score, source = self.diff_score_threshold(a, options.get("min_score"))
        det: JSONMap = {**detection_diff(a.predictions, b.predictions, options["iou"], min_score)}
        det["min_score_source"] = source
        if det["changed_images"]:
            why = analysis.label_changed_images(
                det["changed_images"], load_ground_truth(a), a.predictions, b.predictions
            )
            det["error_types_note"] = why or "TIDE error types (tidecv) of B minus A on the image"
        det["per_class"] = per_class_deltas(
            a.document.metrics.part("per_class"), b.document.metrics.part("per_class")
        )
        resamples, seed = bootstrap_settings(self.settings)
        if resamples > 0:
            det["paired_bootstrap"] = boot = self._paired_bootstrap(a, b, resamples, seed)
            analysis.attach_paired(det["per_class"], boot)
        if "analysis" in a.metrics or "analysis" in b.metrics:
            det["analysis"] = analysis.compare(a, b, load_ground_truth(a), det["per_class"])
        return det

    def agreement(self, a: Run, b: Run) -> Agreement:
        """Box-match rate: matched boxes (same class, IoU >= 0.5) over the mean box count."""
        boxes = detection_diff(a.predictions, b.predictions, 0.5, 0.0)["detections"]
        total = boxes["a"] + boxes["b"]
        return {"name": "box-match rate", "value": 2 * boxes["matched"] / total if total else None, "p": None}

    def _paired_bootstrap(self, a: Run, b: Run, resamples: int, seed: int) -> JSONMap:
        """ΔAP, ΔAP50, ΔAP75 (and a seg / pose model's ``segm_AP``, ``keypoints_AP``, ...) with paired
        intervals and p: both runs' matchings re-accumulated on the same image resamples (runs are
        comparable, so they scored the same images)."""
        ground_truth = load_ground_truth(a)
        matchings, shapes = [], []
        for run in (a, b):
            scorer = CocoScorer(ground_truth, "pycocotools", False).add_all(run.predictions)
            matchings.append(scorer.matching())
            shapes.append(scorer.shapes.matchings(ground_truth, scorer.image_ids))
        # the boxes' ΔAP (PairedAPBootstrap) and, keyed by kind, each shape's: one JSON block
        boot: JSONMap = dict(paired_ap_bootstrap(matchings[0], matchings[1], resamples, seed, CONFIDENCE))
        for kind in [k for k in shapes[0] if k in shapes[1]]:  # ΔAP of masks / keypoints: segm_AP, ...
            pair = shapes[0][kind], shapes[1][kind]
            paired: Mapping[str, Any] = paired_ap_bootstrap(*pair, resamples, seed, CONFIDENCE)
            boot.update({f"{kind}_{name}": paired[name] for name in BOOTSTRAP_STATS})
        return boot

    def pairwise(self, comparison: JSONMap) -> PairQuantities:
        values = super().pairwise(comparison)
        values.pop("iou_threshold", None)
        values.pop("min_score", None)
        boot = comparison.get("paired_bootstrap") or {}
        for name in (*BOOTSTRAP_STATS, *SHAPE_BOOTSTRAP_STATS):
            if isinstance(boot.get(name), dict) and boot[name]["interval"] is not None:
                low, high = boot[name]["interval"]
                values.update({f"{name}_ci_low": low, f"{name}_ci_high": high, f"{name}_p": boot[name]["p"]})
        return values
