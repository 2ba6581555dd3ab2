"""What a dataset path is, as ``evalharness inspect PATH`` shows it: the format found, the samples,
the classes, the first sample ids and what a run over it would score, read by the same readers a
run uses (so a bad file is the same one error here as in the run).

One function answers, :func:`describe_dataset`; each format answers through a describer registered
in :data:`DESCRIBERS` (``path -> DatasetView | None``, None: not this format). A reader of another
container (parquet, webdataset shards, TFRecords) plugs in with one
``@DESCRIBERS.register("<format>")`` function; the folder describer is asked last, as the fallback.
"""

from __future__ import annotations

import copy
import glob
import os
import stat
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from evalharness.core.errors import DataError
from evalharness.core.registry import Registry
from evalharness.data.ground_truth import DEFAULT_EXTENSIONS, INDEX_LABEL, detect_format, load_ground_truth
from evalharness.data.labels import read_label_file
from evalharness.data.listing import list_entries, list_images, own_files_scored
from evalharness.data.yolo_labels import yolo_ground_truth
from evalharness.data.yolo_layout import find_layout

FIRST = 5  # how many class names and sample ids a view lists
FALLBACK = "folder"


class DatasetViewRecord(TypedDict):
    """A dataset as ``inspect --json`` prints it (the fields of :class:`DatasetView`)."""

    format: str
    path: str
    samples: int
    classes: int
    class_names: list[str]
    first_ids: list[str]
    ground_truth: str
    scores: str
    run: str
    details: dict[str, Any]


@dataclass(frozen=True)
class DatasetView:
    format: str  # the format found (the dataset.format a run takes)
    path: str
    samples: int
    classes: int
    class_names: list[str]  # the first few
    first_ids: list[str]  # the first few sample ids, in the order a run lists them
    ground_truth: str  # where the answers come from
    scores: str  # what a run over it would score
    run: str  # the command-line settings of that run
    details: dict[str, Any] = field(default_factory=dict)  # the format's own facts

    def as_dict(self) -> DatasetViewRecord:
        """``inspect --json`` of a dataset: every field, copied (as ``dataclasses.asdict`` would)."""
        return {
            "format": self.format,
            "path": self.path,
            "samples": self.samples,
            "classes": self.classes,
            "class_names": list(self.class_names),
            "first_ids": list(self.first_ids),
            "ground_truth": self.ground_truth,
            "scores": self.scores,
            "run": self.run,
            "details": copy.deepcopy(self.details),
        }


Describer = Callable[[Path], "DatasetView | None"]
# containers (parquet, webdataset, TFRecord) are described by the reader a run uses, imported when asked
DESCRIBERS: Registry[Describer] = Registry(
    "dataset format", lazy={"container": "evalharness.data.describe_container:describe_container"}
)


def describe_dataset(path: str | os.PathLike[str]) -> DatasetView:
    """The view of the first describer that recognises ``path`` (the folder fallback last)."""
    p = Path(path)
    if not os.path.lexists(p) and not glob.has_magic(str(p)) and "{" not in str(p):  # shard patterns
        raise DataError(f"{p} not found; give a dataset folder, a data.yaml or an instances JSON")
    names = [n for n in DESCRIBERS.names() if n != FALLBACK] + [FALLBACK]
    for name in names:
        view = DESCRIBERS.get(name)(p)
        if view is not None:
            return view
    raise DataError(
        f"{p} is no dataset evalharness reads (formats: {', '.join(names)}); give a folder of images "
        "with its ground truth, a YOLO data.yaml or a COCO instances JSON"
    )


