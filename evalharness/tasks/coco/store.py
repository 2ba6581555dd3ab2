"""How a COCO run holds its detections until they are scored (see :class:`DetectionStore`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from evalharness.core.growing_rows import GrowingRows

COLUMNS = 6  # category_id, score, x, y, w, h


class DetectionStore:
    """A run's detections held compactly: every image's rows in large float64 arrays
    (core/growing_rows.py) and each image's id and where its rows are in others, not a dict per box
    nor an array per image.

    A 5,000-image run at ~100 detections per image is 500k boxes: as Python dicts that is ~250 MB,
    as rows ~24 MB. Rows become COCO result dicts only when scored, a chunk of images at a time
    (:meth:`rows_of`), or streamed into ``coco_results.json``. float64 keeps every value exactly as
    recorded.
    """

    def __init__(self) -> None:
        self._rows = GrowingRows(COLUMNS)
        self._images = GrowingRows(3, np.int64)  # per added image: its id, its rows' positions
        self._where: dict[int, list[tuple[int, int]]] | None = None  # image id -> its rows (made when read)

    def add(self, image_id: int, rows: list[Any]) -> None:
        """One image's ``[category_id, score, x, y, w, h]`` rows, in output order."""
        start = self._rows.extend(rows) if len(rows) else 0
        self._images.extend([(image_id, start, start + len(rows))])
        self._where = None

    def __len__(self) -> int:
        return len(self._rows)

    def _added(self) -> list[list[int]]:
        """[image_id, its rows' start and end position] per added image, in the order added."""
        added: list[list[int]] = self._images.all().tolist()
        return added

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(image_id, (n, 6) array of category_id, score, x, y, w, h) per added image with detections,
        in the order added."""
        for image_id, start, end in self._added():
            if end > start:
                yield image_id, self._rows.view(start, end)

    def rows(self) -> Iterator[dict[str, Any]]:
        """COCO result dicts (image_id, category_id, bbox, score) in the order they were added."""
        for image_id, start, end in self._added():
            yield from _dicts(image_id, self._rows.view(start, end))

    def image_ids(self) -> set[int]:
        """The images holding detections."""
        return {image_id for image_id, start, end in self._added() if end > start}

    def rows_of(self, image_ids: list[Any]) -> list[dict[str, Any]]:
        """The result dicts of ``image_ids`` (new ones), each image's in the order added: the
        scoring makes them a chunk of images at a time (``stats/coco_chunks.py``), never all."""
        if self._where is None:
            self._where = {}
            for image_id, start, end in self._added():
                if end > start:
                    self._where.setdefault(image_id, []).append((start, end))
        where = self._where
        return [
            row
            for i in image_ids
            for start, end in where.get(int(i), ())
            for row in _dicts(int(i), self._rows.view(start, end))
        ]


def _dicts(image_id: int, rows: np.ndarray) -> Iterator[dict[str, Any]]:
    """An image's rows as COCO result dicts."""
    for cat, score, x, y, w, h in rows.tolist():
        yield {"image_id": image_id, "category_id": int(cat), "bbox": [x, y, w, h], "score": score}
