"""COCO's records -> metrics: pycocotools' 12 stats (and the TFLite tool's AP, bootstrap
intervals, the analysis) from the records image by image, against the annotation file the run
recorded, so a live run, ``rescore``, a ``merge`` and a diff's paired bootstrap score alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from evalharness.core.collector import cycles_uncollected
from evalharness.core.documents import JSONMap
from evalharness.core.errors import EvalHarnessError
from evalharness.rundir.reader import Run
from evalharness.stats.coco_intervals import bootstrap_intervals
from evalharness.stats.intervals import CONFIDENCE
from evalharness.tasks.coco.shape_store import ShapeStore
from evalharness.tasks.coco.store import DetectionStore
from evalharness.tasks.defaults import setting
from evalharness.tasks.definition import Scorer

if TYPE_CHECKING:
    from evalharness.stats.coco_bootstrap import Matching
    from evalharness.stats.detection_analysis import ClassCurves
    from evalharness.stats.tide import TideBreakdown


def bootstrap_settings(settings: Mapping[str, Any]) -> tuple[int, int]:
    """(resamples, seed) of the run's settings; runs made before them get the defaults."""
    resamples, seed = (setting(settings, "coco", key) for key in ("bootstrap_resamples", "bootstrap_seed"))
    return int(resamples), int(seed)


def load_ground_truth(run: Run) -> JSONMap:
    """The ground truth the run recorded (a COCO instances JSON object: an annotation file, or a YOLO
    layout's labels converted), refused if it changed since (sha256 of the file, or of the converted
    annotations)."""
    from evalharness.tasks.coco.ground_truth_readers import DETECTION_TRUTH, DetectionTruthReader

    dataset = run.provenance.dataset
    path = dataset.ground_truth
    if not path:
        raise EvalHarnessError(
            f"run {run.label}: provenance.dataset.ground_truth is empty; no annotations to score"
        )
    recorded = dataset.ground_truth_sha256
    # the reader of the layout the run read (an instances JSON when a run recorded none)
    reader: DetectionTruthReader = DETECTION_TRUTH.get(dataset.format or "coco")()
    annotations, digest = reader.read_again(path, dataset.dataset_split, recorded)
    if recorded and digest != recorded:
        raise EvalHarnessError(
            f"run {run.label}: {path} changed since the run (sha256 differs from provenance)"
        )
    return annotations


def mask_tide(tide: Any) -> TideBreakdown:
    """The masks' TIDE breakdown a background TIDE made beside the boxes', or why there is none."""
    from evalharness.stats.detection_analysis import TIDE_OFF
    from evalharness.stats.tide import absent

    found = tide.masks() if tide and hasattr(tide, "masks") else None
    return found if found is not None else absent(TIDE_OFF)


