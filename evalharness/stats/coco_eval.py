"""COCO box-detection metrics from in-memory dicts, scored by pycocotools (or faster-coco-eval).

The numbers are the official ones: ``COCOeval(gt, dt, "bbox")`` with default params, so a report can
be compared with any published COCO table. This module only adds what the reference tools lack for a
harness: no re-reading of files, checked inputs with one-line errors instead of asserts, zero
detections scored as 0 instead of crashing, silenced prints, and per-class AP.
"""

from __future__ import annotations

import contextlib
import io
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from evalharness.core.errors import ConfigError, DataError
from evalharness.core.heap import release_free_heap
from evalharness.core.registry import Registry
from evalharness.data.coco_annotations import check_annotations, finite_numbers

if TYPE_CHECKING:
    from evalharness.stats.coco_chunks import HeldRows, ImageRows

COCO_STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")
# (kind, IoU label, area, maxDets) of each line COCOeval.summarize() prints, in COCO_STAT_NAMES order.
_SUMMARY_ROWS = (
    ("AP", "0.50:0.95", "all", 100),
    ("AP", "0.50", "all", 100),
    ("AP", "0.75", "all", 100),
    ("AP", "0.50:0.95", "small", 100),
    ("AP", "0.50:0.95", "medium", 100),
    ("AP", "0.50:0.95", "large", 100),
    ("AR", "0.50:0.95", "all", 1),
    ("AR", "0.50:0.95", "all", 10),
    ("AR", "0.50:0.95", "all", 100),
    ("AR", "0.50:0.95", "small", 100),
    ("AR", "0.50:0.95", "medium", 100),
    ("AR", "0.50:0.95", "large", 100),
)
_DETECTION_KEYS = ("image_id", "category_id", "bbox", "score")
_DETECTION_KEY_SET = frozenset(_DETECTION_KEYS)
_NUMBER_TYPES = {int, float}  # exact types: bool (an int subclass) and strings are refused

# A backend scores (gt, detections, image_ids) and returns (12 stats, eval["precision"], its catIds,
# the per-image matching as an untrimmed coco_bootstrap.Matching, or None where the backend keeps
# none, and eval["recall"]). Called as (gt, detections, image_ids, keep_matching); masks and keypoints
# (stats/coco_shapes.py) add iou_type="segm" / "keypoints", and their stats are that iouType's.
Backend = Callable[..., tuple[np.ndarray, np.ndarray, list[Any], Any, np.ndarray]]
EVALUATORS: Registry[Backend] = Registry("COCO evaluator")
AUTO = "auto"  # faster-coco-eval where it is installed, else pycocotools (resolved_backend)


def resolved_backend(name: str) -> str:
    """The evaluator a backend setting names: ``auto`` is faster-coco-eval where it is installed
    (its C++ evaluate and accumulate give pycocotools' stats: equal on every fixture the tests
    score, docs/tasks/coco.md), else pycocotools; any other name is itself."""
    if name != AUTO:
        return name
    import importlib.util

    return "faster_coco_eval" if importlib.util.find_spec("faster_coco_eval") else "pycocotools"


class ClassAP(TypedDict):
    """One category of ``per_class``: AP (IoU .50:.95) and AP50, None where pycocotools says -1."""

    name: str
    AP: float | None
    AP50: float | None
    num_gt: int


PerClassAP = dict[str, ClassAP]  # by category id (a string, as JSON keys are)


class Accumulated(TypedDict):
    """What the analysis reads of the backend's accumulation (``analysis=True``)."""

    precision: np.ndarray  # eval["precision"] (T, R, K, A, M)
    recall: np.ndarray  # eval["recall"]
    cat_ids: list[Any]
    matching: Any  # the untrimmed coco_bootstrap.Matching


class _Scored(TypedDict):
    backend: str
    stats: dict[str, float]  # by COCO_STAT_NAMES
    per_class: PerClassAP
    num_detections: int
    num_images: int
    summary: list[str]


class ScoredBoxes(_Scored, total=False):
    """:func:`evaluate_bbox`'s result; ``matching`` and ``accumulated`` only where asked for."""

    matching: Any  # the trimmed coco_bootstrap.Matching
    accumulated: Accumulated


