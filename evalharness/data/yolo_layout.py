"""Ultralytics' YOLO detection layout found on disk: ``data.yaml`` (``path``, ``val``, ``names``),
``images/<split>/*.jpg`` and ``labels/<split>/*.txt`` (and ``kpt_shape`` of a pose dataset).

Why a layout of its own: every Ultralytics user holds COCO (and their own detection data) this way,
with no instances JSON. :func:`find_layout` says whether a path is one (detection without reading
a label), :func:`read_layout` reads data.yaml (an untrusted file: ``core.untrusted.read_yaml``) and
finds the split's two folders the way Ultralytics does (the last ``images`` of the image folder's
path replaced by ``labels``). The labels become COCO ground truth in :mod:`evalharness.data.yolo_labels`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalharness.core.documents import Assumed
from evalharness.core.errors import DataError
from evalharness.core.untrusted import read_yaml
from evalharness.data.splits import AUTO, DatasetSplitRecord, choose, is_split_name, split_assumption

DATA_YAML = "data.yaml"
_FIX = "write data.yaml as Ultralytics does (path:, val: images/val2017, names: [...])"


@dataclass(frozen=True)
class YoloLayout:
    data_yaml: Path
    images: Path  # the split's image folder
    labels: Path  # its label folder (one .txt per image)
    names: tuple[str, ...]  # class index -> name, as data.yaml lists them
    split: str  # the data.yaml key the image folder came from (or the image folder's name)
    notes: tuple[str, ...] = ()  # what was assumed finding the folders (said once by the caller)
    found: tuple[str, ...] = ()  # every split key data.yaml has (data/splits.py chose among them)
    how: str = "dataset.root names the split's image folder"  # why this split
    kpt_shape: tuple[int, int] | None = None  # a pose dataset's [keypoints, 2 or 3 values each]

    def split_record(self) -> DatasetSplitRecord:
        """``provenance.dataset.dataset_split`` of a YOLO run: the key read, the keys found."""
        return {"name": self.split, "found": list(self.found), "chosen": self.how, "shards": []}

    def assumption(self) -> Assumed | None:
        """What to say when dataset.split=auto read one split of several (else None)."""
        return split_assumption(str(self.data_yaml), self.split, self.found, self.how)


def find_layout(path: str | Path) -> Path | None:
    """The data.yaml of the YOLO layout ``path`` is, or None: ``path`` is a .yaml file, a folder
    holding data.yaml (or ``images/`` and ``labels/``), or an ``images/<split>`` folder with
    ``labels/<split>`` beside it (data.yaml two levels up). Only names are looked at, never a label."""
    p = Path(path)
    if p.suffix.lower() in (".yaml", ".yml") and not p.is_dir():
        return p
    if (p / DATA_YAML).is_file() or ((p / "images").is_dir() and (p / "labels").is_dir()):
        return p / DATA_YAML  # without data.yaml: the layout, whose missing names are then one error
    if p.parent.name == "images" and (p.parent.parent / "labels" / p.name).is_dir():
        return p.parent.parent / DATA_YAML
    return None


def labels_folder(images: Path) -> Path:
    """Ultralytics' rule (``img2label_paths``): the last ``images`` component becomes ``labels``."""
    parts = list(images.parts)
    for i in range(len(parts) - 1, -1, -1):
        if parts[i] == "images":
            parts[i] = "labels"
            return Path(*parts)
    raise DataError(
        f"YOLO image folder {images} has no 'images' component, so no labels/ folder beside it; "
        "keep images in images/<split> and labels in labels/<split>"
    )


