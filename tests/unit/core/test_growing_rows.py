"""GrowingRows keeps each group whole in one chunk, reads every group back as appended (across
chunks, past a chunk's unused end), and never copies a row once written; ImageSpans
indexes each image's rows by id."""

from __future__ import annotations

import tempfile

import numpy as np

from evalharness.core import growing_rows, spill_file
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
    assert spans.added() == [[7, 0, 3], [9, 3, 3], [7, 3, 5]]
    assert spans.of(7) == [(0, 0, 3), (2, 3, 5)] and spans.of(9) == [(1, 3, 3)] and spans.of(8) == []
    assert spans.of(6) == [] and spans.of(10) == []  # before the first id, after the last
    assert spans.index() is spans.index()  # kept until the next add
    spans.add(11, 5, 6)
    assert len(spans) == 4 and spans.of(11) == [(3, 5, 6)] and spans.added()[-1] == [11, 5, 6]
    assert spans.of(7) == [(0, 0, 3), (2, 3, 5)] and ImageSpans().of(7) == [] and ImageSpans().added() == []


def test_full_chunks_spill_to_an_unlinked_file_and_read_back_identical(monkeypatch, tmp_path):
    monkeypatch.setattr(growing_rows, "FIRST_ROWS", 4)
    monkeypatch.setattr(growing_rows, "CHUNK_BYTES", 16 * 8 * 2)  # 16 rows of two float64s at most
    monkeypatch.setattr(spill_file, "SPILL_BYTES", 8 * 8 * 2)  # chunks of 8 rows or more spill
    monkeypatch.setattr(growing_rows, "KEPT_READS", 1)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    rows, kept = GrowingRows(2), GrowingRows(2, spill=False)
    rng = np.random.default_rng(1)
    groups = [rng.random((int(n), 2)) for n in rng.integers(0, 7, 60)] + [rng.random((40, 2))]
    positions = [rows.extend(group) for group in groups]
    assert [kept.extend(group) for group in groups] == positions
    assert _spilled(rows) and not _spilled(kept)
    assert 0 not in _spilled(rows)  # 4 rows: below SPILL_BYTES, kept
    assert list(tmp_path.iterdir()) == []  # the file has no name (unlinked at once)
    early = rows.view(positions[-2], positions[-2] + len(groups[-2]))
    for start, group in list(zip(positions, groups, strict=True)) * 2:  # in order, then again
        np.testing.assert_array_equal(rows.view(start, start + len(group)), group)
    for i in rng.permutation(len(groups)):  # any order
        np.testing.assert_array_equal(rows.view(positions[i], positions[i] + len(groups[i])), groups[i])
    assert len(rows._read) == 1
    np.testing.assert_array_equal(rows.all(), np.concatenate(groups))
    np.testing.assert_array_equal(rows.all(), kept.all())
    np.testing.assert_array_equal(early, groups[-2])  # still the same after other reads
    k = min(_spilled(rows))
    assert not rows.view(rows._starts[k], rows._starts[k] + 1).flags.writeable  # rows never change


def test_spilled_structured_rows_read_back():
    dtype = np.dtype([("at", np.int32), ("iou", np.float64)])
    values = GrowingRows(None, dtype)
    given = np.zeros(3 * growing_rows.CHUNK_BYTES // dtype.itemsize, dtype=dtype)
    given["at"], given["iou"] = np.arange(len(given)), np.linspace(0, 1, len(given))
    positions = [values.extend(part) for part in np.array_split(given, 40)]
    assert _spilled(values)
    assert values.view(positions[3], positions[4]).tolist() == np.array_split(given, 40)[3].tolist()
    assert values.all().tobytes() == given.tobytes()


def _spilled(rows: GrowingRows) -> list[int]:
    """The chunks of ``rows`` held in the file."""
    return [k for k, chunk in enumerate(rows._chunks) if isinstance(chunk, spill_file.SpilledArray)]
