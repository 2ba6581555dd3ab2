"""COCO ground truth: the instances JSON read once, and checked (ids, boxes, categories, the image
fields a task needs) with one-line errors naming the entry instead of the reference tools' asserts.
The scorers (:mod:`evalharness.stats.coco_eval`, :mod:`evalharness.stats.coco_tool_ap`) check what
they are given with the same functions."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np

from evalharness.core.errors import DataError
from evalharness.core.untrusted import read_json
from evalharness.data.annotation_table import AnnotationTable, parsed_with_table
from evalharness.data.compact_shapes import is_number_array

_TOP_KEYS = ("images", "annotations", "categories")


_ANNOTATION_KEYS = ("id", "image_id", "category_id", "bbox", "area", "iscrowd")


_FORMAT_HINT = "COCO instances format: https://cocodataset.org/#format-data"


def load_annotations(path: str | Path, image_keys: tuple[str, ...] = ("id",)) -> dict[str, Any]:
    """A COCO instances JSON, checked so that a bad file fails here, by name, not deep in pycocotools.

    ``image_keys``: what every image must have; a caller that reads the images from disk passes
    :data:`IMAGE_FILE_KEYS`. The annotations are held as columns of numbers while the file is
    parsed (:mod:`evalharness.data.annotation_table`), a sequence of the dicts ``json`` made.
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise DataError(f"COCO annotation file {path} not found; give the path of an instances_*.json")
    fix = f"re-export or re-download it ({_FORMAT_HINT})"
    data = parsed_with_table(
        lambda hook: read_json(path, "COCO annotation file", fix=fix, object_hook=hook)
    )
    check_annotations(data, str(path), image_keys)
    require_boxes(data, f"COCO annotation file {path}", "give the instances file with the boxes")
    return cast("dict[str, Any]", data)  # check_annotations: a JSON object


def require_boxes(data: Mapping[str, Any], source: str, fix: str) -> None:
    """Ground truth without one box to score against would make AP undefined: refused, naming it."""
    if not any(not a["iscrowd"] for a in data["annotations"]):
        raise DataError(
            f"{source} holds no box to score against (no annotation, or only crowd regions): AP "
            f"would be undefined; {fix}"
        )


IMAGE_FILE_KEYS = ("id", "file_name", "width", "height")  # what reading an image from disk needs


def check_annotations(
    gt: object, source: str = "ground truth", image_keys: tuple[str, ...] = ("id",)
) -> None:
    """Raise DataError naming ``source``, the entry and what is wrong, before pycocotools sees it.

    pycocotools would KeyError on a missing key, and silently drop or duplicate boxes on the rest:
    an annotation of an unknown image or category, duplicate ids, a malformed box.
    """
    if not isinstance(gt, dict):
        raise DataError(f"{source} is a JSON {type(gt).__name__}, not an object; {_FORMAT_HINT}")
    missing = [key for key in _TOP_KEYS if not isinstance(gt.get(key), list | AnnotationTable)]
    if missing:
        raise DataError(f"{source} has no list {missing[0]!r} (needs {', '.join(_TOP_KEYS)}); {_FORMAT_HINT}")
    ids: dict[str, set[Any]] = {}
    for section, keys in (
        ("images", image_keys),
        ("categories", ("id", "name")),
        ("annotations", _ANNOTATION_KEYS),
    ):
        seen: set[Any] = set()
        for index, item in enumerate(gt[section]):
            absent = [key for key in keys if not isinstance(item, dict) or key not in item]
            if absent:
                raise DataError(f"{source}: {section}[{index}] lacks {absent[0]!r}; {_FORMAT_HINT}")
            problem = _id_problem(item["id"], seen)
            if problem:
                raise DataError(f"{source}: {section}[{index}] has {problem}; {_FORMAT_HINT}")
            seen.add(item["id"])
            problem = _image_problem(item) if section == "images" else None
            problem = _annotation_problem(item, ids) if section == "annotations" else problem
            if problem:
                raise DataError(f"{source}: {section}[{index}] has {problem}; {_FORMAT_HINT}")
        ids[section] = seen
    if "file_name" in image_keys:
        _one_id_per_file(gt["images"], source)


def _one_id_per_file(images: list[dict[str, Any]], source: str) -> None:
    """Two image ids naming one file would score that file twice (its boxes and its detections)."""
    first: dict[str, int] = {}
    for image in images:
        other = first.setdefault(image["file_name"], image["id"])
        if other != image["id"]:
            raise DataError(
                f"{source}: images {other} and {image['id']} name one file {image['file_name']!r}; "
                f"it would be scored twice; keep one entry per file. {_FORMAT_HINT}"
            )


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _id_problem(value: object, seen: set[Any]) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool):
        return f"id {value!r}, not an integer"
    return f"id {value} a second time (ids must be unique)" if value in seen else None


def _image_problem(image: dict[str, Any]) -> str | None:
    """width/height, where given, must be positive integers; file_name a non-empty string."""
    for key in ("width", "height"):
        value = image.get(key)
        if key in image and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
            return f"{key} {value!r}, not a positive integer"
    if "file_name" in image and not (isinstance(image["file_name"], str) and image["file_name"]):
        return f"file_name {image['file_name']!r}, not a file name"
    return None


def _annotation_problem(ann: dict[str, Any], ids: dict[str, set[Any]]) -> str | None:
    for key, section, what in (("image_id", "images", "image"), ("category_id", "categories", "category")):
        value = ann[key]
        if not isinstance(value, int) or isinstance(value, bool) or value not in ids[section]:
            return f"{key} {value!r}, which is the id of no {what} in {section!r}"
    bbox = ann["bbox"]
    if not (isinstance(bbox, list) and len(bbox) == 4 and all(_is_number(v) for v in bbox)):
        return f"bbox {bbox!r}; a box is [x, y, width, height], 4 finite numbers"
    if bbox[2] < 0 or bbox[3] < 0:
        return f"bbox {bbox!r} with a negative width or height"
    if not _is_number(ann["area"]) or ann["area"] < 0:
        return f"area {ann['area']!r}, not a number >= 0"
    if ann["iscrowd"] not in (0, 1):
        return f"iscrowd {ann['iscrowd']!r}; use 0 or 1"
    return None


def finite_keypoints(values: object) -> bool:
    """An annotation's ``keypoints`` are finite numbers: as parsed (a list), or as
    :func:`~evalharness.data.compact_shapes.compact_shapes` holds them (an array)."""
    if is_number_array(values):
        return bool(np.isfinite(values).all())
    return finite_numbers(values, len(values)) if isinstance(values, list | tuple) else False


def finite_numbers(values: object, n: int) -> bool:
    return (
        isinstance(values, list | tuple)
        and len(values) == n
        and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values)
    )
