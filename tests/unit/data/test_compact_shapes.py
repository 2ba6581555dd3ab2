"""COCO ground truth held compactly while it is parsed (data/compact_shapes.py): the values json
parses, polygons as float64 arrays, keypoints as the array numpy makes of them, and every check of
a bad outline or bad keypoints answering as it does for the file parsed plainly."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest

from evalharness.core.errors import DataError
from evalharness.core.untrusted import parse_json
from evalharness.data.annotation_table import AnnotationTable
from evalharness.data.coco_annotations import load_annotations
from evalharness.data.coco_rle import segmentations_problem
from evalharness.data.compact_shapes import compact_shapes, plain_lists
from evalharness.stats.coco_shapes import check_keypoint_ground_truth


def _doc(segmentation: object = None, keypoints: object = None, extra: int = 0) -> dict:
    good = {"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4], "area": 16.0, "iscrowd": 0,
            "segmentation": [[1, 1, 5, 1.5, 5, 5]], "keypoints": [3, 4, 2] * 17}  # fmt: skip
    annotations = [good] + [{**good, "id": 10 + k} for k in range(extra)]
    odd = {**good, "id": 2}
    if segmentation is not None:
        odd["segmentation"] = segmentation
    if keypoints is not None:
        odd["keypoints"] = keypoints
    categories = [{"id": 1, "name": "person", "keypoints": ["nose"] * 17, "skeleton": [[1, 2], [2, 3]]}]
    images = [{"id": 1, "file_name": "a.jpg", "height": 10, "width": 20}]
    return {"images": images, "annotations": [*annotations, odd], "categories": categories}


def _both(tmp_path, doc: dict) -> tuple[dict, dict]:
    """(json.loads of the file, load_annotations of it)."""
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(doc))
    return json.loads(path.read_text()), load_annotations(path)


def _same(plain: object, held: object) -> None:
    """``held`` is ``plain`` with lists of numbers as arrays of exactly its values."""
    if isinstance(held, np.ndarray):
        assert isinstance(plain, list) and held.ndim == 1 and len(held) == len(plain)
        assert [float(v).hex() for v in plain] == [float(v).hex() for v in held.tolist()]
        return
    if isinstance(held, AnnotationTable):  # the annotations as columns: a sequence of the dicts
        held = list(held)
    assert type(plain) is type(held)
    if isinstance(plain, dict):
        assert plain.keys() == held.keys()
        for key in plain:
            _same(plain[key], held[key])
    elif isinstance(plain, list):
        assert len(plain) == len(held)
        for a, b in zip(plain, held, strict=True):
            _same(a, b)
    else:
        assert plain == held or (plain != plain and held != held)


def test_polygons_are_float64_arrays_and_keypoints_numpy_s_of_the_values_json_parses(tmp_path):
    crowd = {"size": [10, 20], "counts": [200]}
    plain, held = _both(tmp_path, _doc([[0, 0, 19.5, 0, 19.5, 9.5, 0.1 + 0.2, 7]], [1.5, 2, 2] * 17))
    plain_crowd, held_crowd = _both(tmp_path, _doc(crowd))
    _same(plain, held)
    _same(plain_crowd, held_crowd)
    first, second = held["annotations"]
    assert all(p.dtype == np.float64 for ann in (first, second) for p in ann["segmentation"])
    assert first["keypoints"].dtype == np.int64 and second["keypoints"].dtype == np.float64
    assert held_crowd["annotations"][1]["segmentation"] == crowd  # an RLE stays as parsed
    assert held["categories"] == plain["categories"]  # keypoint names, the skeleton: not numbers
    assert json.loads(json.dumps(held, default=plain_lists)) == plain  # 0.1 + 0.2 round-trips


BAD_OUTLINES = [
    [[0, 0, 1e12, 0, 5, 5]],
    [[0, 0, float("nan"), 0, 5, 5]],
    [[0, 0, float("inf"), 0, 5, 5]],
    [[0, 0, 5, 0, 5]],
    [[0, 0, 5, 0]],
    [[]],
    [],
    [[0, 0, "5", 0, 5, 5]],
    [[0, 0, None, 0, 5, 5]],
    [[0, 0, True, 0, 5, 5]],  # a boolean is a number to pycocotools: accepted, as before
    [[0, 0, [5], 0, 5, 5]],
    [[[0, 0], [5, 0], [5, 5]]],
    [[0, 0, 5, 0, 5, 5], [0, 0, 10**30, 0, 5, 5]],
    [[0, 0, 5, 0, 5, 5], [0, 0, 2**70, 0, 5, -1e9]],
    [[0, 0, 19.5, 0, 19.5, 9.5, -3, 12]],  # a little outside the image: fine
    "a string",
]


@pytest.mark.parametrize("segmentation", BAD_OUTLINES)
def test_a_bad_outline_is_named_as_for_the_file_parsed_plainly(tmp_path, segmentation):
    plain, held = _both(tmp_path, _doc(segmentation))
    assert segmentations_problem(held) == segmentations_problem(plain)


def test_a_bad_outline_past_the_first_block_is_the_same_annotation(tmp_path):
    bad = [[0, 0, 5, 0, 5, 5] * 8, [0, 0, 5, 0, float("nan"), 5]]
    plain, held = _both(tmp_path, _doc(bad, extra=1500))  # ~75,000 coordinates: two blocks
    found = segmentations_problem(held)
    assert found == segmentations_problem(plain) and found is not None and found[0] == 1501


BAD_KEYPOINTS = [
    [float("nan"), 1, 2] * 17,
    [1, 2, float("-inf")] * 17,
    [1, 2, 2] * 16,
    ["1", 2, 2] * 17,
    [1, 2, None] * 17,
    [1, 2, True] * 17,
    [10**30, 1, 2] * 17,  # finite: scored, as before
    [2**70, 1, 2.5] * 17,
]


def _verdict(gt: dict) -> str:
    try:
        check_keypoint_ground_truth(gt, "gt")
    except DataError as exc:
        return str(exc)
    return "accepted"


@pytest.mark.parametrize("keypoints", BAD_KEYPOINTS)
def test_bad_keypoints_are_refused_as_for_the_file_parsed_plainly(tmp_path, keypoints):
    plain, held = _both(tmp_path, _doc(keypoints=keypoints))
    assert _verdict(held) == _verdict(plain)


def test_the_hook_runs_after_the_limits_of_untrusted_json():
    deep = b"[" * 100 + b"]" * 100
    with pytest.raises(DataError, match="nests deeper than 64 levels"):
        parse_json(deep, "f.json", top=list, object_hook=compact_shapes)
    seen = parse_json(b'{"keypoints": [1, 2.5, NaN]}', "f.json", object_hook=compact_shapes)["keypoints"]
    assert seen.dtype == np.float64 and seen[:2].tolist() == [1.0, 2.5] and math.isnan(seen[2])


def test_a_yolo_layout_s_polygons_are_arrays_and_its_identity_the_text_of_their_lists(tmp_path):
    from test_yolo_labels import H, W, layout

    from evalharness.data.yolo_labels import yolo_ground_truth

    layout(tmp_path, {"1": "1 0.1 0.3 0.7 0.3 0.7 0.9\n0 0.5 0.5 0.25 0.25\n"})
    truth = yolo_ground_truth(tmp_path)[1]
    polygon = truth.annotations["annotations"][0]["segmentation"][0]
    expected = [0.1 * W, 0.3 * H, 0.7 * W, 0.3 * H, 0.7 * W, 0.9 * H]  # Python's float arithmetic
    assert polygon.dtype == np.float64 and [v.hex() for v in polygon.tolist()] == [v.hex() for v in expected]
    as_lists = json.loads(json.dumps(truth.annotations, default=plain_lists))
    text = json.dumps(as_lists, sort_keys=True, separators=(",", ":"))
    assert truth.sha256 == hashlib.sha256(text.encode()).hexdigest()  # the identity runs recorded
