"""Where a detection run's images lie: the files its ground truth names under a folder, or the
members of a container (webdataset tar, Hugging Face parquet, TFDS TFRecord, a plug-in reader's)
found by the file names its ground truth gives.

Why the ground truth stays beside a container: the COCO instances JSON is what detection datasets
are shipped and scored with (pycocotools reads it: crowd regions, areas, category ids), and no
container format carries it one way (Hugging Face's ``objects`` columns, TFDS's normalised
``objects/bbox``, a webdataset's per-image ``.json`` differ from dataset to dataset and drop what
COCO's AP needs). So a container is read for its images alone (``ReadRequest.labelled`` False) by
the same reader contract as a classification run's, and each annotated image is paired with the
member whose id is its ``file_name``, or else whose id ends in that file name (a member names one
image once). A sample's id stays the annotation's ``file_name``: the records, manifests and
comparisons of a run over a container equal those of the same images in a folder.
"""

from __future__ import annotations

import os
import posixpath
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from evalharness.core.documents import Assumed
from evalharness.core.errors import DataError
from evalharness.data.dataset_reader import FOLDER, DatasetReader, ReadRequest, detect, reader_for
from evalharness.data.ground_truth import LabeledSample, Member
from evalharness.data.run_images import by_file_name, find_listed
from evalharness.data.sample_image import SampleImage, file_image


@dataclass(frozen=True)
class CocoSample:
    path: str  # its file, or ``shard:member`` inside a container
    key: str  # file_name as in the annotations
    image_id: int
    width: int
    height: int
    stored: LabeledSample | None = None  # the container's sample holding it; None: its own file

    @property
    def source(self) -> str | Member:
        """Where its bytes lie (manifests, the tensor cache): its file, or its container member."""
        return self.path if self.stored is None or self.stored.member is None else self.stored.member


def sample_entry(sample: CocoSample) -> tuple[str, str | Member]:
    """A sample's manifest entry: its annotation file name and its file, or its member."""
    return sample.key, sample.source


def annotated_images(
    annotations: dict[str, Any], find: Callable[[str], tuple[str, LabeledSample | None] | None]
) -> tuple[list[CocoSample], list[str]]:
    """Every annotated image in ascending image id that ``find`` (file name -> (path, the
    container's sample) or None) finds, and the file names it does not."""
    samples, missing = [], []
    for img in sorted(annotations["images"], key=lambda i: int(i["id"])):
        found = find(img["file_name"])
        if found is None:
            missing.append(img["file_name"])
            continue
        path, stored = found
        samples.append(
            CocoSample(path, img["file_name"], int(img["id"]), int(img["width"]), int(img["height"]), stored)
        )
    return samples, missing


def checked(samples: list[CocoSample], missing: list[str], annotations: str, where: str, fix: str) -> None:
    """An annotated image the images lack is an error (never a smaller set scored silently)."""
    if missing:
        raise DataError(
            f"{len(missing)} image(s) listed in {annotations} are not in {where} (first: {missing[0]}); {fix}"
        )
    if not samples:
        raise DataError(f"{annotations} lists no images")


def folder_samples(
    annotations: dict[str, Any], root: str, annotations_path: str, other_layout: str | None
) -> list[CocoSample]:
    """Every annotated image under the folder ``root``, ascending image id; ``other_layout``: the
    fix to say when none is there because ``root`` is another layout of ground truth."""
    if not os.path.isdir(root):
        raise DataError(f"image directory not found: {root} (set dataset.root=...)")

    def find(name: str) -> tuple[str, None] | None:
        path = os.path.join(root, name)
        return (path, None) if os.path.isfile(path) else None

    samples, missing = annotated_images(annotations, find)
    fix = "point dataset.root at the images of these annotations"
    fix = other_layout if not samples and other_layout else fix
    checked(samples, missing, annotations_path, root, fix)
    return samples


def container_of_images(dataset: Any, unscored: Counter[str]) -> tuple[DatasetReader, Assumed | None] | None:
    """The reader of the container at ``dataset.root`` (detected as a classification run detects
    it, said once), for its images alone; None: ``dataset.root`` is a folder of image files."""
    kind, why = detect(dataset.root)
    if kind == FOLDER:
        return None
    request = ReadRequest(
        dataset.root,
        unscored=unscored,
        index_dir=getattr(dataset, "index_dir", None),
        split=dataset.split,
        labelled=False,
    )
    reader, _ = reader_for(kind, request)
    said: Assumed = {
        "what": "images",
        "assumed": f"the {kind} members, paired with the annotations by file name",
        "why": str(why),
        "fix": "dataset.root=<the folder of the images>",
    }
    return reader, said


def container_samples(
    annotations: dict[str, Any], reader: DatasetReader, annotations_path: str, unscored: Counter[str]
) -> tuple[list[CocoSample], Sequence[LabeledSample]]:
    """(every annotated image found in the container, ascending image id; every sample it lists):
    an annotated file name is a member's id, or the file name one member's id ends in; members no
    annotation names are counted as not scored."""
    listed = reader.samples()
    by_key = {s.key: s for s in listed}
    by_name = by_file_name(listed)

    def find(name: str) -> tuple[str, LabeledSample] | None:
        stored = find_listed(by_key, by_name, name)
        return None if stored is None else (stored.path, stored)

    where = f"the {reader.name} shards of {reader.request.root}"
    samples, missing = annotated_images(annotations, find)
    fix = "point dataset.root at the container of these images (ids or file names as the JSON names them)"
    checked(samples, missing, annotations_path, where, fix)
    # ids are unique in a container (refuse_repeated_ids): the members named are counted by id (a
    # listed sample is made anew each time it is read, so never by identity)
    not_named = len(listed) - len({s.stored.key for s in samples if s.stored is not None})
    if not_named:
        unscored["image not in the annotations"] += not_named
    return samples, listed


def sample_image(reader: DatasetReader | None, sample: CocoSample) -> SampleImage:
    """``sample`` as calibration takes it, named by its annotation's file name: its file, or its
    member's bytes through the container's reader (checked against the digest taken when listed)."""
    if reader is None or sample.stored is None:
        return file_image(sample.path, sample.key)
    return SampleImage(posixpath.basename(sample.key), sample.path, partial(reader.open, sample.stored))
