"""A seg run's masks reduced, image by image as they come, to what pycocotools' ``segm`` scoring
reads of them, so that a run holds no mask until the end.

pycocotools reads a detection's mask twice: ``loadRes`` takes its area (``maskUtils.area``), and
``computeIoU`` its IoU with each ground-truth mask of its image and category (``maskUtils.iou``,
crowds by their own rule), for the image's detections of that category sorted by score (stable) and
cut at ``maxDets[-1]``. An IoU depends on its two masks alone, so :class:`MaskOverlaps` computes
each detection's row of IoUs when its image's record is added (the ground truth converted as
``COCO.annToRLE`` converts it, then dropped) and keeps, per image, the categories, scores and areas
and those small matrices: ~1 KB of RLE text a mask becomes a few float64s. At the end
:func:`score_overlaps` builds the result set ``loadRes`` would (areas, crowd flags), a chunk of
images at a time (``stats/coco_chunks.py``), and an evaluator whose ``computeIoU`` returns the kept
rows in pycocotools' order, so ``evaluate()``,
``accumulate()`` and the per-image matching are pycocotools' own, bit for bit
(``tests/unit/stats/test_coco_mask_overlaps.py`` compares them with pycocotools on RLEs).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO

from evalharness.core.errors import DataError
from evalharness.core.growing_rows import GrowingRows, ImageSpans
from evalharness.data.annotation_table import rows_by_image, rows_of
from evalharness.stats.coco_chunks import ChunkedCOCOeval, ChunkResults
from evalharness.stats.coco_eval import _score
from evalharness.stats.coco_match import NOTHING

MAX_DETECTIONS = 100  # pycocotools' segm params.maxDets[-1]: computeIoU's cut
# a detection as kept: its category and score as given, its mask's area (a pixel count: exact in uint32)
DETECTION = np.dtype([("category", np.float64), ("area", np.uint32), ("score", np.float64)])
NONZERO = np.dtype([("at", np.int32), ("iou", np.float64)])  # an IoU matrix's value, its flat index


# one image's IoU blocks by category: (its position among the added images, its rows' first and
# end position, the block's row)
_ImageBlocks = dict[int, list[tuple[int, int, int, list[int]]]]


class _ImageSizes:
    """What ``COCO.annToRLE`` reads of a COCO object: ``imgs`` by id (their height and width)."""

    def __init__(self, images: dict[Any, dict[str, Any]]) -> None:
        self.imgs = images


class MaskOverlaps:
    """Per added image: its detections' categories, scores and mask areas, and per category the
    IoUs of its detections (rows, in the order added) with the image's ground truth of that
    category (columns, in the annotation file's order, as pycocotools indexes them)."""

    def __init__(self, gt: dict[str, Any]) -> None:
        self._sizes = _ImageSizes({image["id"]: image for image in gt["images"]})
        # each image's annotations' row numbers, the dicts made as its record is added (a run's of
        # them at once were ~0.3 KB an annotation, held to the end: data/annotation_table.py)
        self._annotations = gt["annotations"]
        self._truth = rows_by_image(self._annotations)
        # the numbers of every image in a few large arrays (core/growing_rows.py), none per image
        self._rows = GrowingRows(None, DETECTION)  # per detection: category, area, score
        self._images = ImageSpans()  # per added image: its id, its rows' positions
        # the IoU matrices' values other than 0 (~4 in 5 are 0), each with its place in its matrix
        self._nonzero = GrowingRows(None, NONZERO)
        # per (added image, category) with ground truth: the image's index, the category, where its
        # matrix's values start and how many, its rows (the image's detections of it) and columns
        self._blocks = GrowingRows(6, np.int64)
        # the blocks and their images' positions (ascending: added in order), made when first read
        # after an add; and the last image's blocks read (pycocotools asks an image's categories in turn)
        self._blocks_of: tuple[np.ndarray, np.ndarray] | None = None
        self._last: tuple[int, _ImageBlocks] | None = None

    def __len__(self) -> int:
        return len(self._rows)

    def add(
        self, image_id: Any, categories: list[Any], scores: list[Any], masks: list[dict[str, Any]]
    ) -> None:
        """One image's detections: category ids, scores and compressed RLE dicts (``size``, ``counts``)."""
        n = len(masks)
        image = len(self._images)
        start = 0
        if n:
            rows = np.empty(n, dtype=DETECTION)
            rows["category"], rows["score"], rows["area"] = categories, scores, mask_utils.area(masks)
            start = self._rows.extend(rows)
        self._images.add(image_id, start, start + n)
        truth_rows = self._truth.get(image_id, ()) if image_id in self._sizes.imgs else ()
        truth = rows_of(self._annotations, truth_rows)
        for cat in sorted(set(categories)):
            gt = [ann for ann in truth if ann["category_id"] == cat]
            if not gt:
                continue
            mine = [mask for mask, c in zip(masks, categories, strict=True) if c == cat]
            g = [COCO.annToRLE(self._sizes, ann) for ann in gt]
            ious = np.asarray(mask_utils.iou(mine, g, [int(ann["iscrowd"]) for ann in gt]), dtype=np.float64)
            values = np.empty(np.count_nonzero(ious), dtype=NONZERO)
            values["at"] = np.flatnonzero(ious)
            values["iou"] = ious.ravel()[values["at"]]
            at = self._nonzero.extend(values)
            self._blocks.extend([(image, int(cat), at, len(values), len(mine), len(gt))])
        self._blocks_of = self._last = None

    def rows_of(self, image_ids: list[Any]) -> list[dict[str, Any]]:
        """The result set ``loadRes`` makes of the masks of ``image_ids`` (ids 1, 2, ... in the order
        added, the mask's area, no crowd), without the masks: made a chunk of images at a time
        (``stats/coco_chunks.py``), never for the whole run."""
        out: list[dict[str, Any]] = []
        for wanted in image_ids:
            image_id = int(wanted)
            for _, start, end in self._images.of(image_id):
                for cat, area, score in self._rows.view(start, end).tolist():
                    out.append(
                        {"image_id": image_id, "category_id": int(cat), "score": score, "area": float(area),
                         "id": len(out) + 1, "iscrowd": 0}
                    )  # fmt: skip
        return out

    def _image_blocks(self, image_id: int) -> _ImageBlocks:
        """``image_id``'s IoU blocks by category, in the order added (arrays searched, not a dict
        entry per block: those were ~150 bytes a block, held through the mask scoring)."""
        if self._last is not None and self._last[0] == image_id:
            return self._last[1]
        if self._blocks_of is None:
            blocks = self._blocks.all()
            self._blocks_of = (blocks, np.ascontiguousarray(blocks[:, 0]))
        blocks, images = self._blocks_of
        found: _ImageBlocks = defaultdict(list)
        for n, first, end in self._images.of(image_id):
            low, high = np.searchsorted(images, n, "left"), np.searchsorted(images, n, "right")
            for block in blocks[low:high].tolist():
                found[block[1]].append((n, first, end, block))
        self._last = (image_id, found)
        return found

    def ious(self, image_id: Any, cat: Any) -> Any:
        """``computeIoU``'s value of one (image, category) holding both detections and ground
        truth: the rows of the detections sorted by score (stable, over the order added), cut at
        ``maxDets[-1]``; pycocotools' ``[]`` where absent. Made when the scoring's chunk asks (a
        whole run's of them at once was a copy of every IoU, held through the mask scoring)."""
        scores: list[float] = []
        matrices: list[np.ndarray] = []
        for _, first, end, block in self._image_blocks(int(image_id)).get(int(cat), ()):
            _, _, start, count, rows_of_cat, columns = block
            rows = self._rows.view(first, end)
            scores.extend(rows["score"][rows["category"] == cat].tolist())
            matrix = np.zeros(rows_of_cat * columns, dtype=np.float64)
            values = self._nonzero.view(start, start + count)
            matrix[values["at"]] = values["iou"]
            matrices.append(matrix.reshape(rows_of_cat, columns))
        if not matrices:
            return NOTHING
        order = np.argsort([-s for s in scores], kind="mergesort")[:MAX_DETECTIONS]
        return np.concatenate(matrices)[order]


class _GivenResultsCOCO(COCO):  # type: ignore[misc]  # pycocotools ships no types
    """A COCO whose ``loadRes`` takes result dicts already as ``loadRes`` leaves them (ids, areas)."""

    def loadRes(self, anns: list[dict[str, Any]]) -> COCO:  # noqa: N802  # pycocotools' name
        known = {image["id"] for image in self.dataset["images"]}
        unknown = next((ann["image_id"] for ann in anns if ann["image_id"] not in known), None)
        if unknown is not None:
            raise DataError(f"a mask is on image_id {unknown}, which is not an image of the ground truth")
        res = COCO()
        res.dataset = {
            "info": copy.deepcopy(self.dataset.get("info", {})),
            "images": list(self.dataset["images"]),
            "categories": copy.deepcopy(self.dataset["categories"]),
            "annotations": anns,
        }
        res.createIndex()
        return res


class _GivenIouCOCOeval(ChunkedCOCOeval):
    """pycocotools' segm evaluation with each (image, category)'s IoUs given, the masks absent."""

    def __init__(self, coco_gt: COCO, results: ChunkResults, overlaps: MaskOverlaps) -> None:
        super().__init__(coco_gt, results, "segm")
        self._overlaps = overlaps

    def _prepare(self) -> None:
        # pycocotools' segm _prepare also converts every mask to RLE (_toMask) for computeIoU; the
        # IoUs are given, so it runs as for boxes (the same ignore flags, the same indexes)
        self.params.iouType = "bbox"
        try:
            super()._prepare()
        finally:
            self.params.iouType = "segm"

    def computeIoU(self, imgId: Any, catId: Any) -> Any:  # noqa: N802, N803  # pycocotools' names
        return self._overlaps.ious(imgId, catId)


def score_overlaps(
    gt: dict[str, Any],
    overlaps: MaskOverlaps,
    image_ids: list[Any],
    keep_matching: bool = False,
    evaluate_only: bool = False,
) -> Any:  # as coco_eval's backends
    """pycocotools' ``segm`` scoring of the masks ``overlaps`` was given (see the module docstring)."""
    make_eval = lambda g, d: _GivenIouCOCOeval(g, d, overlaps)  # noqa: E731
    return _score(
        _GivenResultsCOCO, make_eval, gt, overlaps, image_ids, evaluate_only, keep_matching, chunked=True
    )
