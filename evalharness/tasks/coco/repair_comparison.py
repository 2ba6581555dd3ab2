"""What a repair or a layer search bounds on COCO (``quant.max_drop``), and how two passes' records
are paired for it: the model's headline metric (box ``AP``; ``segm_AP`` for a head with masks,
``keypoints_AP`` for one with keypoints; ``quant.metric`` another of AP, AP50, AP75 of a kind the
model gives) and its change B − A with the paired image bootstrap ``report diff`` draws: both
passes' pycocotools matchings re-accumulated on the same image resamples by
:func:`~evalharness.stats.coco_intervals.paired_ap_bootstrap`, the function ``report diff``'s
``DetectionComparison._paired_bootstrap`` calls for each kind, with the run's resamples and seed.

A repair scores hundreds of candidates against one float model: each pass's stats and matching are
made once (pycocotools, the bounded metric's kind only) and the last few kept by the records'
content, so the float model's records are scored once however many candidates pair with them; and
that content is hashed once per list of records (the float model's list pairs with every candidate,
and a pass's records are never changed once made).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalharness.core.errors import ConfigError, EvalHarnessError
from evalharness.stats.boxes import detection_diff
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS, paired_ap_bootstrap
from evalharness.stats.intervals import CONFIDENCE
from evalharness.tasks.coco.comparison import DetectionComparison
from evalharness.tasks.coco.scorer import CocoScorer, bootstrap_settings
from evalharness.tasks.coco.shape_store import SHAPE_BOOTSTRAP_STATS, SHAPES
from evalharness.tasks.comparison import PairedRecords, Records, RepairMetric

if TYPE_CHECKING:
    from evalharness.stats.coco_bootstrap import Matching

Scored = tuple[dict[str, float], dict[str, "Matching"]]  # pycocotools' stats, the matching by kind
SHAPE_WORDS = {"segm": "masks", "keypoints": "keypoints"}
# a repair's "answers changed": images whose detections of at least this score differ at IoU 0.5
# (report diff's count, at its threshold when a run records no F1-optimal one)
CHANGED_MIN_SCORE = 0.5
SCORED_KEPT = 4  # passes scored by pycocotools kept (the float model's, hit by every candidate)


def shape_kind(decoder: Mapping[str, Any] | None) -> tuple[str | None, str]:
    """(what the model's decoder gives beside boxes: ``segm``, ``keypoints`` or None; its name)."""
    from evalharness.decoders.base import DECODERS

    name = str((decoder or {}).get("name") or "")
    return (DECODERS.get(name).shape_kind if name else None), name or "none"


def kind_of(metric: str) -> str:
    """The COCO iouType a metric is scored by: ``segm_AP`` -> segm, ``AP50`` -> bbox."""
    return next((k for k in SHAPES if metric.startswith(f"{k}_")), "bbox")


class RepairableDetectionComparison(DetectionComparison):
    """:class:`DetectionComparison` (``report diff``), and the pairing of a repair's passes."""

    repair_metrics = (*BOOTSTRAP_STATS, *SHAPE_BOOTSTRAP_STATS)

    def __init__(self, definition: Any) -> None:
        super().__init__(definition)
        self._scored: OrderedDict[str, Scored] = OrderedDict()
        self._keys: list[tuple[Records, str, str]] = []  # (a pass's records, kind, its content key)

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
        metric, wants = self.pairable(asked), kind_of(asked)
        if wants not in ("bbox", kind):
            own = {*BOOTSTRAP_STATS, *(f"{kind}_{m}" for m in BOOTSTRAP_STATS if kind)}
            offered = [m for m in self.repair_metrics if m in own]
            raise ConfigError(
                f"quant.metric={asked}: {head} gives no {SHAPE_WORDS[wants]}; "
                f"its metrics: {', '.join(offered)}"
            )
        return {"name": metric, "source": f"quant.metric={asked}"}

    def paired_records(
        self, records_a: Records, records_b: Records, metric: str | None = None, scorer: Any = None
    ) -> PairedRecords:
        """``metric`` (box, mask or keypoint AP, AP50, AP75) of B minus A as pycocotools scores both,
        with the paired image bootstrap of ``report diff`` (the run's ``bootstrap_resamples`` and
        seed; 0 resamples: no interval). ``scorer``: a fresh :class:`CocoScorer` of the live task,
        for the annotations the records were scored against."""
        if not isinstance(scorer, CocoScorer):
            raise EvalHarnessError("a paired COCO comparison of records needs the annotations scored on")
        metric = metric or str(self.definition.abilities.repair_metric)
        kind = kind_of(metric)
        stats_a, match_a = self.scored(scorer.annotations, records_a, kind)
        stats_b, match_b = self.scored(scorer.annotations, records_b, kind)
        resamples, seed = bootstrap_settings(self.settings)
        entry: Mapping[str, Any] = {"interval": None, "p": None}
        if resamples > 0:
            pair = match_a[kind], match_b[kind]
            paired: Mapping[str, Any] = paired_ap_bootstrap(*pair, resamples, seed, CONFIDENCE)
            entry = paired[metric.removeprefix(f"{kind}_")]
        changed = detection_diff(records_a, records_b, 0.5, CHANGED_MIN_SCORE)["changed_images"]
        return {
            "delta": stats_b[metric] - stats_a[metric],
            "interval": entry["interval"],
            "method": f"paired bootstrap over images, B={resamples}, seed {seed} (as report diff)",
            "changed": len(changed),
            "paired": len(records_a),
            "p": entry["p"],
        }

    def scored(self, annotations: dict[str, Any], records: Records, kind: str) -> Scored:
        """pycocotools' stats and matching of ``records`` for one ``kind`` (``bbox``, ``segm``,
        ``keypoints``); the last few kept by content."""
        key = self._content_key(records, kind)
        if key in self._scored:
            self._scored.move_to_end(key)
            return self._scored[key]
        found = CocoScorer(annotations, "pycocotools", False).add_all(records).matchings((kind,))
        self._scored[key] = found
        while len(self._scored) > SCORED_KEPT:
            self._scored.popitem(last=False)
        return found

    def _content_key(self, records: Records, kind: str) -> str:
        """The sha256 of ``records`` scored as ``kind``, hashed once per list: the same list object
        (the float model's, paired with every candidate) is found by identity among the last few,
        each held here so its identity cannot pass to another list."""
        for held, held_kind, key in self._keys:
            if held is records and held_kind == kind:
                return key
        content = json.dumps([kind, records], sort_keys=True, default=str).encode()
        key = hashlib.sha256(content).hexdigest()
        self._keys = [*self._keys, (records, kind, key)][-SCORED_KEPT:]
        return key
