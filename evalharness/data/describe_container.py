"""``evalharness inspect`` on a container (a parquet file or folder of them, webdataset tar shards,
TFRecord shards): read by the very reader a run uses (so what it lists is what a run scores, and a
damaged shard is the same one error), then shown as every other dataset is. A container with no
class labels is what a detection run reads its images from (the instances JSON beside it,
tasks/coco/images.py): described as that, its images listed alone, why there are no labels said.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evalharness.core.errors import DataError
from evalharness.data.dataset_reader import READERS, ReadRequest, container_names, detect
from evalharness.data.describe import FIRST, DatasetView
from evalharness.data.ground_truth import INDEX_LABEL, LabeledSample


def describe_container(path: Path) -> DatasetView | None:
    kind, _ = detect(str(path))
    if kind not in container_names():
        return None
    try:
        samples, details = _listing(path, kind, labelled=True)
    except DataError as unlabelled:  # no class labels: the images of a detection dataset?
        return _images_alone(path, kind, unlabelled)
    labels = Counter(s.label if s.label != INDEX_LABEL else f"class index {s.index}" for s in samples)
    named = details["class_names"]
    setting = "" if not named.startswith("none") else " dataset.class_names=<the class list>"
    said = (
        f"the labels in the {kind} shards",
        "top-1..K accuracy of a classifier",
        f"task=imagenet dataset=imagefolder dataset.root={path} dataset.format={kind}{setting}",
    )
    return _view(path, kind, samples, labels, said, details)


def _listing(path: Path, kind: str, labelled: bool) -> tuple[Sequence[LabeledSample], dict[str, Any]]:
    """The samples the run's reader lists (``labelled`` False: the images alone) and the facts every
    view of a container shows: its shards, class names, the split read, what is not scored."""
    request = ReadRequest(str(path), labelled=labelled)
    reader = READERS.get(kind)(request)
    samples = reader.samples()
    facts = reader.provenance()
    details: dict[str, Any] = {"shards": facts.get("shards")}
    if labelled:
        details["class_names"] = facts.get("class_names_source") or ""
    split = facts.get("dataset_split")
    if split and split["name"] is not None:  # the split a run reads (dataset.split=auto), of those found
        details["split"] = f"{split['name']} ({split['chosen']}; found: {', '.join(split['found'])})"
    if request.unscored:
        details["not_scored"] = dict(sorted(request.unscored.items()))
    return samples, details


def _images_alone(path: Path, kind: str, why: DataError) -> DatasetView:
    """The container listed for its images alone, as a detection run reads it; ``why``: what the
    labelled listing said (raised again when the images alone cannot be listed either)."""
    try:
        samples, details = _listing(path, kind, labelled=False)
    except DataError:
        raise why from None
    said = (
        "none in the shards: a COCO instances JSON beside them names the images by file name",
        "COCO bbox AP (pycocotools' 12 stats) of a detector, with that JSON",
        f"task=coco dataset.annotations=<instances JSON> dataset.root={path}",
    )
    return _view(path, kind, samples, Counter(), said, {**details, "no_class_labels": str(why)})


def _view(
    path: Path,
    kind: str,
    samples: Sequence[LabeledSample],
    labels: Counter[str],
    said: tuple[str, str, str],
    details: dict[str, Any],
) -> DatasetView:
    """``said``: where the answers come from, what a run scores, its command-line settings."""
    first, names = [s.key for s in samples[:FIRST]], list(labels)[:FIRST]
    return DatasetView(kind, str(path), len(samples), len(labels), names, first, *said, details)