@DESCRIBERS.register("yolo")
def _yolo(path: Path) -> DatasetView | None:
    if find_layout(path) is None:
        return None
    unscored: Counter[str] = Counter()
    layout, truth = yolo_ground_truth(path, unscored)
    doc = truth.annotations
    shapes = ("", "")  # what segment or pose lines add: to the ground truth, to what a run scores
    if layout.kpt_shape:
        kpt = list(layout.kpt_shape)
        shapes = (f" and keypoints (kpt_shape {kpt})", ", keypoint AP (OKS) of a pose model")
    elif any("segmentation" in a for a in doc["annotations"]):
        shapes = (" and masks (segment lines)", ", mask AP (iouType segm) of a seg model")
    return DatasetView(
        "yolo",
        str(path),
        len(doc["images"]),
        len(layout.names),
        list(layout.names[:FIRST]),
        [i["file_name"] for i in sorted(doc["images"], key=lambda i: i["id"])[:FIRST]],
        f"YOLO labels {layout.labels} (data.yaml {layout.data_yaml}), converted to COCO boxes"
        f"{shapes[0]} in pixels",
        f"COCO bbox AP (pycocotools' 12 stats) of a detector{shapes[1]}",
        f"task=coco dataset=yolo dataset.root={path}",
        {
            "images": str(layout.images),
            "objects": len(doc["annotations"]),
            "images_without_labels": truth.unlabeled,
            "labels_without_image": truth.orphan_labels,
            "category_ids": truth.category_ids,
            "image_ids": truth.image_ids,
            "not_scored": dict(sorted(unscored.items())),
            **({"notes": list(layout.notes)} if layout.notes else {}),
        },
    )


@DESCRIBERS.register("coco_json")
def _coco_json(path: Path) -> DatasetView | None:
    if path.suffix.lower() != ".json" or path.is_dir():
        return None
    from evalharness.data.coco_annotations import load_annotations

    doc = load_annotations(path)
    names = [c["name"] for c in sorted(doc["categories"], key=lambda c: c["id"])]
    images = sorted(doc["images"], key=lambda i: i["id"])
    return DatasetView(
        "coco_json",
        str(path),
        len(images),
        len(names),
        names[:FIRST],
        [str(i.get("file_name", i["id"])) for i in images[:FIRST]],
        f"COCO instances JSON {path}",
        "COCO bbox AP (pycocotools' 12 stats) of a detector",
        f"task=coco dataset.format=coco dataset.annotations={path} "
        "dataset.root=<the folder or container of its images>",
        {
            "objects": sum(not a["iscrowd"] for a in doc["annotations"]),
            "crowd_regions": sum(bool(a["iscrowd"]) for a in doc["annotations"]),
        },
    )


@DESCRIBERS.register(FALLBACK)
def _folder(path: Path) -> DatasetView | None:
    """A folder of images with its csv or val.txt-style list, class folders, or images alone."""
    if not path.is_dir():
        return None
    ground_truth = _ground_truth_file(path)
    if ground_truth is None:
        return _class_folders(path) if _subfolders(path) else _images_only(path)
    path, notes = _images_of(path, ground_truth)
    fmt = detect_format(str(ground_truth))
    if fmt != "csv":  # class indices or lines: the class list is a run's own setting
        return _index_list(path, ground_truth, fmt, notes)
    unscored: Counter[str] = Counter()
    samples = load_ground_truth(fmt, str(path), str(ground_truth), None, None, None, unscored=unscored)
    own_files_scored(str(path), unscored, [str(ground_truth)])
    labels = Counter(s.label if s.label != INDEX_LABEL else f"class index {s.index}" for s in samples)
    return _classified(
        path,
        fmt,
        len(samples),
        list(labels),
        [s.key for s in samples],
        f"csv {ground_truth}",
        f" dataset.ground_truth={ground_truth}",
        {"not_scored": dict(sorted(unscored.items())), **_notes(notes)},
    )


def _images_of(folder: Path, ground_truth: Path) -> tuple[Path, list[str]]:
    """(the folder holding the images, notes): a ground-truth list with no image beside it and one
    subfolder of images (ILSVRC's ``val.txt`` beside ``val50/``) is described as that pair, said;
    several such subfolders: one error naming them."""
    if ground_truth.parent != folder or list_images(folder, DEFAULT_EXTENSIONS):
        return folder, []
    holders = [d for d in _subfolders(folder) if list_images(folder / d, DEFAULT_EXTENSIONS)]
    if len(holders) == 1:
        images = folder / holders[0]
        return images, [
            f"no images in {folder}: described as {holders[0]}/ (the one subfolder holding images) with "
            f"{ground_truth.name}; the run below passes both"
        ]
    if holders:  # which one is the user's is not guessed (as two ground-truth files are not)
        raise DataError(
            f"no images in {folder}; the images are in one of {', '.join(h + '/' for h in holders)}: "
            f"inspect that folder, and give a run dataset.root=<it> dataset.ground_truth={ground_truth}"
        )
    return folder, []


