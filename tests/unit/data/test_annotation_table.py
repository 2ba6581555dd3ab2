"""A COCO file's annotations held as columns (data/annotation_table.py): each dict read back equals
what json and compact_shapes make of the file (keys, their order, value types, the very numbers),
anything the columns cannot hold is kept as parsed, and every check names a bad file as before."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest
from conftest import ASSETS

from evalharness.core import spill_file
from evalharness.core.errors import DataError
from evalharness.core.spill_file import SpilledArray
from evalharness.core.untrusted import read_json
from evalharness.data import annotation_table
from evalharness.data.annotation_table import AnnotationTable, drop_outlines, rows_by_image, rows_of
from evalharness.data.coco_annotations import (
    IMAGE_FILE_KEYS,
    check_annotations,
    load_annotations,
    require_boxes,
)
from evalharness.data.coco_rle import segmentations_problem
from evalharness.data.compact_shapes import compact_shapes
from evalharness.stats.coco_shapes import check_keypoint_ground_truth, check_mask_ground_truth


def _plain(path) -> dict:
    """The file as json and compact_shapes alone make it (a list of dicts)."""
    return read_json(path, "COCO annotation file", object_hook=compact_shapes)


def _typed(value: object) -> object:
    """``value`` as nested tuples naming every type: arrays by dtype, shape and bytes, dicts in their
    key order, numbers by type and repr (a NaN equals a NaN)."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return ("dict", tuple((key, _typed(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", tuple(map(_typed, value)))
    return (type(value).__name__, repr(value))


def _same(plain: object, held: object) -> None:
    assert _typed(plain) == _typed(held)


def _same_annotations(plain: list, table: AnnotationTable, as_table: bool = True) -> None:
    assert isinstance(table, AnnotationTable) == as_table and len(table) == len(plain)
    _same(plain, list(table))  # iterated, a block at a time
    _same(plain, [table[i] for i in range(len(plain))])  # one at a time
    _same(plain[::-3], table[::-3])
    if plain:
        _same(plain[-1], table[-1])


@pytest.mark.parametrize("name", ["instances_val25.json", "person_keypoints_val25.json"])
def test_the_shared_files_read_back_as_json_and_compact_shapes_make_them(name):
    path = ASSETS / "coco" / name
    plain, held = _plain(path), load_annotations(path)
    _same_annotations(plain["annotations"], held["annotations"])
    _same({**plain, "annotations": []}, {**held, "annotations": []})
    assert _grouped(held) == _grouped(plain)
    drop_outlines(plain)
    drop_outlines(held)
    _same_annotations(plain["annotations"], held["annotations"])


@pytest.mark.parametrize("name", ["instances_val25.json", "person_keypoints_val25.json"])
def test_polygons_and_keypoints_written_to_the_spill_file_read_back_alike(monkeypatch, name):
    monkeypatch.setattr(spill_file, "SPILL_BYTES", 1)  # every block's arrays spilled
    monkeypatch.setattr(annotation_table, "BLOCK_ROWS", 64)
    path = ASSETS / "coco" / name
    plain, held = _plain(path), load_annotations(path)
    table = held["annotations"]
    assert all(
        isinstance(b.coordinates if "instances" in name else b.keypoints, SpilledArray) for b in table._blocks
    )
    assert all(isinstance(b.rows, SpilledArray) for b in table._blocks)
    _same_annotations(plain["annotations"], table)
    few, many = [3, 70, 5], list(range(0, len(table), 2))  # a block's spilled slices; whole blocks
    _same([plain["annotations"][i] for i in few + many], rows_of(table, few + many))
    _same(plain["annotations"], list(pickle.loads(pickle.dumps(table))))  # as a spawned child gets it
    assert _grouped(held) == _grouped(plain)
    drop_outlines(plain)
    drop_outlines(held)
    _same_annotations(plain["annotations"], held["annotations"])
    assert all(isinstance(b.rows, SpilledArray) for b in held["annotations"]._blocks)  # spilled again


GOOD = {"segmentation": [[1, 1, 5, 1.5, 5, 5]], "area": 16.0, "iscrowd": 0, "image_id": 1,
        "bbox": [1.5, 1, 4, 4.25], "category_id": 1, "id": 1}  # fmt: skip
ODD = [
    {"bbox": [1, 2, 3, 4], "area": 12},  # integers where COCO has floats
    {"area": 2**53, "bbox": [-(2**53), 0, 1, 1]},  # integers float64 holds exactly
    {"area": 2**53 + 1},  # not exactly
    {"bbox": [0, 0, 10**30, 1]},
    {"id": 2**63},  # past int64
    {"id": -(2**63)},
    {"id": 3.0},
    {"image_id": True},
    {"iscrowd": False},
    {"category_id": "1"},
    {"area": None},
    {"area": float("nan")},
    {"area": -0.0},
    {"bbox": [1, 2, 3]},
    {"bbox": (1, 2, 3, 4)},  # a list once written as JSON
    {"bbox": [1, 2, True, 4]},
    {"extra": {"image_id": 5}},  # an annotation-like object inside an annotation
    {"attributes": [1, 2]},  # a key COCO does not define
    {"segmentation": {"size": [10, 20], "counts": [200]}, "iscrowd": 1},  # a crowd's RLE
    {"segmentation": {"size": [10, 20], "counts": "52"}, "iscrowd": 1},
    {"segmentation": []},
    {"segmentation": [[1, 2, "3", 4, 5, 6]]},
    {"segmentation": [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12, 13, 14]]},
    {"segmentation": [[1e308, -1e308, 0, 0, 1, 1]]},
    {"keypoints": [3, 4, 2] * 17, "num_keypoints": 17},
    {"num_keypoints": 1, "keypoints": [1.5, 4, 2]},  # floats: kept as parsed
    {"keypoints": [2**70, 1, 2]},
    {"keypoints": []},
    {"num_keypoints": 2.0},
]


