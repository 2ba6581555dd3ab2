"""YOLO label files -> COCO ground truth (an instances dict pycocotools scores against).

The arithmetic is the exact inverse of Ultralytics' conversion, in float64 on the decimal text:
``x = (cx - w/2)*W``, ``y = (cy - h/2)*H``, ``width = w*W``, ``height = h*H`` (a segment line: its
bounding box, ``x = min(x_i)*W``, ``width = (max(x_i) - min(x_i))*W``) with W, H read from
the image file's header (pixels in stored order, as the run decodes them); ``area = width*height``
(COCO's own areas are segmentation areas, so its small/medium/large split can differ), ``iscrowd``
0 (the layout has no crowd regions). A segment line's polygon becomes the annotation's
``segmentation`` (one polygon, ``x_i*W, y_i*H``), a pose line's keypoints its ``keypoints``
(``x*W, y*H, v``) with ``num_keypoints`` (those with v > 0) and, having no outline, ``area =
0.53*width*height``: the OKS scale Ultralytics' pose validation takes for COCO's segmentation area.
Class i becomes a COCO category id by the standard
80 -> 91 table (the bundled ``coco_labels_91.txt``: line i = category id i) when data.yaml's names
are COCO's 80 in order, else id i + 1. Image ids are the file names' numbers when every name is
one (COCO's val2017: the same ids as its instances JSON), else positions 1..N in name order.
A bad line is one error naming the file and the line.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from evalharness.core.errors import DataError
from evalharness.core.paths import BUNDLED_DIR
from evalharness.data.coco_annotations import IMAGE_FILE_KEYS, check_annotations, require_boxes
from evalharness.data.compact_shapes import plain_lists
from evalharness.data.decode import image_size
from evalharness.data.ground_truth import DEFAULT_EXTENSIONS
from evalharness.data.labels import read_label_file
from evalharness.data.listing import list_images
from evalharness.data.splits import AUTO
from evalharness.data.yolo_label_lines import LabelLine, read_label_lines
from evalharness.data.yolo_layout import YoloLayout, read_layout

# A pose line has a box but no outline: COCO's area (an OKS scale) is its segmentation's, so the
# annotation takes Ultralytics' estimate of it for OKS (``kpt_iou(..., area * 0.53)`` in its val).
POSE_AREA_PER_BOX_AREA = 0.53


@dataclass(frozen=True)
class YoloGroundTruth:
    annotations: dict[str, Any]  # COCO instances: images, annotations, categories
    sha256: str  # of the annotations as canonical JSON: the ground truth's identity, by content
    unlabeled: int  # images without a label file (no objects)
    orphan_labels: int  # label files without an image (not read)
    category_ids: str  # how class indices became category ids
    image_ids: str  # how image ids were given
    # the identity a run made before segment lines were kept as masks recorded (their boxes alone);
    # None when no line has a polygon (the two are then one)
    boxes_only_sha256: str | None = None


def coco_categories() -> list[tuple[int, str]]:
    """(category id, name) of COCO's 80 classes in Ultralytics' order, from the bundled 91-line map."""
    lines = read_label_file(os.path.join(BUNDLED_DIR, "coco_labels_91.txt"), "bundled COCO label map")
    return [(i, name) for i, name in enumerate(lines) if name != "???"]


def convert(layout: YoloLayout, unscored: Counter[str] | None = None) -> YoloGroundTruth:
    """The layout's images with their label files as COCO ground truth (see the module docstring)."""
    images = list_images(layout.images, DEFAULT_EXTENSIONS, unscored)
    if not images:
        raise DataError(f"no images ({', '.join(DEFAULT_EXTENSIONS)}) in {layout.images}; check data.yaml")
    coco = coco_categories()
    if tuple(name for _, name in coco) == layout.names:
        ids, how = [cid for cid, _ in coco], "COCO's 80 names: the standard 80 -> 91 table"
    else:
        ids, how = list(range(1, len(layout.names) + 1)), "not COCO's 80 names: class index + 1"
    stems = [os.path.splitext(name)[0] for name in images]
    numbered = all(s.isdigit() and len(s) <= 18 for s in stems) and len({int(s) for s in stems}) == len(stems)
    image_ids = [int(s) for s in stems] if numbered else list(range(1, len(images) + 1))
    label_names = {os.path.splitext(n)[0] + ".txt" for n in images}
    orphans = _orphan_labels(layout.labels, label_names)
    doc_images: list[dict[str, Any]] = []
    annotations: list[CocoAnnotation] = []
    unlabeled = 0
    for name, image_id in zip(images, image_ids, strict=True):
        width, height = image_size(str(layout.images / name))
        doc_images.append({"id": image_id, "file_name": name, "width": width, "height": height})
        label = layout.labels / (os.path.splitext(name)[0] + ".txt")
        if not os.path.lexists(label):  # a FIFO or broken link named so is read, and refused, by name
            unlabeled += 1
            continue
        for line in read_label_lines(label, len(layout.names), layout.kpt_shape):
            ann_id = len(annotations) + 1
            annotations.append(_annotation(ann_id, image_id, ids[line.cls], line, width, height))
    categories = [{"id": cid, "name": name} for cid, name in zip(ids, layout.names, strict=True)]
    doc = {"images": doc_images, "annotations": annotations, "categories": categories}
    id_how = "the file names' numbers" if numbered else "positions 1..N in file-name order"
    polygons = any("segmentation" in a for a in annotations)
    boxes_only = {**doc, "annotations": [_without_polygon(a) for a in annotations]} if polygons else None
    return YoloGroundTruth(
        doc, _digest(doc), unlabeled, orphans, how, id_how, _digest(boxes_only) if boxes_only else None
    )


