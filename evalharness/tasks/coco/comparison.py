"""Two detection runs paired box by box: matched boxes and IoU, changed images with their error
types, per-class AP changes, the paired image bootstrap of ΔAP, and the analysis' changes; the same
paired bootstrap bounds a repair's drop of box, mask or keypoint AP (``paired_records``)."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalharness.core.documents import JSONMap
from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.rundir.reader import Run
from evalharness.stats.boxes import detection_diff, per_class_deltas
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS, paired_ap_bootstrap
from evalharness.stats.intervals import CONFIDENCE
from evalharness.tasks.coco import analysis
from evalharness.tasks.coco.scorer import CocoScorer, bootstrap_settings, load_ground_truth
from evalharness.tasks.coco.shape_store import SHAPE_BOOTSTRAP_STATS, SHAPES
from evalharness.tasks.comparison import (
    Agreement,
    Comparison,
    PairedRecords,
    PairQuantities,
    Records,
    RepairMetric,
)

if TYPE_CHECKING:
    from evalharness.stats.coco_bootstrap import Matching

Scored = tuple[dict[str, float], dict[str, "Matching"]]  # pycocotools' stats, the matching by kind
SHAPE_WORDS = {"segm": "masks", "keypoints": "keypoints"}
# a repair's "answers changed": images whose detections of at least this score differ at IoU 0.5
# (report diff's count, at its threshold when a run records no F1-optimal one)
CHANGED_MIN_SCORE = 0.5
SCORED_KEPT = 4  # records scored by pycocotools kept (the float model's, hit by every candidate)


def paired_bootstrap(
    a: Mapping[str, Matching], b: Mapping[str, Matching], resamples: int, seed: int
) -> JSONMap:
    """ΔAP, ΔAP50, ΔAP75 of the boxes (and a seg / pose model's ``segm_AP``, ``keypoints_AP``, ...)
    with paired intervals and p: both matchings (by kind, :meth:`CocoScorer.matchings`: every kind
    both hold) re-accumulated on the same image resamples. ``report diff`` and a repair call it."""
    wanted = [k for k in ("bbox", *SHAPES) if k in a and k in b]
    boot: JSONMap = {}
    for kind in wanted:
        paired: Mapping[str, Any] = paired_ap_bootstrap(a[kind], b[kind], resamples, seed, CONFIDENCE)
        if kind == "bbox":  # the boxes' ΔAP (PairedAPBootstrap) as one JSON block
            boot.update(paired)
        else:  # ΔAP of masks / keypoints: segm_AP, ...
            boot.update({f"{kind}_{name}": paired[name] for name in BOOTSTRAP_STATS})
    return boot


def shape_kind(decoder: Mapping[str, Any] | None) -> tuple[str | None, str]:
    """(what the model's decoder gives beside boxes: ``segm``, ``keypoints`` or None, its name)."""
    from evalharness.decoders.base import DECODERS

    name = str((decoder or {}).get("name") or "")
    return (DECODERS.get(name).shape_kind if name else None), name or "none"


class DetectionComparison(Comparison):
    key = "detection"
    repair_metrics = (*BOOTSTRAP_STATS, *SHAPE_BOOTSTRAP_STATS)

    def __init__(self, definition: Any) -> None:
        super().__init__(definition)
        self._scored: OrderedDict[str, Scored] = OrderedDict()

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
        """:func:`paired_bootstrap` of two comparable runs (they scored the same images)."""
        ground_truth = load_ground_truth(a)
        matchings_a, matchings_b = (self.scored(ground_truth, run.predictions)[1] for run in (a, b))
        return paired_bootstrap(matchings_a, matchings_b, resamples, seed)

    def scored(
        self, ground_truth: dict[str, Any], records: list[dict[str, Any]], kinds: tuple[str, ...] = ()
    ) -> Scored:
        """pycocotools' stats and matchings of ``records`` (``kinds``: only these, as
        :meth:`CocoScorer.matchings`); the last few kept by content, so a repair scores its float
        model's records once, however many candidates pair with them."""
        content = json.dumps([kinds, records], sort_keys=True, default=str).encode()
        key = hashlib.sha256(content).hexdigest()
        if key in self._scored:
            self._scored.move_to_end(key)
            return self._scored[key]
        scorer = CocoScorer(ground_truth, "pycocotools", False).add_all(records)
        self._scored[key] = found = scorer.matchings(kinds)
        while len(self._scored) > SCORED_KEPT:
            self._scored.popitem(last=False)
        return found

    def repair_metric(self, decoder: Mapping[str, Any] | None, asked: str | None) -> RepairMetric:
        """The model's headline COCO metric: ``segm_AP`` for a head with masks (its decoder's
        ``shape_kind``), ``keypoints_AP`` for one with keypoints, box ``AP`` otherwise;
        ``quant.metric`` names another the paired bootstrap pairs (a seg model's box ``AP``, AP50)."""
        kind, name = shape_kind(decoder)
        head = f"the model's head (model.decoder.name={name})"
        if asked is None:
            if kind is None:
                return {"name": "AP", "source": f"box AP: {head} gives boxes only"}
            return {"name": f"{kind}_AP", "source": f"{head} gives {SHAPE_WORDS[kind]}"}
        metric = self.pairable(asked)
        wants = next((k for k in SHAPES if metric.startswith(f"{k}_")), None)
        if wants is not None and wants != kind:
            own = {*BOOTSTRAP_STATS, *(f"{kind}_{m}" for m in BOOTSTRAP_STATS if kind)}
            offered = [m for m in self.repair_metrics if m in own]
            raise ConfigError(
                f"quant.metric={asked}: {head} gives no {SHAPE_WORDS[wants]}; "
                f"its metrics: {', '.join(offered)}"
            )
        return {"name": metric, "source": f"quant.metric={asked}"}

    def paired_records(
        self, records_a: Records, records_b: Records, metric: str | None = None, ground_truth: Any = None
    ) -> PairedRecords:
        """``metric`` (box, mask or keypoint AP, AP50, AP75) of B minus A as pycocotools scores both,
        with the paired image bootstrap of ``report diff`` (the run's ``bootstrap_resamples`` and
        seed; 0 resamples: no interval)."""
        if ground_truth is None:
            raise EvalHarnessError(
                "a paired COCO comparison of records needs the annotations they were scored on"
            )
        metric = metric or str(self.definition.abilities.repair_metric)
        kind = next((k for k in SHAPES if metric.startswith(f"{k}_")), "bbox")
        stats_a, match_a = self.scored(ground_truth, records_a, (kind,))
        stats_b, match_b = self.scored(ground_truth, records_b, (kind,))
        resamples, seed = bootstrap_settings(self.settings)
        boot = paired_bootstrap(match_a, match_b, resamples, seed) if resamples > 0 else {}
        entry = boot.get(metric) or {"interval": None, "p": None}
        changed = detection_diff(records_a, records_b, 0.5, CHANGED_MIN_SCORE)["changed_images"]
        return {
            "delta": stats_b[metric] - stats_a[metric],
            "interval": entry["interval"],
            "method": f"paired bootstrap over images, B={resamples}, seed {seed} (as report diff)",
            "changed": len(changed),
            "paired": len(records_a),
            "p": entry["p"],
        }

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