def _doc(annotations: list) -> dict:
    images = [{"id": 1, "file_name": "a.jpg", "height": 10, "width": 20}]
    return {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "person"}]}


def _both(tmp_path, doc: dict, image_keys=("id",)) -> tuple[object, object]:
    """(the plain parse, or its check's error; load_annotations, or its error)."""
    path = tmp_path / "instances.json"
    path.write_text(json.dumps(doc))
    plain = _plain(path)
    try:
        check_annotations(plain, str(path), image_keys)  # what load_annotations checks
        require_boxes(plain, f"COCO annotation file {path}", "give the instances file with the boxes")
    except DataError as exc:
        plain = str(exc)
    try:
        held = load_annotations(path, image_keys)
    except DataError as exc:
        held = str(exc)
    return plain, held


def _variants() -> list[list[dict]]:
    out = []
    for odd in ODD:
        changed = {**GOOD, "id": 7, **odd}
        out.append([GOOD, changed, {**GOOD, "id": 9}])
    out.append([GOOD, {k: v for k, v in GOOD.items() if k != "area"}])  # a key missing
    out.append([GOOD, dict(reversed(list(GOOD.items()))) | {"id": 2}])  # another key order
    return out


@pytest.mark.parametrize("annotations", _variants())
def test_odd_annotations_read_back_as_parsed_and_are_refused_alike(tmp_path, annotations):
    plain, held = _both(tmp_path, _doc(annotations))
    if isinstance(plain, str):
        assert held == plain  # the same error, word for word
        return
    nested = any("extra" in ann for ann in annotations)  # parsed again without the table: a plain list
    _same_annotations(plain["annotations"], held["annotations"], not nested)
    assert segmentations_problem(held) == segmentations_problem(plain)
    assert _grouped(held) == _grouped(plain)  # rows held as parsed among the columns' ids
    for check in (check_keypoint_ground_truth, check_mask_ground_truth):
        assert _verdict(check, held) == _verdict(check, plain)
    _same_annotations(plain["annotations"], pickle.loads(pickle.dumps(held["annotations"])), not nested)
    _same_annotations(plain["annotations"], copy.deepcopy(held["annotations"]), not nested)


def _grouped(gt: dict) -> dict:
    return {image: list(rows) for image, rows in rows_by_image(gt["annotations"]).items()}


def _verdict(check, gt: dict) -> str:
    try:
        check(gt, "gt")
    except DataError as exc:
        return str(exc)
    return "accepted"


@pytest.mark.parametrize(
    "doc",
    [
        {"images": [{"id": 1, "image_id": 1}], "annotations": [GOOD], "categories": [{"id": 1, "name": "p"}]},
        _doc([GOOD, {"id": 2, "bbox": [1, 1, 1, 1]}]),  # an annotation without image_id
        _doc([GOOD, 5]),
        _doc([]),
        {"images": [], "annotations": {"image_id": 1}, "categories": []},
        {"annotations": [GOOD]},
    ],
)
def test_annotation_like_objects_elsewhere_or_lists_of_other_things_read_as_before(tmp_path, doc):
    plain, held = _both(tmp_path, doc)
    if isinstance(plain, str):
        assert held == plain
    else:
        _same(plain, {**held, "annotations": list(held["annotations"])})


def test_a_dict_read_is_new_and_the_table_unchanged_by_writing_into_it(tmp_path):
    path = tmp_path / "instances.json"
    crowd = {**GOOD, "id": 2, "segmentation": {"size": [10, 20], "counts": [200]}}
    path.write_text(json.dumps(_doc([GOOD, crowd])))
    table = load_annotations(path)["annotations"]
    for index in (0, 1):
        first = table[index]
        first["bbox"].append(1)
        first.pop("segmentation")
        assert table[index]["bbox"] == GOOD["bbox"] and "segmentation" in table[index]
    with pytest.raises(ValueError, match="read-only"):
        table[0]["segmentation"][0][0] = 5.0
    with pytest.raises(IndexError):
        table[2]
    assert [a["id"] for a in table[-2:]] == [1, 2]


def test_the_checks_name_the_same_entry_in_a_larger_file(tmp_path):
    many = [{**GOOD, "id": k, "image_id": 1 + k % 3} for k in range(1, 2500)]
    images = [{"id": k, "file_name": f"{k}.jpg", "height": 10, "width": 20} for k in (1, 2, 3)]
    for bad in ({"bbox": [1, 1, -1, 1]}, {"id": 5}, {"category_id": 2}, {"area": -1}, {"iscrowd": 2}):
        at = 2100
        annotations = [*many[:at], {**many[at], **bad}, *many[at + 1 :]]
        doc = {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "p"}]}
        plain, held = _both(tmp_path, doc, IMAGE_FILE_KEYS)
        assert isinstance(plain, str) and held == plain and "annotations[2100]" in held
    plain, held = _both(tmp_path, {**doc, "annotations": many})
    _same_annotations(plain["annotations"], held["annotations"])
    assert _grouped(held) == _grouped(plain)
    picks = [2400, 3, 1500, 3, 1023, 1024, 0, 2498]  # three blocks, out of order, one twice
    _same([plain["annotations"][k] for k in picks], rows_of(held["annotations"], picks))
    _same(rows_of(plain["annotations"], picks), rows_of(held["annotations"], np.array(picks)))
    with pytest.raises(IndexError):
        held["annotations"].rows([2499])
