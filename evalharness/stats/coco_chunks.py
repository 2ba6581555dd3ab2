"""pycocotools' ``evaluate()`` and ``accumulate()`` a chunk of images at a time, so that a COCO
scoring's memory follows a chunk, not the run, with pycocotools' numbers bit for bit.

pycocotools keeps, for a whole run, ``ious`` (a matrix per image and category), ``evalImgs`` (a dict
of numpy arrays per image x category x area range: ~40 MiB per 1,000 COCO images) and the result
set ``loadRes`` makes (a copy of every detection, a polygon added to each box, an index of them).
:class:`ChunkedCOCOeval` runs :class:`~evalharness.stats.coco_match.MatchingCOCOeval`'s
``evaluate()`` on :data:`CHUNK_IMAGES` images at a time, against a result set of that chunk's
detections alone and the ground truth of its images (:class:`ChunkResults`: copies of that
chunk's annotations, ``loadRes`` of its detections), and reduces the
chunk's ``evalImgs`` at once to what ``accumulate()`` and the bootstrap's
:class:`~evalharness.stats.coco_bootstrap.Matching` read of it
(:class:`~evalharness.stats.coco_reduced.Reduced`: per category and area range, each kept
detection's score, image and matched / ignored flags per IoU threshold, and each image's
non-ignored ground-truth count, held compactly). The chunk's ``ious``, ``evalImgs`` and result set
are then dropped.

Exactness: an image's matching depends on that image alone, so a chunk's ``evalImgs`` are the
whole run's entries for its images; the chunks are taken in pycocotools' (sorted) image order and
each image's detections kept in ``evaluateImg``'s order, so a category's detections concatenated
are the ones ``accumulate()`` concatenates, in its order, and its stable sort by score orders them
alike (``tests/unit/stats/test_coco_chunks.py`` compares with pycocotools' COCOeval on random
cases, a chunk of one image included). A chunk's result set numbers its detections from 1 (its
``loadRes``): the ids are only compared with 0 by the matching and are not kept.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from evalharness.core.spill_file import SpillFile
from evalharness.data.annotation_table import rows_by_image, rows_of
from evalharness.stats.coco_match import MatchingCOCOeval
from evalharness.stats.coco_reduced import Reduced, reduce_eval_imgs

# 25 images a chunk: a chunk's evalImgs, ious, ground truth and result sets are made and freed per
# chunk, and the allocator's heap keeps the room of the largest (what stays, the reduced matching, is
# interleaved with them). The process's peak RSS of a 2,500-image seg run (docs/benchmarks.md) by
# chunk size, the matching in Reduced's first form: 1,000 images 366.9 MiB, 250: 289.7, 100: 272.2,
# 50: 270.2; with the compact one (stats/coco_reduced.py) the box scoring's RSS grew by 20.0 MiB
# over evaluate() at 100 images, 12.6 at 50, 9.1 at 25 (the whole run's peak 238-244 -> 229 MiB);
# its CPU time the same at 100, 50 and 25 (per-chunk views and pycocotools' _prepare: ms each).
CHUNK_IMAGES = 25


def result_set(coco_cls: type, coco_gt: Any, detections: list[dict[str, Any]], copies: bool = True) -> Any:
    """``loadRes`` of copies of the detections (it writes ids and areas into them: the callers' stay
    intact; ``copies=False``: dicts of the caller's own, written into); with none, the empty result
    set pycocotools' loadRes([]) fails to make (IndexError)."""
    if detections:
        return coco_gt.loadRes([dict(det) for det in detections] if copies else detections)
    coco_dt = coco_cls()
    coco_dt.dataset = {
        "images": list(coco_gt.dataset["images"]),
        "categories": copy.deepcopy(coco_gt.dataset["categories"]),
        "annotations": [],
    }
    coco_dt.createIndex()
    return coco_dt


class ImageRows(Protocol):
    """Detections held per image (a run's store) that give COCO result dicts an image at a time,
    so that a whole run's dicts are never made at once: new dicts on each call (the tools may
    write into them)."""

    def __len__(self) -> int: ...

    def rows_of(self, image_ids: list[Any]) -> list[dict[str, Any]]:
        """The result dicts of the detections on ``image_ids``, each image's in the order added."""
        ...


class HeldRows(ImageRows, Protocol):
    """:class:`ImageRows` that also list their images and give every row, in the order added (what
    :func:`~evalharness.stats.coco_eval.evaluate_bbox` checks and names a bad detection by)."""

    def image_ids(self) -> set[Any]:
        """The images holding detections."""
        ...

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every result dict, in the order added."""
        ...


class _GroupedRows:
    """A list of result dicts as :class:`ImageRows`: grouped by image (references), copied when
    asked for."""

    def __init__(self, detections: list[dict[str, Any]]) -> None:
        self._by_image: dict[Any, list[dict[str, Any]]] = defaultdict(list)
        for det in detections:  # each image's detections in the order given, as loadRes indexes them
            self._by_image[det["image_id"]].append(det)
        self._count = len(detections)

    def __len__(self) -> int:
        return self._count

    def rows_of(self, image_ids: list[Any]) -> list[dict[str, Any]]:
        return [dict(det) for i in image_ids for det in self._by_image.get(i, ())]


def image_rows(detections: list[dict[str, Any]] | ImageRows) -> ImageRows:
    """``detections`` as :class:`ImageRows` (a list grouped by image)."""
    return _GroupedRows(detections) if isinstance(detections, list) else detections


class ChunkResults:
    """The ground truth and the detections made into pycocotools' COCO objects a chunk of images at
    a time: views holding the chunk's images, with copies of their annotations (pycocotools writes
    ignore flags, and for masks RLEs, into them) and ``loadRes`` of their detections' result dicts
    (fresh ones: it writes ids, areas and, for boxes, a polygon into them)."""

    def __init__(
        self, coco_cls: type, gt: dict[str, Any], detections: list[dict[str, Any]] | ImageRows
    ) -> None:
        self._coco_cls = coco_cls
        self._images = {image["id"]: image for image in gt["images"]}
        self._categories = gt["categories"]
        self._info = gt.get("info", {})
        self._annotations = gt["annotations"]  # a list of dicts or a table (data/annotation_table.py)
        self._truth = rows_by_image(self._annotations)  # each image's in the file's order, as pycocotools'
        self._rows = image_rows(detections)

    def _view(self, image_ids: list[Any], annotations: list[dict[str, Any]] | None = None) -> Any:
        view = self._coco_cls()
        view.dataset = {
            "info": self._info,
            "images": [self._images[i] for i in image_ids if i in self._images],  # as getAnnIds skips
            "categories": self._categories,
        }
        if annotations is not None:
            view.dataset["annotations"] = annotations
        view.createIndex()
        return view

    def frame(self) -> Any:
        """Every image and category, no annotation: what COCOeval's constructor reads."""
        return self._view(list(self._images))

    def truth_of(self, image_ids: list[Any]) -> Any:
        """The ground truth of ``image_ids`` (copies of their annotations)."""
        rows = [row for i in image_ids for row in self._truth.get(i, ())]
        return self._view(image_ids, rows_of(self._annotations, rows))

    def of(self, image_ids: list[Any]) -> Any:
        """The result set of the detections on ``image_ids``, pycocotools' ``loadRes`` of them."""
        return result_set(self._coco_cls, self._view(image_ids), self._rows.rows_of(image_ids), copies=False)


