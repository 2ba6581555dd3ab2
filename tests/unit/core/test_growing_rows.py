"""GrowingRows keeps each group whole in one chunk, reads every group back as appended (across
chunks, past a chunk's unused end), and never copies a row once written; ImageSpans
indexes each image's rows by id."""

from __future__ import annotations

import numpy as np

from evalharness.core import growing_rows
from evalharness.core.growing_rows import GrowingRows, ImageSpans


def test_groups_read_back_across_chunks(monkeypatch):
    monkeypatch.setattr(growing_rows, "FIRST_ROWS", 4)
    monkeypatch.setattr(growing_rows, "CHUNK_BYTES", 16 * 8 * 2)  # 16 rows of two float64s at most
    rows = GrowingRows(2)
    rng = np.random.default_rng(0)
    groups = [rng.random((int(n), 2)) for n in rng.integers(0, 7, 40)] + [rng.random((40, 2))]
    positions = [rows.extend(group) for group in groups]
    first_view = rows.view(positions[1], positions[1] + len(groups[1]))
    assert len(rows) == sum(len(g) for g in groups)
    assert len(rows._chunks) > 3 and max(len(c) for c in rows._chunks[:-1]) == 16  # capped; the last fits 40
    for start, group in zip(positions, groups, strict=True):
        np.testing.assert_array_equal(rows.view(start, start + len(group)), group)
    np.testing.assert_array_equal(rows.all(), np.concatenate(groups))
    assert any(np.shares_memory(first_view, c) for c in rows._chunks)  # a view, right after the growth
    np.testing.assert_array_equal(first_view, groups[1])


def test_single_values_and_integers():
    values = GrowingRows(None, np.int64)
    assert values.all().shape == (0,)
    start = values.extend([3, 1, 2])
    assert values.view(start, start + 3).tolist() == [3, 1, 2]
    assert values.view(start, start).shape == (0,)
    assert values.extend(np.array([[7], [8]])) == 3
    assert values.all().tolist() == [3, 1, 2, 7, 8]


def test_image_spans_index_each_id_and_refresh_after_an_add():
    spans = ImageSpans()
    assert spans.add(7, 0, 3) == 0 and spans.add(9, 3, 3) == 1 and spans.add(7, 3, 5) == 2
    added, positions = spans.index()
    assert added == [[7, 0, 3], [9, 3, 3], [7, 3, 5]] and positions == {7: [0, 2], 9: [1]}
    assert spans.of(7) == [(0, 0, 3), (2, 3, 5)] and spans.of(9) == [(1, 3, 3)] and spans.of(8) == []
    assert spans.index() is spans.index()  # kept until the next add
    spans.add(11, 5, 6)
    assert len(spans) == 4 and spans.index()[1][11] == [3] and spans.added()[-1] == [11, 5, 6]