def _plainly_valid(detections: list[dict[str, Any]], known: set[Any], categories: set[Any]) -> bool:
    """Every detection well formed, checked with set and array operations (the common case, fast).

    False only means "look closer": ``_raise_first_bad_detection`` then names the first offender.
    """
    if not all(type(det) is dict and det.keys() >= _DETECTION_KEY_SET for det in detections):
        return False
    if not all(type(det["bbox"]) in (list, tuple) and len(det["bbox"]) == 4 for det in detections):
        return False
    if not {type(v) for det in detections for v in det["bbox"]} <= _NUMBER_TYPES:
        return False
    if not {type(det["score"]) for det in detections} <= _NUMBER_TYPES:
        return False
    values = np.array([[*det["bbox"], det["score"]] for det in detections], dtype=np.float64)
    return (
        bool(np.isfinite(values).all())
        and {det["image_id"] for det in detections} <= known
        and {det["category_id"] for det in detections} <= categories
    )


def _raise_first_bad_detection(
    detections: list[dict[str, Any]], known: set[Any], categories: set[Any]
) -> None:
    for index, det in enumerate(detections):
        absent = [key for key in _DETECTION_KEYS if not isinstance(det, dict) or key not in det]
        if absent:
            raise DataError(
                f"detection #{index} lacks {absent[0]!r}; COCO results need {', '.join(_DETECTION_KEYS)}"
            )
        if not finite_numbers(det["bbox"], 4) or not finite_numbers([det["score"]], 1):
            raise DataError(
                f"detection #{index} has bbox {det['bbox']!r} / score {det['score']!r}; COCO results need "
                "[x, y, width, height] and a score, all finite numbers"
            )
        if det["image_id"] not in known:
            raise DataError(
                f"detection #{index} is on image_id {det['image_id']}, which is not an image of the ground "
                "truth; score detections against the annotation file they were made for"
            )
        if det["category_id"] not in categories:
            raise DataError(
                f"detection #{index} has category_id {det['category_id']}, which is not a ground-truth "
                "category; map model classes to the annotation file's category ids"
            )


def evaluate_bbox(
    gt: dict[str, Any],
    detections: list[dict[str, Any]] | HeldRows,
    backend: str = "pycocotools",
    image_ids: list[int] | None = None,
    keep_matching: bool = False,
    analysis: bool = False,
) -> ScoredBoxes:
    """COCO bbox stats, per-class AP and the summary text; ``image_ids`` scores only those images.

    ``detections``: COCO result dicts, or a run's store of them (:class:`HeldRows`), whose dicts
    pycocotools is then given a chunk of images at a time (``stats/coco_chunks.py``).

    ``keep_matching``: also return ``matching`` (a :class:`~evalharness.stats.coco_bootstrap.Matching`)
    for the bootstrap; a backend that keeps no per-image matching has it made by pycocotools'
    ``evaluate()`` (once). ``analysis``: also return ``accumulated`` (the backend's
    ``eval["precision"]``, ``eval["recall"]``, catIds and the untrimmed matching) for
    :mod:`evalharness.stats.detection_analysis`.

    ``num_detections`` counts the detections on the scored images. ``per_class`` covers every
    ground-truth category: AP/AP50 at area=all, maxDets=100, None where the scored images hold no
    non-crowd box of it (pycocotools' -1), and ``num_gt`` counts those non-crowd boxes.
    """
    backend = resolved_backend(backend)
    run = EVALUATORS.get(backend)
    check_annotations(gt)
    if isinstance(detections, list) or backend != "pycocotools":  # another backend scores one list
        given = detections if isinstance(detections, list) else list(detections.rows())
        ids, subset = evaluated_subset(gt, given, image_ids)
        dets: list[dict[str, Any]] | HeldRows = subset
        count = len(subset)
    else:  # a run's store: its result dicts made a chunk of images at a time, never all at once
        ids, count = _checked_rows(gt, detections, image_ids)
        dets = detections
    stats, precision, cat_ids, matching, recall = run(gt, dets, ids, keep_matching or analysis)
    if (keep_matching or analysis) and matching is None:
        matching = _pycocotools(gt, dets, ids, evaluate_only=True)
    scored: ScoredBoxes = {
        "backend": backend,
        "stats": {name: float(value) for name, value in zip(COCO_STAT_NAMES, stats, strict=True)},
        "per_class": _per_class(gt, ids, precision, cat_ids),
        "num_detections": count,
        "num_images": len(ids),
        "summary": format_summary(stats),
    }
    if keep_matching:
        scored["matching"] = matching.trimmed()
    if analysis:
        scored["accumulated"] = {
            "precision": precision, "recall": recall, "cat_ids": cat_ids, "matching": matching
        }  # fmt: skip
    return scored


