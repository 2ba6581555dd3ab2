"""A seg / pose run's masks and keypoints until they are scored, and the metrics made of them.

A record of a seg head carries ``masks`` (one RLE ``counts`` text per detection, in the order of
``detections``) and ``mask_size`` ([height, width]); a pose head's carries ``keypoints`` (K x 3
values per detection). Keypoints are kept as rows of float64 numbers (the values the records give,
:class:`~evalharness.tasks.coco.store.KeypointStore`), and become COCO result dicts only when
scored, a chunk of images at a time, so ``rescore`` of predictions.jsonl scores the same list. Masks
(~1 KB of RLE text each, up to 100 an image) are reduced as each record comes to what pycocotools'
segm scoring reads of them (:class:`~evalharness.stats.coco_mask_overlaps.MaskOverlaps`: areas and
the IoUs with the image's ground truth), so a run's memory does not grow with its masks; they are
kept as RLE only where something else reads them at the end: TIDE's breakdown by mask, or the
faster-coco-eval backend (it computes its own IoUs). What reads masks later (``report diff``'s TIDE
and thumbnails, ``rescore``) reads them from predictions.jsonl.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from evalharness.core.errors import DataError
from evalharness.data.coco_rle import mask_record_problem
from evalharness.stats.coco_intervals import BOOTSTRAP_STATS, bootstrap_intervals
from evalharness.stats.intervals import CONFIDENCE
from evalharness.tasks.coco.store import KeypointStore, keypoint_width_problem

if TYPE_CHECKING:  # pycocotools is imported when masks are first added
    from evalharness.stats.coco_mask_overlaps import MaskOverlaps

SHAPES = ("segm", "keypoints")
PREDICTIONS = "predictions.jsonl"  # what an error names when the caller knows no more of the file
# the figures with (paired) bootstrap intervals beside the boxes' AP, AP50, AP75
SHAPE_BOOTSTRAP_STATS = tuple(f"{kind}_{name}" for kind in SHAPES for name in BOOTSTRAP_STATS)


def _shape_problem(
    record: Mapping[str, Any], key: str, shapes: Any, detections: int, image: Mapping[str, Any] | None
) -> str | None:
    """What is wrong with a read-back record's ``masks`` / ``keypoints`` (None: nothing): one entry
    per detection, whole COCO RLE masks of the image's [height, width] ``mask_size``
    (data/coco_rle.py: pycocotools' C reads them unchecked), or x, y, visibility triples of finite
    numbers, all of one length."""
    if not isinstance(shapes, list) or len(shapes) != detections:
        count = len(shapes) if isinstance(shapes, list) else "no list of"
        return f"{key} holds {count} entries for {detections} detections"
    if key == "masks":
        return mask_record_problem(record, image)
    lengths = {len(k) if isinstance(k, list) else -1 for k in shapes}
    numbers = all(
        type(v) in (int, float) and math.isfinite(v) for k in shapes if isinstance(k, list) for v in k
    )
    if not numbers or len(lengths) > 1 or any(n < 3 or n % 3 for n in lengths):
        return "keypoints are not x, y, visibility triples of finite numbers, one length for every detection"
    return None


def check_read_back(
    records: Iterable[Mapping[str, Any]],
    annotations: Callable[[], Mapping[str, Any] | None],
    path: str = PREDICTIONS,
) -> None:
    """Every read-back record's masks and keypoints as :class:`ShapeStore` checks them, for readers
    that take them from a predictions file without a store (``report diff``'s matching);
    ``annotations`` (the images' sizes) is read at the first record that holds either; ``path``
    names the file in the error."""
    images: dict[Any, Mapping[str, Any]] | None = None
    width: int | None = None  # the keypoint values a detection: one model's file holds one count
    for record in records:
        for key in ("masks", "keypoints"):
            if key in record:
                images = _images_of(annotations()) if images is None else images
                found = _shape_problem(
                    record, key, record[key], len(record["detections"]), images.get(record["image_id"])
                )
                _refuse(record, found, path)
        if record.get("keypoints"):
            given = len(record["keypoints"][0])
            width = given if width is None else width
            if given != width:
                _refuse(record, keypoint_width_problem(given, width), path)


def _refuse(record: Mapping[str, Any], problem: str | None, path: str = PREDICTIONS) -> None:
    if problem:
        raise DataError(
            f"{path} record of image {record.get('id', record.get('image_id'))}: {problem}; "
            "the predictions file is damaged: run the model again"
        )


def _images_of(annotations: Mapping[str, Any] | None) -> dict[Any, Mapping[str, Any]]:
    return {image["id"]: image for image in annotations["images"]} if annotations else {}


def mask_results(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A seg record's masks as COCO result dicts (its detections' image, category, score, RLE)."""
    image_id = record["image_id"]
    return [
        {"image_id": image_id, "category_id": cat, "score": score, "segmentation": mask}
        for (cat, score, *_), mask in zip(record["detections"], rle_dicts(record), strict=True)
    ]


def rle_dicts(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A seg record's masks as pycocotools' compressed RLE dicts (``size``, ``counts``)."""
    size = record["mask_size"]
    return [{"size": size, "counts": counts} for counts in record["masks"]]


class ShapeStore:
    """``segm`` and ``keypoints`` results per added record, in the order added: masks as
    :class:`~evalharness.stats.coco_mask_overlaps.MaskOverlaps` against ``annotations`` (None, or
    ``keep_masks``: as RLE result dicts in ``results["segm"]``)."""

    def __init__(self, annotations: dict[str, Any] | None = None, keep_masks: bool = False) -> None:
        self.results: dict[str, list[dict[str, Any]]] = {"segm": []}  # masks kept as RLE (keep_masks)
        self.keypoints = KeypointStore()
        self.seen = {kind: False for kind in SHAPES}  # a seg / pose run: scored even with 0 detections
        self.overlaps: MaskOverlaps | None = None  # made at the first mask: a box or pose head needs none
        self._truth = None if keep_masks else annotations
        self._images = _images_of(annotations)

    def add(self, record: Mapping[str, Any], checked: bool = False) -> None:
        """One record's masks / keypoints; ``checked``: a record made by this process, or checked
        already (:func:`check_read_back`), is not checked again (a seg record's ~40 masks cost
        about half a millisecond)."""
        detections, image_id = record["detections"], record["image_id"]
        for kind, key in (("segm", "masks"), ("keypoints", "keypoints")):
            if key not in record:
                continue
            shapes = record[key]
            if not checked:
                _refuse(
                    record, _shape_problem(record, key, shapes, len(detections), self._images.get(image_id))
                )
            self.seen[kind] = True
            if kind == "keypoints":
                try:
                    self.keypoints.add(image_id, detections, shapes)
                except ValueError as exc:
                    _refuse(record, str(exc))
            elif self._truth is None:
                self.results[kind] += mask_results(record)
            else:
                if self.overlaps is None:
                    from evalharness.stats.coco_mask_overlaps import MaskOverlaps

                    self.overlaps = MaskOverlaps(self._truth)
                categories, scores = [d[0] for d in detections], [d[1] for d in detections]
                self.overlaps.add(image_id, categories, scores, rle_dicts(record))

    def _scored_results(self, kind: str) -> Any:
        """What :func:`~evalharness.stats.coco_shapes.evaluate_shapes` scores of ``kind``."""
        if kind == "keypoints":
            return self.keypoints
        return self.overlaps if self.overlaps is not None else self.results[kind]

    def metrics(
        self, annotations: dict[str, Any], image_ids: list[int], resamples: int, seed: int, backend: str
    ) -> dict[str, Any]:
        """The ``segm_*`` / ``keypoints_*`` stats of what was added, ``segm`` / ``keypoints`` (per
        class, summary, count) and their ``intervals`` (``segm_AP``, ..., ``segm_per_class_AP``)."""
        from evalharness.stats.coco_shapes import PREFIX, evaluate_shapes

        out: dict[str, Any] = {}
        intervals: dict[str, Any] = {}
        for kind in SHAPES:
            if not self.seen[kind]:
                continue
            results = self._scored_results(kind)
            scored = evaluate_shapes(annotations, results, kind, image_ids, resamples > 0, backend)
            out.update(scored["stats"])
            out[kind] = {k: scored[k] for k in ("per_class", "summary", "num_detections")}
            if resamples > 0:
                matching = scored["matching"]
                drawn: Mapping[str, Any] = bootstrap_intervals(matching, resamples, seed, CONFIDENCE)
                intervals.update({PREFIX[kind] + name: drawn[name] for name in BOOTSTRAP_STATS})
                intervals[PREFIX[kind] + "per_class_AP"] = drawn["per_class_AP"]
        if intervals:
            out["intervals"] = intervals
        return out

    def matchings(self, annotations: dict[str, Any], image_ids: list[int]) -> dict[str, Any]:
        """pycocotools' per-image matching of the added masks / keypoints, by kind (for the paired
        bootstrap of two runs' ``segm_AP``, ``keypoints_AP``, ...)."""
        return {kind: scored["matching"] for kind, scored in self.scored(annotations, image_ids).items()}

    def scored(
        self, annotations: dict[str, Any], image_ids: list[int], kinds: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """pycocotools' stats and per-image matching of the added masks / keypoints, by kind;
        ``kinds``: only these."""
        from evalharness.stats.coco_shapes import evaluate_shapes

        return {
            kind: evaluate_shapes(annotations, self._scored_results(kind), kind, image_ids, True)
            for kind in SHAPES
            if self.seen[kind] and (not kinds or kind in kinds)
        }
