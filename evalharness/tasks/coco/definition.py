"""COCO bbox detection: its config, its metrics, records -> pycocotools' 12 stats.

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
from evalharness.core.schema import bounds
from evalharness.rundir.reader import Run
from evalharness.stats.coco_eval import COCO_STAT_NAMES
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS
from evalharness.stats.coco_shapes import KEYPOINT_STATS
from evalharness.stats.detection_analysis import TIDE_OFF
from evalharness.tasks.coco.analysis import CURVES_FILE
from evalharness.tasks.coco.repair_comparison import RepairableDetectionComparison
from evalharness.tasks.coco.scorer import CocoScorer, bootstrap_settings, load_ground_truth
from evalharness.tasks.coco.view import TOOL_AP_LABEL, CocoView
from evalharness.tasks.defaults import from_conf, setting
from evalharness.tasks.definition import Abilities, Scorer, TaskDefinition, register
from evalharness.tasks.metrics import Metric

RESULTS_FILE = "coco_results.json"

# Said where the interval is printed: a percentile interval around a skewed AP reads as a bug
# ([0.349, 0.496] around 0.385) unless its reason is beside it.
PERCENTILE_WHY = (
    "percentile bootstrap over images, B={resamples}: its ends are percentiles of "
    "the APs of resampled image sets, which need not centre the AP of these images (a resample repeats "
    "some images, drops others and the classes only they hold, so its AP is skewed)"
)


def detection_formats() -> tuple[str, ...]:
    """``dataset.format``'s values: auto and every registered ground-truth layout (a plug-in's too)."""
    from evalharness.tasks.coco.ground_truth_readers import DETECTION_TRUTH

    return ("auto", *DETECTION_TRUTH.names())


@dataclass
class CocoDataset:
    annotations: str | None = None  # COCO instances JSON
    # the ground truth's layout, a reader of tasks/coco/ground_truth_readers.py's registry (a plug-in's
    # too): coco: annotations + the images at root (a folder, or a container: tasks/coco/images.py) |
    # yolo: Ultralytics' layout at root (data.yaml, images/, labels/) | auto: coco when annotations
    # are given, else the layout a reader detects at root (said, recorded)
    format: str = field(default="auto", metadata=bounds(choices=detection_formats))
    index_dir: str | None = None  # where a container's shard indexes are kept (data/shard_index.py)
    # the manifest of a folder's images: size (fast) | content (sha256 of every image, as a container's
    # always is, so report diff knows the same images in a container)
    manifest: str = field(default="size", metadata=bounds(choices=("size", "content")))


@dataclass
class CocoModel:
    # model class -> COCO category id: coco91 (id = class + 1) | coco80 (the 80 contiguous classes) |
    # labels (by the model's label text)
    class_map: str = field(default="coco91", metadata=bounds(choices=("coco91", "coco80", "labels")))


@dataclass
@from_conf("coco")  # the defaults: conf/task/coco.yaml
class CocoSettings:
    name: str
    num_images: int  # first N images in ascending image id; 0 = all
    backend: str  # auto | pycocotools | faster_coco_eval
    tflite_tool_ap: bool  # also report AP as TFLite's coco_object_detection tool defines it
    # fail the run when more than this fraction of detections map to no annotated category
    max_unmapped_fraction: float = field(metadata=bounds(0.0, 1.0))
    bootstrap_resamples: int  # image-level resamples of the AP intervals; 0 = no intervals
    bootstrap_seed: int  # the resamples' seed: rescore, merge and diff redraw the same images
    # metrics.analysis: per-class table, PR curves, F1-optimal threshold, confusion matrix, TIDE
    analysis: bool
    tide: bool  # TIDE's breakdown (tidecv): opt in, the analysis' one costly part


# How a run recorded before the setting existed was made (tasks/defaults.py): pycocotools was the
# only backend, a run had no analysis, and an analysis had TIDE in it.
RECORDED_BEFORE = {"backend": "pycocotools", "analysis": False, "tide": True}


def shape_metrics(kind: str, stats: tuple[str, ...], what: str) -> tuple[Metric, ...]:
    """A seg / pose model's ``segm_*`` / ``keypoints_*`` stats (:mod:`evalharness.stats.coco_shapes`),
    declared as the box stats are: AP, AP50, AP75 fractions with image-bootstrap intervals; absent
    from a box model's run, so nothing shows them there. Their AP is a sweep and quantization-table
    column, shown where a run of the table holds it (a box model's tables keep their columns)."""
    return tuple(
        Metric(
            f"{kind}_{name}",
            title=f"{what} {name}",
            fraction=name in BOOTSTRAP_STATS,
            undefined=f": the scored images hold no annotation {what} (pycocotools' -1)",
            interval=name in BOOTSTRAP_STATS,
            interval_how="image bootstrap, B={resamples}, seed {seed}",
            interval_method=PERCENTILE_WHY,
            sweep=name == "AP",
            headline=name == "AP",  # said after the boxes' AP in the summary's Accuracy line
        )
        for name in stats
    )


@register
class CocoDefinition(TaskDefinition):
    name = "coco"
    schema = CocoSettings
    dataset_schema = CocoDataset
    model_schema = CocoModel
    live = "evalharness.tasks.coco.live:CocoTask"
    listing_order = 1
    # rescore --backend scores with another backend on purpose; the unmapped-class check counts what
    # the live session's decoder produced, which the records keep only as scored boxes
    abilities = Abilities(
        # what quant.max_drop bounds: box AP, or the model's mask / keypoint AP (repair_comparison.py)
        repair_metric="AP",
        # a candidate's AP alone: its interval is the paired bootstrap's (repair_comparison.py)
        search_scoring=(
            ("bootstrap_resamples", 0),
            ("analysis", False),
            ("tide", False),
            ("tflite_tool_ap", False),
        ),
        sample_key="image_id",
        can_resume=True,
        rescorable=True,
        rescore_ignores=("backend", "failed_checks"),
        export_rows=("detections", ("category_id", "score", "x", "y", "w", "h")),
        container_labels=False,
    )
    # pycocotools' 12 stats, then the TFLite tool's AP when computed; AP, AP50, AP75: fractions with
    # image-bootstrap intervals (-1: the scored images hold no annotation box)
    metrics = (
        *(
            Metric(
                name,
                title="AP@[.5:.95]" if name == "AP" else "",
                fraction=True,
                undefined=": the scored images hold no annotation box (pycocotools' -1)",
                interval=True,
                interval_how="image bootstrap, B={resamples}, seed {seed}",
                interval_method=PERCENTILE_WHY,
                headline=name == "AP",
                sweep=name in ("AP", "AP50"),
            )
            for name in BOOTSTRAP_STATS
        ),
        *(Metric(name) for name in COCO_STAT_NAMES if name not in BOOTSTRAP_STATS),
        Metric("tflite_AP", label=TOOL_AP_LABEL, path="tflite_tool.AP", format=".6f"),
        *shape_metrics("segm", COCO_STAT_NAMES, "mask"),
        *shape_metrics("keypoints", KEYPOINT_STATS, "keypoint"),
    )
    comparison = RepairableDetectionComparison
    view = CocoView

    def _setting(self, key: str) -> Any:
        return setting(self.settings, self.name, key, RECORDED_BEFORE)

    def scorer(self, ground_truth: Any = None, backend: str | None = None) -> CocoScorer:
        return CocoScorer(
            ground_truth,
            backend or self._setting("backend"),
            self._setting("tflite_tool_ap"),
            *bootstrap_settings(self.settings),
            analysis=bool(self._setting("analysis")),
            tide=bool(self._setting("tide")),
        )

    def rescorer(
        self,
        runs: list[Run],
        records: list[dict[str, Any]],
        top_k: int | None = None,
        backend: str | None = None,
    ) -> Scorer:
        if top_k is not None:
            raise EvalHarnessError(f"--top-k applies to classification runs, not to task {self.name}")
        first = runs[0]
        stored = first.metrics.get("backend") or self._setting("backend")
        tflite = "tflite_tool" in first.metrics  # score what the run reported
        analysis = "analysis" in first.metrics
        tide = first.document.metrics.analysis_part("tide").get("reason") != TIDE_OFF
        return CocoScorer(
            load_ground_truth(first),
            backend or stored,
            tflite,
            *bootstrap_settings(self.settings),
            analysis,
            tide,
        )

    def artifacts(self, scorer: CocoScorer) -> Mapping[str, object]:  # type: ignore[override]  # its own scorer
        """The standard COCO results JSON, re-scorable by any COCO tool; the per-class PR curves."""
        curves = {CURVES_FILE: scorer.curves} if scorer.curves else {}
        return {RESULTS_FILE: scorer.detections.rows(), **curves}