def format_summary(stats: Any, rows: tuple[tuple[str, str, str, int], ...] = _SUMMARY_ROWS) -> list[str]:
    """The lines COCOeval.summarize() prints, character for character, for any backend: the 12 of
    ``bbox`` / ``segm``, or those of the ``rows`` given (``keypoints``' 10)."""
    lines = []
    for (kind, iou, area, max_dets), value in zip(rows, stats, strict=True):
        title = "Average Precision" if kind == "AP" else "Average Recall"
        where = f"IoU={iou:<9} | area={area:>6s} | maxDets={max_dets:>3d}"
        lines.append(f" {title:<18} ({kind}) @[ {where} ] = {value:0.3f}")
    return lines


def _per_class(
    gt: dict[str, Any], image_ids: list[Any], precision: np.ndarray, cat_ids: list[Any]
) -> PerClassAP:
    """AP (IoU .50:.95) and AP50 per category from eval["precision"][T, R, K, area=all, maxDets=100]."""
    chosen = set(image_ids)
    num_gt = Counter(
        ann["category_id"] for ann in gt["annotations"] if ann["image_id"] in chosen and not ann["iscrowd"]
    )
    names = {category["id"]: category["name"] for category in gt["categories"]}
    out: PerClassAP = {}
    for k, cat_id in enumerate(cat_ids):
        cat_id = int(cat_id)
        curves = precision[:, :, k, 0, -1]
        out[str(cat_id)] = {
            "name": names[cat_id],
            "AP": _mean_valid(curves),
            "AP50": _mean_valid(curves[0]),
            "num_gt": num_gt[cat_id],
        }
    return out


def _mean_valid(values: np.ndarray) -> float | None:
    """Mean over entries > -1, as summarize() averages; None when pycocotools would say -1."""
    valid = values[values > -1]
    return float(np.mean(valid)) if valid.size else None


def _score(
    coco_cls: type,
    make_eval: Callable[..., Any],
    gt: dict[str, Any],
    detections: list[dict[str, Any]] | ImageRows,
    image_ids: list[Any],
    evaluate_only: bool = False,
    keep_matching: bool = False,
    chunked: bool = False,
) -> Any:  # a Backend's tuple; with evaluate_only the untrimmed Matching alone
    """evaluate/accumulate/summarize with a COCO class pair, stdout captured, zero detections allowed.

    ``keep_matching``: also return the per-image matching (pycocotools' evaluator only);
    ``evaluate_only``: stop after ``evaluate()`` and return only that matching, made for the area
    range "all" alone (all a Matching holds: a quarter of pycocotools' per-image passes).
    ``chunked``: ``make_eval`` is given a :class:`~evalharness.stats.coco_chunks.ChunkResults` of
    the ground truth and detections instead of their COCO objects, and evaluates a chunk of images
    at a time (pycocotools' evaluator: memory per chunk, not per run); else copies of them all."""
    from evalharness.stats.coco_bootstrap import Matching
    from evalharness.stats.coco_chunks import ChunkResults, result_set

    with contextlib.redirect_stdout(io.StringIO()):
        if chunked:  # each chunk's ground truth and result set made (copies) when it is evaluated
            chunks = ChunkResults(coco_cls, gt, detections)
            evaluator = make_eval(chunks.frame(), chunks)
        else:
            coco_gt = coco_cls()
            coco_gt.dataset = {**gt, "annotations": [dict(ann) for ann in gt["annotations"]]}  # written into
            coco_gt.createIndex()
            given = detections if isinstance(detections, list) else detections.rows_of(list(image_ids))
            evaluator = make_eval(coco_gt, result_set(coco_cls, coco_gt, given))
        evaluator.params.imgIds = list(image_ids)
        if evaluate_only:  # area range "all" comes first (coco_bootstrap.AREA_ALL)
            evaluator.params.areaRng = evaluator.params.areaRng[:1]
            evaluator.params.areaRngLbl = evaluator.params.areaRngLbl[:1]
        evaluator.evaluate()
        if evaluate_only:
            return Matching.from_evaluator(evaluator, trim=False)
        evaluator.accumulate()
        evaluator.summarize()
    stats = np.asarray(evaluator.stats, dtype=float)[: len(COCO_STAT_NAMES)]
    matching = Matching.from_evaluator(evaluator, trim=False) if keep_matching else None
    precision, recall = np.asarray(evaluator.eval["precision"]), np.asarray(evaluator.eval["recall"])
    cat_ids = list(evaluator.params.catIds)
    del evaluator  # its arrays freed (accumulate()'s scores, the chunks' matching), then handed back
    release_free_heap()
    return stats, precision, cat_ids, matching, recall


