"""How a COCO run holds its detections until they are scored (see :class:`DetectionStore`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

COLUMNS = 7  # image_id, category_id, x, y, w, h, score


class DetectionStore:
    """A run's detections held compactly: one small float64 array per image, not a dict per box.

    A 5,000-image run at ~100 detections per image is 500k boxes: as Python dicts that is ~250 MB,
    as arrays ~28 MB. Rows become COCO result dicts only when scored, a chunk of images at a time
    (:meth:`rows_of`), or streamed into ``coco_results.json``. float64 keeps every value exactly as
    recorded.
    """

    def __init__(self) -> None:
        self._per_image: list[np.ndarray] = []
        self._count = 0
        self._where: dict[int, list[int]] | None = None  # image id -> its blocks (made when read)

    def add(self, image_id: int, rows: list[Any]) -> None:
        """One image's ``[category_id, score, x, y, w, h]`` rows, in output order."""
        n = len(rows)
        block = np.empty((n, COLUMNS), dtype=np.float64)
        block[:, 0] = image_id
        if n:
            given = np.asarray(rows, dtype=np.float64).reshape(n, 6)
            block[:, 1], block[:, 6], block[:, 2:6] = given[:, 0], given[:, 1], given[:, 2:6]
        self._per_image.append(block)
        self._count += n
        self._where = None

    def __len__(self) -> int:
        return self._count

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(image_id, (n, 6) array of category_id, score, x, y, w, h) per added image with detections,
        in the order added."""
        for block in self._per_image:
            if len(block):
                yield int(block[0, 0]), block[:, [1, 6, 2, 3, 4, 5]]

    def rows(self) -> Iterator[dict[str, Any]]:
        """COCO result dicts (image_id, category_id, bbox, score) in the order they were added."""
        for block in self._per_image:
            yield from _dicts(block)

    def image_ids(self) -> set[int]:
        """The images holding detections."""
        return {int(block[0, 0]) for block in self._per_image if len(block)}

    def rows_of(self, image_ids: list[Any]) -> list[dict[str, Any]]:
        """The result dicts of ``image_ids`` (new ones), each image's in the order added: the
        scoring makes them a chunk of images at a time (``stats/coco_chunks.py``), never all."""
        if self._where is None:
            self._where = {}
            for n, block in enumerate(self._per_image):
                if len(block):
                    self._where.setdefault(int(block[0, 0]), []).append(n)
        where = self._where
        return [row for i in image_ids for n in where.get(int(i), ()) for row in _dicts(self._per_image[n])]


def _dicts(block: np.ndarray) -> Iterator[dict[str, Any]]:
    """An image's rows as COCO result dicts."""
    for image_id, cat, x, y, w, h, score in block.tolist():
        yield {"image_id": int(image_id), "category_id": int(cat), "bbox": [x, y, w, h], "score": score}
