"""ChunkedCOCOeval (evaluate() a chunk of images at a time, evalImgs reduced at once) gives
pycocotools' own COCOeval numbers bit for bit: stats, precision, recall, scores and the bootstrap's
per-detection matching, on random boxes with crowds, tied scores, every area range, maxDets that
cut, images without detections or ground truth, a subset of the images, and chunks of 1, 3 and all
the images."""

from __future__ import annotations

import contextlib
import importlib.util
import io

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from evalharness.core.errors import DataError
from evalharness.stats import coco_chunks, coco_reduced
from evalharness.stats.coco_bootstrap import Matching
from evalharness.stats.coco_chunks import ChunkedCOCOeval, ChunkResults
from evalharness.stats.coco_eval import EVALUATORS, evaluate_bbox
from evalharness.tasks.coco.store import DetectionStore
from tests.unit.stats.test_coco_match import _dataset


def _ground_truth(gt: dict) -> COCO:
    coco_gt = COCO()
    coco_gt.dataset = {**gt, "annotations": [dict(a) for a in gt["annotations"]]}
    coco_gt.createIndex()
    return coco_gt


def _evaluated(chunked: bool, gt: dict, results: list, image_ids: list, max_dets: list[int]) -> COCOeval:
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = _ground_truth(gt)
        if chunked:
            evaluator = ChunkedCOCOeval(coco_gt, ChunkResults(COCO, coco_gt.dataset, results), "bbox")
        else:
            evaluator = COCOeval(coco_gt, coco_gt.loadRes([dict(r) for r in results]), "bbox")
        evaluator.params.imgIds = image_ids
        evaluator.params.maxDets = max_dets
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
    return evaluator


def _reference_matching(evaluator: COCOeval) -> tuple[np.ndarray, ...]:
    """The bootstrap's matching read straight from pycocotools' evalImgs (area all): per category,
    the images' detections concatenated in image order, sorted stably by descending score."""
    p = evaluator.params
    n_img, n_area, n_thr = len(p.imgIds), len(p.areaRng), len(p.iouThrs)
    parts: list[list[np.ndarray]] = [[], [], [], [], []]
    gt_count = np.zeros((len(p.catIds), n_img), dtype=np.int64)
    for k in range(len(p.catIds)):
        held = [(i, e) for i in range(n_img) if (e := evaluator.evalImgs[k * n_area * n_img + i]) is not None]
        if not held:
            continue
        for i, e in held:
            gt_count[k, i] = np.count_nonzero(e["gtIgnore"] == 0)
        scores = np.concatenate([np.asarray(e["dtScores"], dtype=np.float64) for _, e in held])
        order = np.argsort(-scores, kind="mergesort")
        images = np.concatenate([np.full(len(e["dtScores"]), i) for i, e in held])
        matched = np.concatenate([e["dtMatches"].reshape(n_thr, -1) != 0 for _, e in held], axis=1)
        ignored = np.concatenate([e["dtIgnore"].reshape(n_thr, -1).astype(bool) for _, e in held], axis=1)
        for part, values in zip(parts, (images[order], np.full(len(order), k), scores[order]), strict=False):
            part.append(values)
        parts[3].append(matched[:, order])
        parts[4].append(ignored[:, order])
    flat = [np.concatenate(part, axis=-1) for part in parts]
    return (*flat, gt_count)


@pytest.mark.parametrize("chunk", [1, 3, 250])
@pytest.mark.parametrize("seed", range(5))
def test_chunks_give_pycocotools_numbers_bit_for_bit(monkeypatch, seed, chunk):
    monkeypatch.setattr(coco_chunks, "CHUNK_IMAGES", chunk)
    monkeypatch.setattr(coco_reduced, "SPILL_ROWS_BYTES", 1 if seed % 2 else 2**16)  # odd: all spilled
    gt, results = _dataset(seed)
    gt["images"].append({"id": 99, "width": 200, "height": 200})  # nothing on it, sorted last
    image_ids = [i for i in range(1, 9) if i != 4 or seed % 2] + [99]  # a subset on odd seeds
    results = [r for r in results if r["image_id"] in image_ids]
    max_dets = [1, 10, 100] if seed % 2 else [1, 2, 3]  # maxDets cutting the detections too
    ours = _evaluated(True, gt, results, image_ids, max_dets)
    theirs = _evaluated(False, gt, results, image_ids, max_dets)
    assert list(ours.stats) == list(theirs.stats)
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(ours.eval[key], theirs.eval[key]), key
    assert ours.evalImgs is None and ours.ious is None  # nothing per image kept but the reduced form
    matching = Matching.from_evaluator(ours, trim=False)
    images, cats, scores, matched, ignored, gt_count = _reference_matching(theirs)
    assert np.array_equal(matching.det_img, images) and np.array_equal(matching.det_cat, cats)
    assert np.array_equal(matching.det_score, scores) and np.array_equal(matching.gt_count, gt_count)
    assert np.array_equal(matching.matched, matched) and np.array_equal(matching.ignored, ignored)
    assert np.array_equal(Matching.from_evaluator(theirs, trim=False).det_score, scores)