class _Notes(TypedDict, total=False):
    notes: list[str]  # what a describer noticed; absent when nothing


def _notes(notes: list[str]) -> _Notes:
    return {"notes": notes} if notes else {}


def _classified(
    path: Path,
    fmt: str,
    count: int,
    classes: list[str],
    ids: list[str],
    gt: str,
    setting: str,
    details: dict[str, Any],
) -> DatasetView:
    return DatasetView(
        fmt,
        str(path),
        count,
        len(classes),
        classes[:FIRST],
        ids[:FIRST],
        gt,
        "top-1..K accuracy of a classifier",
        f"task=imagenet dataset=imagefolder dataset.root={path}{setting}",
        details,
    )


def _ground_truth_file(folder: Path) -> Path | None:
    """The one csv or val.txt in the folder, else the one beside it (datasets/sample: images/ +
    labels.csv); two in one place are ambiguous, one error."""
    for place in (folder, folder.parent):
        found = [place / n for n, _ in list_entries(place) if n.lower().endswith(".csv") or n == "val.txt"]
        if len(found) > 1:
            names = ", ".join(p.name for p in found)
            raise DataError(
                f"{place} holds {len(found)} ground-truth files ({names}); keep one beside the images "
                "or give a run dataset.ground_truth="
            )
        if found:
            return found[0]
    return None


def _subfolders(folder: Path) -> list[str]:
    return [n for n, m in list_entries(folder) if not isinstance(m, str) and stat.S_ISDIR(m)]


def _class_folders(folder: Path) -> DatasetView | None:
    """root/<class>/<image>: the folder names are the classes (WordNet ids: named by synset_words)."""
    per_class = {d: list_images(folder / d, DEFAULT_EXTENSIONS) for d in _subfolders(folder)}
    ids = [f"{d}/{name}" for d, names in per_class.items() for name in names]
    if not ids:
        return None
    classes = [d for d, names in per_class.items() if names]
    return _classified(
        folder, "imagefolder", len(ids), classes, ids, "class folders (folder name = class)", "", {}
    )


def _images_only(folder: Path) -> DatasetView | None:
    images = list_images(folder, DEFAULT_EXTENSIONS)
    if not images:
        return None
    return DatasetView(
        "images",
        str(folder),
        len(images),
        0,
        [],
        images[:FIRST],
        "none (no csv, val.txt or class folders)",
        "speed only (no ground truth)",
        f"task=benchmark dataset=imagefolder dataset.root={folder}",
    )


def _index_list(folder: Path, ground_truth: Path, fmt: str, notes: list[str]) -> DatasetView:
    """A val.txt-style list ("<image> <class index>"): its images and indices; the class names come
    from the class list a run is given (dataset.class_names=...), so the indices are shown."""
    images = set(list_images(folder, DEFAULT_EXTENSIONS))
    rows = [line.split() for line in read_label_file(str(ground_truth), "ground-truth file") if line.strip()]
    pairs = sorted((r[0], r[1]) for r in rows if len(r) == 2 and r[0] in images)
    indices = list(Counter(index for _, index in pairs))
    words = ground_truth.parent / "synset_words.txt"  # ILSVRC's class list, where it was kept beside
    names = f"dataset.synset_words={words}" if words.is_file() else "dataset.class_names=<the class list>"
    return _classified(
        folder,
        fmt,
        len(pairs),
        [f"class index {i}" for i in indices],
        [name for name, _ in pairs],
        f"{fmt} {ground_truth} (class indices: names from {names.partition('=')[0]})",
        f" dataset.ground_truth={ground_truth} {names}",
        {"lines": len(rows), "images_in_folder": len(images), **_notes(notes)},
    )
