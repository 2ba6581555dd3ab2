"""Two detection runs paired box by box: matched boxes and IoU, changed images with their error
types, per-class AP changes, the paired image bootstrap of ΔAP, and the analysis' changes. A pair of
seg or pose runs (both documents hold ``metrics.segm`` / ``metrics.keypoints``) gets the same for its
masks or keypoints, by the same code with the kind's measure (mask IoU, OKS), in a block of its own."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from typing import Any

from evalharness.core.documents import JSONMap
from evalharness.rundir.files import PREDICTIONS_FILE
from evalharness.rundir.reader import Run
from evalharness.stats.boxes import detection_diff, per_class_deltas
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS, PairedAPBootstrap, paired_ap_bootstrap
from evalharness.stats.intervals import CONFIDENCE
from evalharness.stats.shape_overlap import OVERLAPS
from evalharness.tasks.coco import analysis
from evalharness.tasks.coco.changed_images import label_changed_images
from evalharness.tasks.coco.scorer import CocoScorer, bootstrap_settings, load_ground_truth
from evalharness.tasks.coco.shape_store import SHAPE_BOOTSTRAP_STATS, SHAPES, check_read_back
from evalharness.tasks.comparison import Agreement, Comparison, PairQuantities

# the numbers of a seg / pose pair's matching that --fail-if rules name, prefixed by kind
KIND_QUANTITIES = ("unmatched", "images_changed", "mean_iou")
TIDE_MODE = {"segm": ", by mask IoU"}  # how the changed images' errors are typed, beyond boxes


def shape_kinds(a: Run, b: Run) -> list[str]:
    """What both runs scored beyond boxes, as their documents say: ``segm`` (a seg model's
    ``metrics.segm``), ``keypoints`` (a pose model's)."""
    return [kind for kind in SHAPES if a.document.metrics.part(kind) and b.document.metrics.part(kind)]


def per_class_of(run: Run, kind: str) -> JSONMap:
    """The run's per-class AP of ``kind``: the boxes' ``metrics.per_class``, ``metrics.segm.per_class``."""
    metrics = run.document.metrics
    return metrics.part("per_class") if kind == "bbox" else dict(metrics.part(kind).get("per_class") or {})


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
        """Boxes matched image by image, then, for a seg / pose pair, its masks / keypoints the same
        way (``segm``, ``keypoints`` blocks of the same keys); the paired bootstrap of every kind's
        ΔAP; the analysis' changes."""
        min_score, source = self.diff_score_threshold(a, options.get("min_score"))
        truth = functools.cache(lambda: load_ground_truth(a))  # read where needed, once
        kinds = ["bbox", *shape_kinds(a, b)]
        for run in (a, b):  # masks / keypoints read back: checked once, before pycocotools reads them
            check_read_back(run.predictions, truth, os.path.join(run.dir, PREDICTIONS_FILE))
        blocks = {kind: self._matched(kind, a, b, truth, options["iou"], min_score, source) for kind in kinds}
        det = blocks.pop("bbox")
        resamples, seed = bootstrap_settings(self.settings)
        if resamples > 0:
            paired = self._paired_bootstrap(a, b, truth(), resamples, seed)
            boot: JSONMap = dict(paired["bbox"])
            for kind in [k for k in paired if k != "bbox"]:  # ΔAP of masks / keypoints: segm_AP, ...
                shape: Mapping[str, Any] = paired[kind]
                boot.update({f"{kind}_{name}": shape[name] for name in BOOTSTRAP_STATS})
            det["paired_bootstrap"] = boot
            for kind, block in (("bbox", det), *blocks.items()):
                if kind in paired:
                    analysis.attach_paired(block["per_class"], paired[kind])
        if "analysis" in a.metrics or "analysis" in b.metrics:
            det["analysis"] = analysis.compare(a, b, truth(), det["per_class"])
        return {**det, **blocks}

    def _matched(
        self,
        kind: str,
        a: Run,
        b: Run,
        truth: Callable[[], JSONMap],
        iou: float,
        min_score: float,
        source: str,
    ) -> JSONMap:
        """One kind's matching (boxes by IoU, masks by mask IoU, keypoints by OKS), its changed
        images typed by TIDE where tidecv has the kind, and its per-class ΔAP."""
        overlap = OVERLAPS[kind]
        block: JSONMap = {**detection_diff(a.predictions, b.predictions, iou, min_score, overlap)}
        block["min_score_source"] = source
        if kind != "bbox":
            block["measure"] = overlap.measure
        if block["changed_images"]:
            why = label_changed_images(block["changed_images"], truth(), a.predictions, b.predictions, kind)
            typed = f"TIDE error types (tidecv{TIDE_MODE.get(kind, '')}) of B minus A on the image"
            block["error_types_note"] = why or typed
        block["per_class"] = per_class_deltas(*(per_class_of(run, kind) for run in (a, b)))
        return block

    def agreement(self, a: Run, b: Run) -> Agreement:
        """Box-match rate: matched boxes (same class, IoU >= 0.5) over the mean box count."""
        boxes = detection_diff(a.predictions, b.predictions, 0.5, 0.0)["detections"]
        total = boxes["a"] + boxes["b"]
        return {"name": "box-match rate", "value": 2 * boxes["matched"] / total if total else None, "p": None}

    def _paired_bootstrap(
        self, a: Run, b: Run, truth: JSONMap, resamples: int, seed: int
    ) -> dict[str, PairedAPBootstrap]:
        """By kind (``bbox``, and ``segm`` / ``keypoints`` where both runs have them): ΔAP, ΔAP50,
        ΔAP75 and per-class ΔAP with paired intervals and p, both runs' matchings re-accumulated on
        the same image resamples (runs are comparable, so they scored the same images)."""
        matchings = []
        for run in (a, b):
            scorer = CocoScorer(truth, "pycocotools", False)
            for record in run.predictions:
                scorer.add_checked(record)  # compare() checked them
            matchings.append({"bbox": scorer.matching(), **scorer.shapes.matchings(truth, scorer.image_ids)})
        return {
            kind: paired_ap_bootstrap(matchings[0][kind], matchings[1][kind], resamples, seed, CONFIDENCE)
            for kind in matchings[0]
            if kind in matchings[1]
        }

    def pairwise(self, comparison: JSONMap) -> PairQuantities:
        values = super().pairwise(comparison)
        values.pop("iou_threshold", None)
        values.pop("min_score", None)
        for kind in SHAPES:  # a seg / pose pair's matching: segm_unmatched, keypoints_mean_iou, ...
            block = comparison.get(kind) or {}
            values.update({f"{kind}_{k}": block[k] for k in KIND_QUANTITIES if block.get(k) is not None})
        boot = comparison.get("paired_bootstrap") or {}
        for name in (*BOOTSTRAP_STATS, *SHAPE_BOOTSTRAP_STATS):
            if isinstance(boot.get(name), dict) and boot[name]["interval"] is not None:
                low, high = boot[name]["interval"]
                values.update({f"{name}_ci_low": low, f"{name}_ci_high": high, f"{name}_p": boot[name]["p"]})
        return values
