"""``evalharness inspect`` on a container (a parquet file or folder of them, webdataset tar shards,
TFRecord shards): read by the very reader a run uses (so what it lists is what a run scores, and a
damaged shard is the same one error), then shown as every other dataset is. A container with no
class labels is what a detection run reads its images from (the instances JSON beside it,
tasks/coco/images.py): described as that, its images listed alone, why there are no labels said.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from evalharness.core.errors import DataError
from evalharness.data.dataset_reader import READERS, ReadRequest, container_names, detect
from evalharness.data.describe import FIRST, DatasetView
from evalharness.data.ground_truth import INDEX_LABEL


def describe_container(path: Path) -> DatasetView | None:
    kind, _ = detect(str(path))
    if kind not in container_names():
        return None
    request = ReadRequest(str(path))
    reader = READERS.get(kind)(request)
    try:
        samples = reader.samples()
    except DataError as unlabelled:  # no class labels: the images of a detection dataset?
        return _images_alone(path, kind, unlabelled)
    labels = Counter(s.label if s.label != INDEX_LABEL else f"class index {s.index}" for s in samples)
    facts = reader.provenance()
    named = facts.get("class_names_source") or ""
    setting = "" if not named.startswith("none") else " dataset.class_names=<the class list>"
    details: dict[str, Any] = {"shards": facts.get("shards"), "class_names": named}
    split = facts.get("dataset_split")
    if split and split["name"] is not None:  # the split a run reads (dataset.split=auto), of those found
        details["split"] = f"{split['name']} ({split['chosen']}; found: {', '.join(split['found'])})"
    if request.unscored:
        details["not_scored"] = dict(sorted(request.unscored.items()))
    return DatasetView(
        kind,
        str(path),
        len(samples),
        len(labels),
        list(labels)[:FIRST],
        [s.key for s in samples[:FIRST]],
        f"the labels in the {kind} shards",
        "top-1..K accuracy of a classifier",
        f"task=imagenet dataset=imagefolder dataset.root={path} dataset.format={kind}{setting}",
        details,
    )


def _images_alone(path: Path, kind: str, why: DataError) -> DatasetView:
    """The container listed for its images alone, as a detection run reads it; ``why``: what the
    labelled listing said (raised again when the images alone cannot be listed either)."""
    request = ReadRequest(str(path), labelled=False)
    reader = READERS.get(kind)(request)
    try:
        samples = reader.samples()
    except DataError:
        raise why from None
    details: dict[str, Any] = {"shards": reader.provenance().get("shards"), "no_class_labels": str(why)}
    if request.unscored:
        details["not_scored"] = dict(sorted(request.unscored.items()))
    return DatasetView(
        kind,
        str(path),
        len(samples),
        0,
        [],
        [s.key for s in samples[:FIRST]],
        "none in the shards: a COCO instances JSON beside them names the images by file name",
        "COCO bbox AP (pycocotools' 12 stats) of a detector, with that JSON",
        f"task=coco dataset.annotations=<instances JSON> dataset.root={path}",
        details,
    )
