"""A run's COCO detections held compactly: one small float64 array per image, not a dict per box.

A 5,000-image run at ~100 detections per image is 500k boxes: as Python dicts that is ~250 MB held
through the whole loop, as arrays ~28 MB. Rows are rebuilt as COCO result dicts only when scored
(pycocotools needs them all at once) and streamed row by row into ``coco_results.json``. float64
keeps every value exactly as the float the evaluator computed, so scores and files are unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

_COLUMNS = 7  # image_id, category_id, x, y, w, h, score


class DetectionStore:
    def __init__(self) -> None:
        self._per_image: list[np.ndarray] = []
        self._count = 0

    def add(self, image_id: int, category_ids, scores, boxes_xywh) -> None:
        """One image's detections in output order (``boxes_xywh``: [N, 4] in original pixels)."""
        n = len(category_ids)
        rows = np.empty((n, _COLUMNS), dtype=np.float64)
        rows[:, 0] = image_id
        rows[:, 1] = category_ids
        rows[:, 2:6] = np.asarray(boxes_xywh, dtype=np.float64).reshape(n, 4)
        rows[:, 6] = scores
        self._per_image.append(rows)
        self._count += n

    def __len__(self) -> int:
        return self._count

    def rows(self) -> Iterator[dict]:
        """COCO result dicts (image_id, category_id, bbox, score) in the order they were added."""
        for block in self._per_image:
            for image_id, cat, x, y, w, h, score in block.tolist():
                yield {
                    "image_id": int(image_id),
                    "category_id": int(cat),
                    "bbox": [x, y, w, h],
                    "score": score,
                }
