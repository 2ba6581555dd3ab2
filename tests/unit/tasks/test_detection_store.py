"""DetectionStore gives back every added image's rows as they were added (result dicts, per-image
blocks, by image id a chunk at a time), across its arrays' chunks, with images without detections
and an image added twice (a resumed run's records)."""

from __future__ import annotations

import numpy as np

from evalharness.core import growing_rows
from evalharness.tasks.coco.store import DetectionStore


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