class ChunkedCOCOeval(MatchingCOCOeval):
    """MatchingCOCOeval evaluated a chunk of images at a time, keeping :attr:`reduced` instead of
    ``ious`` and ``evalImgs`` (see the module docstring)."""

    def __init__(self, coco_gt: Any, results: ChunkResults, iou_type: str) -> None:
        super().__init__(coco_gt, None, iou_type)
        self._frame = coco_gt  # every image and category; each chunk's own ground truth while evaluated
        self._results = results
        self.reduced: dict[tuple[int, int], Reduced] = {}

    def evaluate(self) -> None:
        """pycocotools' ``evaluate()`` chunk by chunk; ``evalImgs`` and ``ious`` are None after it."""
        p = self.params
        every = list(np.unique(p.imgIds))
        n_cat = len(np.unique(p.catIds)) if p.useCats else 1
        self.reduced = {}
        spill = SpillFile()  # one file for every column of this scoring (opened if one spills)
        try:
            for first in range(0, len(every), CHUNK_IMAGES):
                chunk = every[first : first + CHUNK_IMAGES]
                p.imgIds = chunk
                self.cocoGt, self.cocoDt = self._results.truth_of(chunk), self._results.of(chunk)
                super().evaluate()
                n_thr = len(p.iouThrs)
                reduce_eval_imgs(self.evalImgs, n_cat, len(p.areaRng), first, n_thr, self.reduced, spill)
                # dropped: the chunk's per-image structures (None: a reader finds nothing, not a part)
                self.evalImgs = self.ious = None  # type: ignore[assignment]
                self.cocoDt = self._gts = self._dts = None
        finally:
            p.imgIds, self.cocoGt = every, self._frame
        self._paramsEval = copy.deepcopy(p)

    def _gathered(self, k0: int, a0: int, i_list: list[int]) -> tuple[Any, Any] | None:
        """MatchingCOCOeval's gathering for accumulate(), read from :attr:`reduced` (the positions
        ``i_list`` among the evaluated images, as pycocotools reads evalImgs)."""
        block = self.reduced.get((k0, a0))
        if block is None:
            return None
        every = len(i_list) == len(self._paramsEval.imgIds) and i_list == list(range(len(i_list)))
        chosen = None if every else np.asarray(i_list, dtype=np.int64)
        npig = np.int64(block.gt_count(chosen))
        if npig == 0:
            return None

        def detections(max_det: int) -> tuple[Any, Any, Any]:
            scores, _, matched, ignored = block.detections(chosen, max_det)
            return scores, matched, ignored

        return npig, detections
