"""The compact reduced matching (shared detections, bit-packed flags, grown columns) reads back
exactly what was added, in its order: every image subset and maxDets cut, a category whose area
ranges disagree on its detections, thresholds that are not a multiple of 8."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

from evalharness.core.spill_file import SpillFile
from evalharness.stats import coco_reduced
from evalharness.stats.coco_reduced import Growing, reduce_eval_imgs


def _entry(rng: np.random.Generator, n_thr: int, n_det: int, n_gt: int) -> dict:
    return {
        "dtScores": [float(s) for s in rng.choice([0.5, 0.25, 0.125, rng.random()], n_det)],
        "dtMatches": rng.integers(0, 3, (n_thr, n_det)).astype(np.float64),
        "dtIgnore": rng.random((n_thr, n_det)) < 0.2,
        "gtIgnore": rng.integers(0, 2, n_gt),
    }


def _chunks(seed: int, n_thr: int, n_area: int, alike: bool) -> list[list]:
    """evalImgs of 3 chunks of 4 images, 2 categories: an area range's detections the first's
    (pycocotools) or, where not ``alike``, other ones from the second chunk on."""
    rng = np.random.default_rng(seed)
    chunks = []
    for c in range(3):
        evals: list = []
        for k in range(2):
            firsts = [
                None if rng.random() < 0.3 else _entry(rng, n_thr, int(rng.integers(0, 7)), 3)
                for _ in range(4)
            ]
            for a in range(n_area):
                for first in firsts:
                    if first is None or a == 0:
                        evals.append(first)
                        continue
                    own = _entry(rng, n_thr, len(first["dtScores"]), 3)
                    if alike or c == 0 or k == 1:
                        own["dtScores"] = first["dtScores"]
                    evals.append(own)
        chunks.append(evals)
    return chunks


def _reference(chunks: list[list], k: int, a: int, n_area: int, n_thr: int) -> tuple[np.ndarray, ...]:
    scores, images, ranks, matched, ignored, gt_images, gt_counts = [], [], [], [], [], [], []
    for c, evals in enumerate(chunks):
        for i in range(4):
            e = evals[(k * n_area + a) * 4 + i]
            if e is None:
                continue
            gt_images.append(c * 4 + i)
            gt_counts.append(int(np.count_nonzero(e["gtIgnore"] == 0)))
            n = len(e["dtScores"])
            scores += e["dtScores"]
            images += [c * 4 + i] * n
            ranks += range(n)
            matched.append(e["dtMatches"].reshape(n_thr, n) != 0)
            ignored.append(e["dtIgnore"].reshape(n_thr, n).astype(bool))
    flags = np.concatenate(matched, axis=1), np.concatenate(ignored, axis=1)
    return (
        np.array(scores, dtype=np.float64), np.array(images), np.array(ranks, dtype=np.int64),
        *flags, np.array(gt_images), np.array(gt_counts),
    )  # fmt: skip


@pytest.mark.parametrize("spill", [False, True])  # True: every column's rows written to the file at once
@pytest.mark.parametrize(("n_thr", "alike"), [(10, True), (10, False), (3, True), (17, False)])
def test_the_reduced_matching_reads_back_what_was_added(monkeypatch, n_thr, alike, spill):
    monkeypatch.setattr(coco_reduced, "SPILL_ROWS_BYTES", 1 if spill else 2**16)
    n_area = 3
    chunks = _chunks(n_thr, n_thr, n_area, alike)
    reduced: dict = {}
    opened = []
    real = tempfile.TemporaryFile
    monkeypatch.setattr(tempfile, "TemporaryFile", lambda **kw: opened.append(1) or real(**kw))
    spill_file = SpillFile()
    for c, evals in enumerate(chunks):
        reduce_eval_imgs(evals, 2, n_area, c * 4, n_thr, reduced, spill_file)
    # every column of the scoring writes to the one file it was given (opened only if one spilled)
    assert len(opened) == int(spill)
    # one copy of a category's detections for its area ranges; its own where they differ
    assert (reduced[0, 1].shared is reduced[0, 0].shared) == alike and reduced[1, 2].shared is reduced[
        1, 0
    ].shared
    for (k, a), block in reduced.items():
        scores, images, ranks, matched, ignored, gt_images, gt_counts = _reference(
            chunks, k, a, n_area, n_thr
        )
        held, counts = block.ground_truth()
        assert np.array_equal(held, gt_images) and np.array_equal(counts, gt_counts)
        assert counts.dtype == np.int64
        for chosen in (None, np.array([0, 5, 6, 11])):
            for max_det in (None, 2, 100):
                keep = np.ones(len(scores), dtype=bool) if max_det is None else ranks < max_det
                if chosen is not None:
                    keep &= np.isin(images, chosen)
                got = block.detections(chosen, max_det)
                for mine, theirs in zip(
                    got, (scores, images, matched[:, keep], ignored[:, keep]), strict=True
                ):
                    want = theirs if theirs.ndim == 2 else theirs[keep]
                    assert mine.dtype == want.dtype or mine.dtype.kind == want.dtype.kind == "i"
                    assert np.array_equal(mine, want)
                assert got[2].dtype == bool and got[2].shape == (n_thr, int(keep.sum()))
            picked = np.isin(gt_images, chosen) if chosen is not None else slice(None)
            assert block.gt_count(chosen) == int(gt_counts[picked].sum())


@pytest.mark.parametrize("spill_bytes", [2**16, 100])
def test_a_grown_column_keeps_every_row_in_order(monkeypatch, spill_bytes):
    monkeypatch.setattr(coco_reduced, "SPILL_ROWS_BYTES", spill_bytes)
    column = Growing(np.uint8, (2,))
    rows = np.arange(2 * 1000, dtype=np.uint8).reshape(1000, 2)
    for first in range(0, 1000, 37):
        column.extend(rows[first : first + 37])
    assert len(column) == 1000 and np.array_equal(column.values(), rows)
    assert bool(column._segments) == (spill_bytes == 100)
    assert np.array_equal(column.head(10).values(), rows[:10]) and np.array_equal(column.values(5), rows[:5])
    for start, stop in ((0, 3), (37, 74), (40, 900), (111, 112), (990, 1000), (999, 1200), (1000, 1001)):
        assert np.array_equal(column.between(start, stop), rows[start:stop])
    flat = Growing(np.float64)  # single values (width ()): the segments' rows are their values
    flat.extend(np.arange(100.0))
    flat.extend(np.arange(100.0, 130.0))
    assert np.array_equal(flat.between(7, 125), np.arange(7.0, 125.0))
