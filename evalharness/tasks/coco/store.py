"""How a COCO run holds its detections (and a pose run its keypoints) until they are scored
(see :class:`ImageRowStore`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from evalharness.core.growing_rows import GrowingRows, ImageSpans

COLUMNS = 6  # a box: category_id, score, x, y, w, h


class ImageRowStore:
    """Rows of numbers per added image held compactly: every image's rows in large float64 arrays
    (core/growing_rows.py) and each image's id and where its rows are in others, not a dict per
    detection nor an array per image. Rows become COCO result dicts (:meth:`_dicts`) only when
    scored, a chunk of images at a time (:meth:`rows_of`), or streamed to a file. float64 keeps
    every value exactly as recorded. The row width is the first non-empty image's."""

    def __init__(self) -> None:
        self._rows: GrowingRows | None = None  # made at the first rows: their width
        self._width = 0
        self._images = ImageSpans()  # per added image: its id, its rows' positions

    def _add_rows(self, image_id: int, rows: Any) -> None:
        """One image's rows (n x the width), in output order."""
        start = end = 0
        if len(rows):
            given = np.asarray(rows, dtype=np.float64)
            if self._rows is None:
                self._rows, self._width = GrowingRows(given.shape[1]), given.shape[1]
            if given.shape[1] != self._width:
                raise ValueError(f"rows of {given.shape[1]} values, {self._width} before")
            start = self._rows.extend(given)
            end = start + len(given)
        self._images.add(image_id, start, end)

    def __len__(self) -> int:
        return 0 if self._rows is None else len(self._rows)

    def _view(self, start: int, end: int) -> np.ndarray:
        assert self._rows is not None, "rows are read only where some were added"
        return self._rows.view(start, end)

    def _dicts(self, image_id: int, rows: np.ndarray) -> Iterator[dict[str, Any]]:
        """An image's rows as COCO result dicts."""
        raise NotImplementedError

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(image_id, its rows) per added image with rows, in the order added."""
        for image_id, start, end in self._images.added():
            if end > start:
                yield image_id, self._view(start, end)

    def rows(self) -> Iterator[dict[str, Any]]:
        """COCO result dicts in the order they were added."""
        for image_id, rows in self.blocks():
            yield from self._dicts(image_id, rows)

    def image_ids(self) -> set[int]:
        """The images holding rows."""
        return {image_id for image_id, start, end in self._images.added() if end > start}

    def rows_of(self, image_ids: list[Any]) -> list[dict[str, Any]]:
        """The result dicts of ``image_ids`` (new ones), each image's in the order added: the
        scoring makes them a chunk of images at a time (``stats/coco_chunks.py``), never all."""
        return [
            row
            for i in image_ids
            for _, start, end in self._images.of(int(i))
            if end > start
            for row in self._dicts(int(i), self._view(start, end))
        ]


class DetectionStore(ImageRowStore):
    """A run's boxes, rows of ``[category_id, score, x, y, w, h]``.

    A 5,000-image run at ~100 detections per image is 500k boxes: as Python dicts that is ~250 MB,
    as rows ~24 MB.
    """

    def add(self, image_id: int, rows: list[Any]) -> None:
        """One image's ``[category_id, score, x, y, w, h]`` rows, in output order."""
        self._add_rows(image_id, np.asarray(rows, dtype=np.float64).reshape(-1, COLUMNS))

    def _dicts(self, image_id: int, rows: np.ndarray) -> Iterator[dict[str, Any]]:
        return _dicts(image_id, rows)


class KeypointStore(ImageRowStore):
    """A pose run's detections with their keypoints, rows of ``[category_id, score, x1, y1, v1,
    ...]``: a result dict per detection holding a list of 51 floats was ~1.9 KB, a row is 424 bytes
    (a 1,000-image pose run of val25's images grew ~60 KB an image before)."""

    def add(self, image_id: int, detections: list[Any], keypoints: list[list[Any]]) -> None:
        """One image's detections (``[category_id, score, ...]``) and each one's keypoints, of one
        length (:func:`~evalharness.tasks.coco.shape_store.check_read_back`); a length other than
        earlier images' is a ValueError saying so (pycocotools' OKS would score other points than
        the ground truth's)."""
        rows = [[det[0], det[1], *points] for det, points in zip(detections, keypoints, strict=True)]
        try:
            self._add_rows(image_id, rows)
        except ValueError:
            raise ValueError(keypoint_width_problem(len(keypoints[0]), self._width - 2)) from None

    def _dicts(self, image_id: int, rows: np.ndarray) -> Iterator[dict[str, Any]]:
        for cat, score, *points in rows.tolist():
            yield {"image_id": image_id, "category_id": int(cat), "score": score, "keypoints": points}


def keypoint_width_problem(given: int, earlier: int) -> str:
    """What is wrong with a record whose detections hold ``given`` keypoint values, earlier
    records' ``earlier`` (one model's file holds one count)."""
    return f"its keypoints hold {given} values a detection, earlier records' {earlier}"


def _dicts(image_id: int, rows: np.ndarray) -> Iterator[dict[str, Any]]:
    """An image's rows as COCO result dicts."""
    for cat, score, x, y, w, h in rows.tolist():
        yield {"image_id": image_id, "category_id": int(cat), "bbox": [x, y, w, h], "score": score}