def read_layout(path: str | Path, split: str = AUTO) -> YoloLayout:
    """The YOLO layout at ``path`` (see :func:`find_layout`), its names and the split's folders:
    ``split`` is ``dataset.split``, chosen among data.yaml's split keys (``train:``, ``val:``, ...)
    as every dataset's split is (:func:`evalharness.data.splits.choose`; auto: ``val``)."""
    data_yaml = find_layout(path)
    if data_yaml is None:
        raise DataError(f"{path}: no YOLO layout (no data.yaml, no images/ and labels/ folders); {_FIX}")
    data_yaml = Path(os.path.abspath(data_yaml))
    if not data_yaml.is_file():
        raise DataError(f"{data_yaml} not found (YOLO layout at {path}); {_FIX}")
    doc: dict[str, Any] = read_yaml(data_yaml, "YOLO data.yaml", fix=_FIX)
    names = _names(doc.get("names"), data_yaml)
    given = Path(path)
    notes: tuple[str, ...] = ()
    kpt_shape = _kpt_shape(doc.get("kpt_shape"), data_yaml)
    if given.is_dir() and given.parent.name == "images" and not (given / DATA_YAML).is_file():
        images = given.resolve()  # the image folder itself was named
        labels, folder = labels_folder(images), (given.name,)
        return YoloLayout(data_yaml, images, labels, names, given.name, notes, folder, kpt_shape=kpt_shape)
    found = tuple(k for k, v in doc.items() if isinstance(k, str) and is_split_name(k))
    if not found:
        raise DataError(f"{data_yaml}: no split key (val: images/<split>, train: ...); {_FIX}")
    key, how = choose(found, split, str(data_yaml))
    assert key is not None  # found holds names only
    images, notes = _split_folder(doc, data_yaml, key)
    if not images.is_dir():
        raise DataError(f"{data_yaml}: {key} image folder {images} not found; {_FIX}")
    return YoloLayout(data_yaml, images, labels_folder(images), names, key, notes, found, how, kpt_shape)


def _kpt_shape(value: object, data_yaml: Path) -> tuple[int, int] | None:
    """Ultralytics' pose datasets say ``kpt_shape: [K, 3]`` (x, y, visibility) or ``[K, 2]``: every
    label line is then a pose line. None: a detection or segment dataset."""
    if value is None:
        return None
    ok = isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
    if not ok or not (1 <= value[0] <= 1000 and value[1] in (2, 3)):  # type: ignore[index]
        raise DataError(
            f"{data_yaml}: kpt_shape {value!r} is not [keypoints, 2 or 3]; write kpt_shape: [17, 3] "
            "(COCO's 17 keypoints of x, y, visibility) as Ultralytics' pose datasets do"
        )
    return value[0], value[1]  # type: ignore[index]


def _names(value: object, data_yaml: Path) -> tuple[str, ...]:
    """``names`` as a list, or an {index: name} mapping with indices 0..n-1 (both Ultralytics forms)."""
    if isinstance(value, dict):
        if sorted(value) != list(range(len(value))) or not all(isinstance(k, int) for k in value):
            raise DataError(
                f"{data_yaml}: names keys {sorted(value, key=str)[:5]} are not the class indices "
                "0..n-1; number the classes from 0"
            )
        value = [value[i] for i in range(len(value))]
    if not isinstance(value, list) or not value:
        raise DataError(f"{data_yaml} has no names (the class list); add names: [person, bicycle, ...]")
    bad = [v for v in value if not isinstance(v, str | int | float) or isinstance(v, bool)]
    if bad:
        raise DataError(f"{data_yaml}: names holds {bad[0]!r}, not a class name; give one name per class")
    return tuple(str(v) for v in value)


def _split_folder(doc: dict[str, Any], data_yaml: Path, split: str) -> tuple[Path, tuple[str, ...]]:
    """The split's image folder: data.yaml's ``path`` (relative: to data.yaml's folder) joined with
    its ``val``; when that is not there but data.yaml's own folder holds it (a dataset moved from the
    machine that wrote ``path``), that folder, said."""
    folder = doc.get(split)
    if isinstance(folder, list) and len(folder) == 1:
        folder = folder[0]
    if not isinstance(folder, str) or not folder:
        raise DataError(
            f"{data_yaml}: {split!r} is {folder!r}, not one image folder; set {split}: images/<split>"
        )
    if folder.lower().endswith(".txt"):
        raise DataError(f"{data_yaml}: {split}: {folder} is an image list; give the image folder instead")
    here = data_yaml.resolve().parent
    base = doc.get("path")
    base_dir = here if not isinstance(base, str) or not base else here / os.path.expanduser(base)
    images = (base_dir / folder).resolve()
    if images.is_dir() or base_dir == here or not (here / folder).is_dir():
        return images, ()
    note = f"data.yaml path {base} has no {folder}; the folder of data.yaml ({here}) has it"
    return (here / folder).resolve(), (note,)