@EVALUATORS.register("pycocotools")
def _pycocotools(
    gt: dict[str, Any],
    detections: list[dict[str, Any]] | ImageRows,
    image_ids: list[Any],
    keep_matching: bool = False,
    evaluate_only: bool = False,
    iou_type: str = "bbox",
) -> Any:  # as _score
    from pycocotools.coco import COCO

    from evalharness.stats.coco_chunks import ChunkedCOCOeval  # pycocotools' COCOeval a chunk at a time

    make_eval = lambda g, d: ChunkedCOCOeval(g, d, iou_type)  # noqa: E731
    return _score(COCO, make_eval, gt, detections, image_ids, evaluate_only, keep_matching, chunked=True)


@EVALUATORS.register("faster_coco_eval")
def _faster_coco_eval(
    gt: dict[str, Any],
    detections: list[dict[str, Any]],
    image_ids: list[Any],
    keep_matching: bool = False,
    iou_type: str = "bbox",
) -> Any:  # as _score
    """Matching is not kept (faster-coco-eval's evalImgs differ): the caller asks pycocotools."""
    COCO, COCOeval_faster = faster_coco_eval_classes()  # noqa: N806  # the package's class names

    def make_eval(coco_gt: Any, coco_dt: Any) -> Any:
        return COCOeval_faster(coco_gt, coco_dt, iou_type, print_function=lambda *args, **kwargs: None)

    return _score(COCO, make_eval, gt, detections, image_ids)


def faster_coco_eval_classes() -> tuple[type, Any]:
    """faster-coco-eval's (COCO, COCOeval_faster), or a ConfigError saying how to install it."""
    try:
        from faster_coco_eval import COCO, COCOeval_faster
    except ImportError:
        raise ConfigError(
            "COCO metric backend 'faster_coco_eval' needs the faster-coco-eval package; "
            "pip install 'evalharness[faster]' or use backend 'pycocotools'"
        ) from None
    return COCO, COCOeval_faster


def _checked_rows(gt: dict[str, Any], rows: HeldRows, image_ids: list[int] | None) -> tuple[list[Any], int]:
    """(sorted image ids to score, the detections on them) of a store, checked as
    :func:`evaluated_subset` checks a list, a chunk of images at a time; a problem is named as in
    the list of every row (made only then)."""
    from evalharness.stats.coco_chunks import CHUNK_IMAGES

    ids, _ = evaluated_subset(gt, [], image_ids)
    known = {image["id"] for image in gt["images"]}
    categories = {category["id"] for category in gt["categories"]}
    held = rows.image_ids()
    chosen = set(ids)
    if not held <= known:
        evaluated_subset(gt, list(rows.rows()), image_ids)  # raises, naming the first
    count, order = 0, sorted(held)
    for first in range(0, len(order), CHUNK_IMAGES):
        chunk = rows.rows_of(order[first : first + CHUNK_IMAGES])
        if not _plainly_valid(chunk, known, categories):
            evaluated_subset(gt, list(rows.rows()), image_ids)  # raises, naming the first
        count += sum(det["image_id"] in chosen for det in chunk)
    return ids, count


def evaluated_subset(
    gt: dict[str, Any], detections: list[dict[str, Any]], image_ids: list[int] | None = None
) -> tuple[list[Any], list[Any]]:
    """(sorted image ids to score, the detections on them), after checking detections against ``gt``.

    A detection on an image or category the ground truth lacks is an error rather than silently
    dropped: it means the results were made for another annotation file or with a shifted label map.
    """
    known = {image["id"] for image in gt["images"]}
    categories = {category["id"] for category in gt["categories"]}
    if not _plainly_valid(detections, known, categories):
        _raise_first_bad_detection(detections, known, categories)
    if image_ids is None:
        ids = sorted(known)
    else:
        ids = sorted(set(image_ids))
        if not ids:
            raise DataError("image_ids is empty; pass None to score every ground-truth image, or some ids")
        unknown = [image_id for image_id in ids if image_id not in known]
        if unknown:
            raise DataError(
                f"image id {unknown[0]} of image_ids is not in the ground truth; pass ids of its images"
            )
    chosen = set(ids)
    if image_ids is None or {det["image_id"] for det in detections} <= chosen:
        return ids, detections
    return ids, [det for det in detections if det["image_id"] in chosen]