def _digest(doc: dict[str, Any]) -> str:
    """The annotations' identity: their canonical JSON (a polygon array as the list of floats it
    holds: the same text as before polygons were held as arrays)."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=plain_lists)
    return hashlib.sha256(text.encode()).hexdigest()


def _without_polygon(ann: CocoAnnotation) -> dict[str, Any]:
    return {k: v for k, v in ann.items() if k != "segmentation"}


class _BoxAnnotation(TypedDict):
    """One COCO instance annotation made from a YOLO label line (box in pixels, x y w h)."""

    id: int
    image_id: int
    category_id: int
    bbox: list[float]
    area: float
    iscrowd: int


class CocoAnnotation(_BoxAnnotation, total=False):
    """The box and, from a segment or pose line, its shape as COCO's instances JSON holds it."""

    # a segment line's polygon, x y x y ... in pixels: float64, as data/compact_shapes.py holds an
    # instances JSON's (a list of floats is 4x the memory)
    segmentation: list[np.ndarray]
    keypoints: list[float]  # a pose line's keypoints, x y v x y v ... in pixels
    num_keypoints: int  # how many are labelled (v > 0): pycocotools ignores a person with none


def _annotation(
    ann_id: int, image_id: int, category: int, line: LabelLine, width: int, height: int
) -> CocoAnnotation:
    x0, y0, w, h = line.box
    x, y, bw, bh = x0 * width, y0 * height, w * width, h * height
    ann: CocoAnnotation = {
        "id": ann_id,
        "image_id": image_id,
        "category_id": category,
        "bbox": [x, y, bw, bh],
        "area": bw * bh,
        "iscrowd": 0,
    }
    if line.polygon is not None:
        polygon = np.array(line.polygon, dtype=np.float64) * (width, height)  # x*W, y*H: float64, exact
        ann["segmentation"] = [polygon.reshape(-1)]
    if line.keypoints is not None:
        ann["keypoints"] = [v for kx, ky, kv in line.keypoints for v in (kx * width, ky * height, kv)]
        ann["num_keypoints"] = sum(kv > 0 for _, _, kv in line.keypoints)
        ann["area"] = bw * bh * POSE_AREA_PER_BOX_AREA
    return ann


def _orphan_labels(labels: Path, expected: set[str]) -> int:
    if not labels.is_dir():
        return 0
    return sum(1 for name in os.listdir(labels) if name.endswith(".txt") and name not in expected)


def yolo_ground_truth(
    path: str | Path, unscored: Counter[str] | None = None, split: str = AUTO
) -> tuple[YoloLayout, YoloGroundTruth]:
    """The YOLO layout at ``path`` and its labels as checked COCO ground truth (the live run and a
    rescore call this alike; the rescore compares :attr:`YoloGroundTruth.sha256` with the run's);
    ``split``: ``dataset.split`` (a rescore: the split the run read)."""
    layout = read_layout(path, split)
    truth = convert(layout, unscored)
    check_annotations(truth.annotations, f"YOLO labels {layout.labels}", IMAGE_FILE_KEYS)
    require_boxes(truth.annotations, f"YOLO labels {layout.labels}", "give the labels of these images")
    return layout, truth