@pytest.mark.parametrize("chunk", [1, 4])
def test_the_backend_scores_and_matches_as_one_chunk(monkeypatch, chunk):
    """The pycocotools backend (stats, precision, recall, the matching, evaluate_only's matching)
    is the same whatever the chunk, and the callers' dicts are left as given."""
    gt, results = _dataset(7)
    given = [dict(r) for r in results]
    ids = sorted(image["id"] for image in gt["images"])
    whole = EVALUATORS.get("pycocotools")(gt, results, ids, keep_matching=True)
    monkeypatch.setattr(coco_chunks, "CHUNK_IMAGES", chunk)
    chunked = EVALUATORS.get("pycocotools")(gt, results, ids, keep_matching=True)
    for mine, reference in zip(chunked, whole, strict=True):
        if isinstance(reference, Matching):
            for name in ("det_img", "det_cat", "det_score", "matched", "ignored", "gt_count"):
                assert np.array_equal(getattr(mine, name), getattr(reference, name)), name
        else:
            assert np.array_equal(np.asarray(mine), np.asarray(reference))
    only = EVALUATORS.get("pycocotools")(gt, results, ids, evaluate_only=True)
    assert np.array_equal(only.det_score, whole[3].det_score)
    assert np.array_equal(only.matched, whole[3].matched)
    assert results == given


def _store(results: list) -> DetectionStore:
    store = DetectionStore()
    by_image: dict[int, list] = {}
    for r in results:
        by_image.setdefault(r["image_id"], []).append([r["category_id"], r["score"], *r["bbox"]])
    for image_id, rows in by_image.items():
        store.add(image_id, rows)
    return store


@pytest.mark.parametrize("subset", [False, True])
def test_a_store_scores_as_the_list_of_its_rows(monkeypatch, subset):
    """evaluate_bbox on a run's store (result dicts made a chunk at a time) equals it on the list of
    every row: stats, per class, the detections counted, the matching; a bad row is named alike."""
    monkeypatch.setattr(coco_chunks, "CHUNK_IMAGES", 2)
    gt, results = _dataset(3)
    gt["categories"] = [{"id": c, "name": f"c{c}"} for c in (1, 2, 3)]
    store = _store(results)
    ids = [1, 2, 5, 7] if subset else None
    mine = evaluate_bbox(gt, store, image_ids=ids, keep_matching=True)
    theirs = evaluate_bbox(gt, list(store.rows()), image_ids=ids, keep_matching=True)
    for key in ("stats", "per_class", "num_detections", "num_images", "summary"):
        assert mine[key] == theirs[key], key
    assert np.array_equal(mine["matching"].matched, theirs["matching"].matched)
    if importlib.util.find_spec("faster_coco_eval"):  # a backend of its own is given one list
        faster = evaluate_bbox(gt, store, "faster_coco_eval", image_ids=ids, keep_matching=True)
        assert faster["stats"] == pytest.approx(mine["stats"], abs=1e-12)
        assert faster["num_detections"] == mine["num_detections"]
        assert np.array_equal(faster["matching"].matched, mine["matching"].matched)
    store.add(8, [[1, 0.5, float("nan"), 1.0, 2.0, 3.0]])
    with pytest.raises(DataError) as from_list:
        evaluate_bbox(gt, list(store.rows()))
    with pytest.raises(DataError) as from_store:
        evaluate_bbox(gt, store)
    assert str(from_store.value) == str(from_list.value)
