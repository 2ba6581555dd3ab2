"""YOLO label files -> COCO ground truth (an instances dict pycocotools scores against).

The arithmetic is the exact inverse of Ultralytics' conversion, in float64 on the decimal text:
``x = (cx - w/2)*W``, ``y = (cy - h/2)*H``, ``width = w*W``, ``height = h*H`` (a segment line: its
bounding box, ``x = min(x_i)*W``, ``width = (max(x_i) - min(x_i))*W``) with W, H read from
the image file's header (pixels in stored order, as the run decodes them); ``area = width*height``
(COCO's own areas are segmentation areas, so its small/medium/large split can differ), ``iscrowd``
0 (the layout has no crowd regions). Class i becomes a COCO category id by the standard
80 -> 91 table (the bundled ``coco_labels_91.txt``: line i = category id i) when data.yaml's names
are COCO's 80 in order, else id i + 1. Image ids are the file names' numbers when every name is
one (COCO's val2017: the same ids as its instances JSON), else positions 1..N in name order.
A bad line is one error naming the file and the line.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from evalharness.core.errors import DataError
from evalharness.core.paths import BUNDLED_DIR
from evalharness.core.untrusted import MAX_NUMBER_CHARS, read_text
from evalharness.data.coco_annotations import IMAGE_FILE_KEYS, check_annotations, require_boxes
from evalharness.data.decode import image_size
from evalharness.data.ground_truth import DEFAULT_EXTENSIONS
from evalharness.data.labels import read_label_file
from evalharness.data.listing import list_images
from evalharness.data.splits import AUTO
from evalharness.data.yolo_layout import YoloLayout, read_layout

COORD_TOLERANCE = 1e-6  # how far past [0, 1] a normalised coordinate may lie (6-decimal writers)
_LINE = (
    "a detection label line is 'class cx cy w h' (5 numbers, coordinates in 0..1 of the image) or a "
    "segment 'class x1 y1 x2 y2 x3 y3 ...'"
)


@dataclass(frozen=True)
class YoloGroundTruth:
    annotations: dict[str, Any]  # COCO instances: images, annotations, categories
    sha256: str  # of the annotations as canonical JSON: the ground truth's identity, by content
    unlabeled: int  # images without a label file (no objects)
    orphan_labels: int  # label files without an image (not read)
    category_ids: str  # how class indices became category ids
    image_ids: str  # how image ids were given


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
        for cls, box in read_label_lines(label, len(layout.names)):
            annotations.append(_annotation(len(annotations) + 1, image_id, ids[cls], box, width, height))
    categories = [{"id": cid, "name": name} for cid, name in zip(ids, layout.names, strict=True)]
    doc = {"images": doc_images, "annotations": annotations, "categories": categories}
    digest = hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    id_how = "the file names' numbers" if numbered else "positions 1..N in file-name order"
    return YoloGroundTruth(doc, digest, unlabeled, orphans, how, id_how)


class CocoAnnotation(TypedDict):
    """One COCO instance annotation made from a YOLO label line (box in pixels, x y w h)."""

    id: int
    image_id: int
    category_id: int
    bbox: list[float]
    area: float
    iscrowd: int


def _annotation(
    ann_id: int, image_id: int, category: int, box: tuple[float, float, float, float], width: int, height: int
) -> CocoAnnotation:
    x0, y0, w, h = box
    x, y, bw, bh = x0 * width, y0 * height, w * width, h * height
    return {
        "id": ann_id,
        "image_id": image_id,
        "category_id": category,
        "bbox": [x, y, bw, bh],
        "area": bw * bh,
        "iscrowd": 0,
    }


def _orphan_labels(labels: Path, expected: set[str]) -> int:
    if not labels.is_dir():
        return 0
    return sum(1 for name in os.listdir(labels) if name.endswith(".txt") and name not in expected)


def read_label_lines(path: Path, classes: int) -> list[tuple[int, tuple[float, float, float, float]]]:
    """(class, (x0, y0, w, h)) normalised, of each non-blank line: a box ``class cx cy w h`` (x0 =
    cx - w/2), or a segment ``class x1 y1 x2 y2 x3 y3 ...`` as its bounding box (x0 = min x, w = max x
    - min x: Ultralytics' ``segments2boxes``, what its detection validation scores). A bad line is one
    DataError naming ``file:line``."""
    out = []
    for number, line in enumerate(read_text(path, "YOLO label file").splitlines(), start=1):
        tokens = line.split()
        if not tokens:
            continue
        where = f"{path}:{number}"
        if len(tokens) != 5 and (len(tokens) < 7 or len(tokens) % 2 == 0):
            raise DataError(f"{where}: {len(tokens)} numbers; {_LINE}")
        values = [_number(t, where) for t in tokens]
        cls = values[0]
        if not cls.is_integer() or not 0 <= cls < classes:
            raise DataError(
                f"{where}: class {tokens[0]} is not in data.yaml names (0..{classes - 1}); "
                "fix the line or add the class to names"
            )
        names = ("cx", "cy", "w", "h") if len(tokens) == 5 else ("x", "y") * (len(tokens) // 2)
        for what, value, token in zip(names, values[1:], tokens[1:], strict=True):
            if not -COORD_TOLERANCE <= value <= 1 + COORD_TOLERANCE:
                raise DataError(
                    f"{where}: {what} {token} is outside [0, 1] (tolerance {COORD_TOLERANCE:g}); {_LINE}"
                )
        if len(tokens) == 5:
            cx, cy, w, h = values[1:]
            out.append((int(cls), (cx - w / 2, cy - h / 2, w, h)))
        else:
            xs, ys = values[1::2], values[2::2]
            out.append((int(cls), (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))))
    return out


def _number(token: str, where: str) -> float:
    try:
        value = float(token) if len(token) <= MAX_NUMBER_CHARS and "_" not in token else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise DataError(f"{where}: {token[:40]!r} is not a finite number; {_LINE}")
    return value


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
