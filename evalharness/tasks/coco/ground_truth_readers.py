"""Detection ground truth beside the images, whatever layout holds it: a COCO instances JSON next to
an image folder, or an Ultralytics YOLO layout (data.yaml, images/, labels/) converted to the same
COCO annotations. One reader per layout, picked by ``dataset.format`` from one registry
(:data:`DETECTION_TRUTH`), as a classification dataset's reader is (``data/dataset_reader.py``);
kept in the task's folder, which alone names its formats.

A reader gives the run its ground truth (:meth:`DetectionTruthReader.read`: the annotations, the
image folder, what to record and assume) and gives a rescore the same annotations again
(:meth:`DetectionTruthReader.read_again`), refused when they changed since the run. Why a registry:
the run and the rescorer asked ``format == "yolo"`` each; a layout added is one reader here.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from evalharness.core.checksum import optional_sha256, sha256_file
from evalharness.core.documents import Assumed
from evalharness.core.errors import ConfigError
from evalharness.core.registry import Registry
from evalharness.data.coco_annotations import IMAGE_FILE_KEYS, load_annotations
from evalharness.data.dataset_reader import FOLDER, detect
from evalharness.data.ground_truth import DEFAULT_EXTENSIONS
from evalharness.data.listing import list_images
from evalharness.data.yolo_labels import yolo_ground_truth
from evalharness.data.yolo_layout import find_layout


@dataclass(frozen=True)
class DetectionTruth:
    """Where a run's COCO ground truth came from: an instances JSON beside an image folder, or a
    YOLO layout converted (``data.yolo_labels``); what it recorded and assumed."""

    annotations: dict[str, Any]
    root: str  # the image folder
    ground_truth: str  # what a rescore reads again
    sha256: str | None
    unscored: Counter[str]
    record: dict[str, Any]  # provenance.dataset's own fields of the format
    assumptions: list[Assumed]
    format: str  # the reader's name (provenance.dataset.format): what a rescore reads it again with


Reread = tuple[dict[str, Any], str | None]  # (annotations, their sha256 to compare; None: not checked)


class DetectionTruthReader:
    """The contract: ``read`` for the run (``dataset``: the typed group, DatasetSchema extended with
    the COCO task's fields), ``read_again`` for a rescore of it ((annotations, their sha256 as the
    run recorded it; None: not checked))."""

    name: ClassVar[str]

    @classmethod
    def detects(cls, root: str) -> str | None:
        """Why ``root`` is this layout, told by its names alone (``dataset.format=auto`` with no
        instances JSON given), or None: not one, or a layout never guessed."""
        return None

    def read(self, dataset: Any, assumptions: list[Assumed]) -> DetectionTruth:
        raise NotImplementedError

    def read_again(self, ground_truth: str, split: str | None, recorded: str | None) -> Reread:
        raise NotImplementedError


DETECTION_TRUTH: Registry[type[DetectionTruthReader]] = Registry(
    "detection ground truth format", base=DetectionTruthReader
)


def detected_layout(dataset: Any, exclude: str | None = None) -> tuple[str, str | None]:
    """(the reader's name, why) of ``dataset.format=auto``: the instances JSON when one is given,
    else the first layout whose reader detects ``dataset.root`` (said), else the instances JSON
    (which then asks for one: why None). ``exclude``: a reader not to name (the one that read)."""
    if dataset.annotations and exclude is None:
        return "coco", None
    for name in DETECTION_TRUTH.names():
        why = DETECTION_TRUTH.get(name).detects(dataset.root) if name != exclude else None
        if why is not None:
            return name, why
    return "coco", None


def unannotated_files(annotations: dict[str, Any], root: str) -> Counter[str]:
    """Files directly in ``root`` that no annotation names, by reason (they are never scored)."""
    unscored: Counter[str] = Counter()
    named = {img["file_name"] for img in annotations["images"]}
    images = list_images(Path(root), DEFAULT_EXTENSIONS, unscored)
    unscored["image not in the annotations"] += sum(name not in named for name in images)
    return +unscored


@DETECTION_TRUTH.register("coco")
class InstancesJson(DetectionTruthReader):
    """``dataset.annotations``: a COCO instances JSON naming the images under ``dataset.root``."""

    name = "coco"

    def read(self, dataset: Any, assumptions: list[Assumed]) -> DetectionTruth:
        ann_path = dataset.annotations
        folder = detect(dataset.root)[0] == FOLDER  # else a container of the images (tasks/coco/images.py)
        if dataset.split != "auto" and folder:  # the JSON names its images: no split to choose
            raise ConfigError(
                f"dataset.split={dataset.split} chooses a split of a YOLO layout or a container; an "
                "instances JSON names its own images: set dataset.split=auto"
            )
        if not ann_path:
            raise ConfigError(
                "task=coco needs dataset.annotations=<instances JSON> (e.g. dataset=coco_sample), or "
                "dataset.root=<a YOLO layout: data.yaml, images/, labels/>"
            )
        annotations = load_annotations(ann_path, image_keys=IMAGE_FILE_KEYS)
        unscored = unannotated_files(annotations, dataset.root) if folder else Counter()
        sha = optional_sha256(ann_path)
        return DetectionTruth(annotations, dataset.root, ann_path, sha, unscored, {}, assumptions, self.name)

    def read_again(self, ground_truth: str, split: str | None, recorded: str | None) -> Reread:
        return load_annotations(ground_truth), sha256_file(ground_truth) if recorded else None


@DETECTION_TRUTH.register("yolo")
class YoloLayoutTruth(DetectionTruthReader):
    """The labels of the Ultralytics layout at ``dataset.root``, converted to COCO annotations."""

    name = "yolo"

    @classmethod
    def detects(cls, root: str) -> str | None:
        found = find_layout(root) is not None
        return f"{root} is an Ultralytics YOLO layout (data.yaml, labels/ beside images/)" if found else None

    def read(self, dataset: Any, assumptions: list[Assumed]) -> DetectionTruth:
        if dataset.annotations:  # two ground truths for one run: which one scores must not be a guess
            raise ConfigError(
                f"dataset.format=yolo reads the labels of the layout at dataset.root, but "
                f"dataset.annotations={dataset.annotations} is set too; give dataset.annotations=null, or "
                "dataset.format=coco to score the instances JSON"
            )
        root = dataset.root
        unscored: Counter[str] = Counter()
        layout, truth = yolo_ground_truth(root, unscored, dataset.split)
        chose = layout.assumption()  # dataset.split=auto read val of several keys: said
        assumptions += [chose] if chose else []
        facts = {
            "data_yaml": str(layout.data_yaml),
            "labels": str(layout.labels),
            "category_ids": truth.category_ids,
            "image_ids": truth.image_ids,
            "images_without_labels": truth.unlabeled,
            "labels_without_image": truth.orphan_labels,
        }
        said = [
            (note, "data.yaml path: does not hold the split", "path: in data.yaml") for note in layout.notes
        ]
        if truth.unlabeled:
            why = "no label file, no objects: Ultralytics' rule"
            fix = f"{layout.labels}/<image stem>.txt for them"
            said.append((f"{truth.unlabeled} image(s) without a label file have no objects", why, fix))
        if truth.orphan_labels:
            why = f"{layout.labels} holds them, {layout.images} no image of that stem"
            said.append(
                (f"{truth.orphan_labels} label file(s) without an image are not read", why, "dataset.root")
            )
        assumptions += [{"what": "YOLO labels", "assumed": a, "why": why, "fix": fix} for a, why, fix in said]
        return DetectionTruth(
            truth.annotations,
            str(layout.images),
            os.path.abspath(root),
            truth.sha256,
            +unscored,
            {"yolo": facts, "dataset_split": layout.split_record()},
            assumptions,
            self.name,
        )

    def read_again(self, ground_truth: str, split: str | None, recorded: str | None) -> Reread:
        """The layout's labels converted again, compared by content."""
        truth = yolo_ground_truth(ground_truth, split=split or "auto")[1]
        if recorded and recorded == truth.boxes_only_sha256:  # a run from before polygons were kept
            return truth.annotations, recorded
        return truth.annotations, truth.sha256
