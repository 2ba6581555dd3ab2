"""COCO ground truth's outlines and keypoints held as numpy arrays, not lists of Python numbers.

A polygon coordinate parsed by ``json`` is a Python float (24 bytes) behind a list slot (8 bytes);
val2017's outlines are about a million of them, and a 2,500-image instances JSON (12.5 MB) held
~48 MiB of them, the largest thing a seg run kept from start to end. :func:`compact_shapes` is
``json``'s ``object_hook`` (``core.untrusted.read_json``): as each annotation is decoded, each
polygon of its ``segmentation`` becomes a float64 array (8 bytes a coordinate, the very values
``json`` parsed: pycocotools' ``frPoly`` reads every polygon as ``np.array(p, dtype=np.double)``),
and its ``keypoints`` the array ``np.array`` makes of them (int64 for COCO's integers, float64
otherwise: what pycocotools' ``computeOks`` makes of them), so each annotation's number objects die
before the next is parsed. The dict API stays: ``ann["segmentation"]`` is still a list of polygons
(pycocotools' ``annToRLE`` and tidecv's ``toRLE`` ask ``type(segm) == list``); a crowd RLE stays a
dict. Only lists of plain numbers are made arrays: one holding a string, a boolean, a null or a list
is left as parsed, so the checks (``data.coco_rle``, ``stats.coco_shapes``) name it as before;
a NaN or an out-of-range value is an array's, and refused by the same checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeGuard

import numpy as np

_NUMBERS = frozenset({int, float})  # exactly: a bool is an int to isinstance, not here
_KEYPOINT_DTYPES = (np.dtype(np.int64), np.dtype(np.float64))


def plain_numbers(values: object) -> bool:
    """A non-empty list of ints and floats only (a bool is not one: ``type``, not ``isinstance``)."""
    return type(values) is list and bool(values) and set(map(type, values)) <= _NUMBERS


def compact_shapes(obj: dict[str, Any]) -> dict[str, Any]:
    """``json``'s ``object_hook``: ``obj`` with its polygons and keypoints as arrays (see above)."""
    segmentation = obj.get("segmentation")
    if type(segmentation) is list and segmentation and all(plain_numbers(p) for p in segmentation):
        obj["segmentation"] = [np.array(p, dtype=np.float64) for p in segmentation]
    keypoints = obj.get("keypoints")
    if plain_numbers(keypoints):
        try:
            held = np.array(keypoints)
        except OverflowError:  # an integer past 64 bits: kept as parsed
            return obj
        if held.dtype in _KEYPOINT_DTYPES:  # not an object array of huge integers
            obj["keypoints"] = held
    return obj


def is_polygon_array(value: object) -> TypeGuard[np.ndarray]:
    """A polygon as :func:`compact_shapes` (or the YOLO layout's reader) holds it: float64, flat."""
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype == np.float64


def is_number_array(value: object) -> TypeGuard[np.ndarray]:
    """Keypoints as :func:`compact_shapes` holds them: a flat int64 or float64 array."""
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype in _KEYPOINT_DTYPES


def plain_lists(value: object) -> Any:
    """``json.dumps``' ``default`` for ground truth holding arrays: an array as the list of Python
    numbers it holds (float64 -> float, int64 -> int: the YOLO layout's polygons, floats made in
    float64, give the same JSON text as the lists they were before); a table of annotations
    (``data/annotation_table.py``) as the list of its dicts."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
