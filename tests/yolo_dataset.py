"""A COCO instances JSON + its images written as an Ultralytics YOLO layout (data.yaml, images/val2017,
labels/val2017) with the exact inverse of the reader's arithmetic: ``cx = (x + w/2)/W``, ``w = w/W``
(float64, written with ``repr`` so the text round-trips). Crowd regions are left out, as Ultralytics'
own converter does, so the layout's ground truth is the JSON's without them (:func:`without_crowd`).

``python tests/yolo_dataset.py INSTANCES IMAGES OUT`` writes one (the docs' runnable example).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml


def without_crowd(instances: dict) -> dict:
    return {**instances, "annotations": [a for a in instances["annotations"] if not a["iscrowd"]]}


def box_line(a: dict, W: int, H: int) -> list[float]:  # noqa: N803 - the arithmetic's own names
    """``cx cy w h`` of an annotation's box, exact."""
    x, y, w, h = a["bbox"]
    return [(x + w / 2) / W, (y + h / 2) / H, w / W, h / H]


def write_layout(
    instances: dict,
    images: Path,
    out: Path,
    split: str = "val2017",
    line=box_line,
    number: str = "{!r}",
    **yaml_extra,
) -> Path:
    """``out/data.yaml`` with the categories' names in ascending id order (COCO's 80: Ultralytics'
    order); one label file per image that has boxes, ``line(annotation, W, H)`` the numbers after the
    class, each written by ``number``; images symlinked. Returns data.yaml."""
    categories = sorted(instances["categories"], key=lambda c: c["id"])
    index = {c["id"]: i for i, c in enumerate(categories)}
    (out / "images" / split).mkdir(parents=True)
    (out / "labels" / split).mkdir(parents=True)
    lines: dict[int, list[str]] = {}
    for a in without_crowd(instances)["annotations"]:
        lines.setdefault(a["image_id"], []).append(a)
    for image in instances["images"]:
        os.symlink(Path(images, image["file_name"]).resolve(), out / "images" / split / image["file_name"])
        W, H = image["width"], image["height"]  # noqa: N806 - the arithmetic's own names
        rows = []
        for a in lines.get(image["id"], []):
            rows.append(" ".join([str(index[a["category_id"]]), *(number.format(v) for v in line(a, W, H))]))
        if rows:
            label = out / "labels" / split / (os.path.splitext(image["file_name"])[0] + ".txt")
            label.write_text("\n".join(rows) + "\n")
    names = {i: c["name"] for i, c in enumerate(categories)}
    data = {"path": ".", "val": f"images/{split}", "names": names, **yaml_extra}
    (out / "data.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return out / "data.yaml"


if __name__ == "__main__":
    instances_path, images_dir, target = sys.argv[1:4]
    print(write_layout(json.loads(Path(instances_path).read_text()), Path(images_dir), Path(target)))