class CocoScorer(Scorer):
    def __init__(
        self,
        annotations: dict[str, Any],
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
        from evalharness.stats.coco_eval import resolved_backend

        # a seg / pose model's masks and keypoints; masks kept as RLE only for what reads them at the
        # end: TIDE's breakdown by mask, a backend other than pycocotools (its own IoUs)
        keep_masks = (analysis and tide) or resolved_backend(backend) != "pycocotools"
        self.shapes = ShapeStore(annotations, keep_masks)
        self.image_ids: list[int] = []
        self.unmapped = 0
        self.ties: list[int] | None = None  # [images, suppressions] NMS ties decided; None: no NMS of ours
        self.curves: ClassCurves | None = None  # per-class PR curves, made by result() with the analysis

    def add(self, record: Mapping[str, Any]) -> None:
        self._add(record, checked=False)

    def add_checked(self, record: Mapping[str, Any]) -> None:
        self._add(record, checked=True)

    def _add(self, record: Mapping[str, Any], checked: bool) -> None:
        self.detections.add(record["image_id"], record["detections"])
        self.shapes.add(record, checked)
        self.image_ids.append(record["image_id"])
        self.unmapped += record.get("unmapped", 0)
        ties = record.get("nms_ties")
        if ties is not None:
            self.ties = self.ties or [0, 0]
            self.ties[0] += ties > 0
            self.ties[1] += ties

    def result(self) -> JSONMap:
        """The metrics, with Python's cyclic collector paused (core/collector.py): pycocotools'
        evaluate() makes a few containers per image, category and area range, and each collection
        they start would walk every record and annotation the run holds (a third of the scoring's
        CPU on 500 images)."""
        with cycles_uncollected():
            return self._result()

    def _result(self) -> JSONMap:
        from evalharness.stats.coco_eval import evaluate_bbox
        from evalharness.stats.coco_tool_ap import tflite_tool_ap

        tide: Any = self.tide  # True, or the function that waits for the breakdown
        if self.analysis and self.tide:  # TIDE's pass runs beside pycocotools', in a child process
            from evalharness.stats.tide import tide_in_background

            masks = self.shapes.results["segm"] if self.shapes.seen["segm"] else None
            tide = tide_in_background(self.annotations, self.detections.blocks, self.image_ids, masks)
        scored = evaluate_bbox(  # the store itself: its result dicts made a chunk of images at a time
            self.annotations,
            self.detections,
            self.backend,
            self.image_ids,
            keep_matching=self.resamples > 0,
            analysis=self.analysis,
        )
        metrics: JSONMap = {
            **scored["stats"],
            "per_class": scored["per_class"],
            "summary": scored["summary"],
            "backend": scored["backend"],
            "num_detections": len(self.detections),
            "num_unmapped_detections": self.unmapped,
            "num_scored": len(self.image_ids),
        }
        if self.ties is not None:  # the images where equal scores decided what NMS kept, and how often
            metrics["nms_ties"] = {"images": self.ties[0], "suppressions": self.ties[1]}
        if self.tflite_tool:  # its own matching, from one list of the result dicts (made for it alone)
            results = list(self.detections.rows())
            metrics["tflite_tool"] = tflite_tool_ap(self.annotations, results, image_ids=self.image_ids)
            del results  # the box dicts are not held while the masks / keypoints are scored
        if self.resamples > 0:
            metrics["intervals"] = bootstrap_intervals(
                scored["matching"], self.resamples, self.seed, CONFIDENCE
            )
        ids, resamples = self.image_ids, self.resamples
        shapes = self.shapes.metrics(self.annotations, ids, resamples, self.seed, self.backend)
        if "intervals" in shapes:  # segm_AP, keypoints_AP, ... beside the boxes' AP, AP50, AP75
            metrics["intervals"] = {**metrics.get("intervals", {}), **shapes.pop("intervals")}
        metrics.update(shapes)
        if self.analysis:
            from evalharness.stats.detection_analysis import analyse, per_class_curves

            blocks, ids = self.detections.blocks, self.image_ids
            metrics["analysis"] = analyse(self.annotations, scored, blocks, ids, tide)
            if self.shapes.seen["segm"]:  # a seg model's masks: TIDE's breakdown by mask IoU beside
                metrics["analysis"]["tide_segm"] = mask_tide(tide)
            names = {c["id"]: c["name"] for c in self.annotations["categories"]}
            acc = scored["accumulated"]
            self.curves = per_class_curves(acc["precision"], acc["cat_ids"], names)
        return metrics

    def matching(self) -> Matching:
        """pycocotools' per-image matching of the added records (for a paired bootstrap)."""
        return self.matchings(("bbox",))[1]["bbox"]

    def matchings(self, kinds: tuple[str, ...] = ()) -> tuple[dict[str, float], dict[str, Matching]]:
        """pycocotools' stats and per-image matching of the added records, the matching by kind
        (``bbox``; a seg / pose model's ``segm`` / ``keypoints`` too; ``kinds``: only these, empty:
        all): what a paired bootstrap re-accumulates (pycocotools always keeps its matching)."""
        from evalharness.stats.coco_eval import evaluate_bbox

        stats: dict[str, float] = {}
        matchings: dict[str, Matching] = {}
        if not kinds or "bbox" in kinds:
            ids = self.image_ids
            boxes = evaluate_bbox(self.annotations, self.detections, "pycocotools", ids, keep_matching=True)
            stats, matchings = dict(boxes["stats"]), {"bbox": cast("Matching", boxes["matching"])}
        for kind, shape in self.shapes.scored(self.annotations, self.image_ids, kinds).items():
            stats.update(shape["stats"])
            matchings[kind] = shape["matching"]
        return stats, matchings
