"""DetectionStore (and KeypointStore) give back every added image's rows as they were added (result
dicts, per-image blocks, by image id a chunk at a time), across its arrays' chunks, with images
without detections and an image added twice (a resumed run's records)."""

from __future__ import annotations

import numpy as np
import pytest

from evalharness.core import growing_rows
from evalharness.tasks.coco.store import DetectionStore, KeypointStore


def test_rows_come_back_as_added(monkeypatch):
    monkeypatch.setattr(growing_rows, "FIRST_ROWS", 4)  # many chunks: groups past a chunk's end
    monkeypatch.setattr(growing_rows, "CHUNK_BYTES", 8 * 6 * 8)
    rng = np.random.default_rng(1)
    added = []
    for image_id in [5, 3, 9, 3, 7, 11]:  # 3 twice
        n = 0 if image_id == 9 else int(rng.integers(1, 12))
        rows = [[int(rng.integers(1, 91)), *rng.random(5).tolist()] for _ in range(n)]
        added.append((image_id, rows))
    store = DetectionStore()
    for image_id, rows in added:
        store.add(image_id, rows)

    def dicts(image_id, rows):
        return [{"image_id": image_id, "category_id": c, "bbox": [x, y, w, h], "score": s}
                for c, s, x, y, w, h in rows]  # fmt: skip

    assert len(store) == sum(len(rows) for _, rows in added)
    assert list(store.rows()) == [d for image_id, rows in added for d in dicts(image_id, rows)]
    blocks = list(store.blocks())
    assert [image_id for image_id, _ in blocks] == [i for i, rows in added if rows]
    for (_, block), rows in zip(blocks, [rows for _, rows in added if rows], strict=True):
        assert block.shape == (len(rows), 6) and block.tolist() == rows
    assert store.image_ids() == {5, 3, 7, 11}
    wanted = [3, 9, 11, 4]
    by_id = [d for i in wanted for image_id, rows in added if image_id == i for d in dicts(i, rows)]
    assert store.rows_of(wanted) == by_id
    store.add(4, [[1, 0.5, 1.0, 2.0, 3.0, 4.0]])  # read again after another add
    assert store.rows_of([4]) == dicts(4, [[1, 0.5, 1.0, 2.0, 3.0, 4.0]])


def test_keypoints_come_back_as_the_records_gave_them_and_one_length_is_held():
    store = KeypointStore()
    rng = np.random.default_rng(2)
    added = []
    for image_id in [2, 8, 2]:
        n = int(rng.integers(0, 5))
        detections = [[1, float(rng.random()), *rng.random(4).tolist()] for _ in range(n)]
        points = [[*rng.random(50).tolist(), 2] for _ in range(n)]  # visibility an integer
        added.append((image_id, detections, points))
        store.add(image_id, detections, points)
    expected = [
        {"image_id": image_id, "category_id": 1, "score": det[1], "keypoints": kps}
        for image_id, dets, points in added
        for det, kps in zip(dets, points, strict=True)
    ]
    assert len(store) == len(expected) and list(store.rows()) == expected  # 2 == 2.0: the same number
    assert store.rows_of([8, 2]) == [d for d in expected if d["image_id"] == 8] + [
        d for d in expected if d["image_id"] == 2
    ]
    with pytest.raises(ValueError, match="its keypoints hold 3 values a detection, earlier records' 51"):
        store.add(9, [[1, 0.5, 0, 0, 1, 1]], [[1.0, 2.0, 2]])
