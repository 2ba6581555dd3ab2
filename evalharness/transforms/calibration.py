"""The images that calibrate a quantized variant: listed (the roots given, or the dataset's search
part), recorded (``provenance.model.quant.calibration``: manifest, source, size) and checked
disjoint from the evaluation set, then preprocessed into the quantizer's float tensors.

Calibration images must be disjoint from the evaluation set: an image of the evaluation folder
(``dataset.root``) with the same file name or the same bytes (sha256) as a calibration image is an
error before anything is built; in a container, a sample whose id ends in that file name or whose
listed sha256 is that image's (asked of the dataset's reader, as the run lists it).
Tasks that feed random tensors (benchmark, inference_diff) have no
evaluation images, so nothing can overlap. Both manifests go into ``provenance.model.quant``.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import ConfigError, DataError
from evalharness.data.dataset_reader import reads_container
from evalharness.data.ground_truth import DEFAULT_EXTENSIONS, Member
from evalharness.data.listing import list_images
from evalharness.data.manifest import digest_lines, manifest_hash
from evalharness.data.preprocess import InputSpec, PreprocessSpec
from evalharness.data.rebuilt_input import recipe_input
from evalharness.data.sample_image import SampleImage, file_image
from evalharness.settings.groups import CalibrationSchema, RunSettings

# a container's samples as its reader lists them (id, member): what calibration is checked against
EvalMembers = Callable[[], Sequence[tuple[str, Member]]]


def dataset_members(settings: RunSettings) -> EvalMembers:
    """The run's container samples, listed by its task only when asked (a folder: none, it is
    listed as a folder), for :func:`calibration_record`'s disjointness check."""

    def members() -> Sequence[tuple[str, Member]]:
        fmt = getattr(settings.dataset, "format", None)  # a task whose datasets have no format: folders
        # a task whose ground truth lies beside a container (COCO) names that layout in dataset.format
        fmt = fmt if fmt is None or settings.definition.abilities.container_labels else "auto"
        if fmt is None or not reads_container(fmt, settings.dataset.root):
            return ()
        return settings.live_task().listed_members()

    return members


def calibration_files(
    cal: CalibrationSchema, dataset_images: list[SampleImage] | None = None
) -> list[tuple[str, SampleImage]]:
    """(manifest key, image) of the calibration images: every root listed (or the dataset's search
    part, ``source: dataset``, read by id through the dataset's reader), first ``num_images`` kept."""
    if cal.source == "dataset":
        files = [(f"dataset/{image.name}", image) for image in dataset_images or []]
        num = cal.num_images
        files = files[:num] if num > 0 else files
        if not files:
            raise DataError(
                "quant.calibration source=dataset: the dataset's search part has no images; use more "
                "images (task.num_images), a larger quant.search.fraction or quant/calibration=bundled"
            )
        return files
    roots = cal.roots
    if not roots:
        raise ConfigError("quant.calibration.roots is empty; give one or more image folders")
    files = []
    for i, root in enumerate(roots):
        if not Path(root).is_dir():
            raise DataError(f"quant.calibration.roots[{i}]={root} is not a directory; give an image folder")
        names = list_images(Path(root), DEFAULT_EXTENSIONS)
        files += [(f"{i}/{name}", file_image(str(Path(root, name)))) for name in names]
    num = cal.num_images
    files = files[:num] if num > 0 else files
    if not files:
        raise DataError(
            f"quant.calibration.roots {list(roots)}: no images ({', '.join(DEFAULT_EXTENSIONS)}); put images "
            "there or give other folders in quant.calibration.roots"
        )
    return files


class EvalSetManifest(TypedDict):
    """``calibration.eval_set``: the evaluation folder checked to share no image with calibration."""

    root: str
    count: int
    manifest_sha256: str
    manifest_kind: str
    overlap_checked_by: str


def _refused(clash: dict[str, Any], where: str) -> DataError:
    return DataError(
        f"quant: calibration image {clash['path']} is also in the evaluation set ({where}); "
        "calibration and evaluation images must be disjoint: set quant.calibration.roots"
    )


def refuse_overlap(
    calibration: list[dict[str, Any]], eval_root: str, members: Sequence[tuple[str, Member]] = ()
) -> EvalSetManifest:
    """The evaluation set's manifest; DataError if any of its images shares a name or bytes with
    calibration. ``members``: the samples a container's reader lists (id, member), checked by the
    id's file name and the sha256 listed with each member (nothing is read again); none: the
    evaluation folder's image files, by file name and the sha256 of same-size files."""
    by_name = {Path(c["key"]).name: c for c in calibration}
    by_hash = {c["sha256"]: c for c in calibration}
    if members:
        for key, member in members:
            clash = by_name.get(posixpath.basename(key)) or by_hash.get(member.sha256)
            if clash is not None:
                raise _refused(clash, member.where)
        return {
            "root": os.path.abspath(eval_root),
            "count": len(members),
            "manifest_sha256": manifest_hash(members, content=True),
            "manifest_kind": "sample id + sha256",
            "overlap_checked_by": "sample id's file name, and the sha256 listed with each member",
        }
    names = list_images(Path(eval_root), DEFAULT_EXTENSIONS) if Path(eval_root).is_dir() else []
    images = {name: Path(eval_root, name) for name in names}
    sizes = {c["bytes"] for c in calibration}
    for name, path in sorted(images.items()):
        clash = by_name.get(name)
        if clash is None and path.stat().st_size in sizes:  # hash only what could be equal
            clash = by_hash.get(sha256_file(str(path)))
        if clash is not None:
            raise _refused(clash, str(path))
    entries = [(name, str(path)) for name, path in images.items()]
    return {
        "root": os.path.abspath(eval_root),
        "count": len(entries),
        "manifest_sha256": manifest_hash(entries),
        "manifest_kind": "relative path + size",
        "overlap_checked_by": "file name, and sha256 of same-size files",
    }


def calibration_record(
    cal: CalibrationSchema,
    reads_dataset: bool,
    eval_root: str,
    dataset_images: list[SampleImage] | None = None,
    eval_members: EvalMembers | None = None,
) -> tuple[dict[str, Any], list[SampleImage]]:
    """(``provenance.model.quant.calibration``, images): manifest, source, size, and the
    evaluation set it was checked disjoint from (``eval_members``: a container's listed samples,
    asked for only when the check needs them; see :func:`refuse_overlap`)."""
    files = calibration_files(cal, dataset_images)
    entries: list[dict[str, Any]] = []
    for key, image in files:
        data = image.read()
        entries.append(
            {"key": key, "path": image.where, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        )
    record = {
        "name": cal.name,
        "source": cal.source,
        "roots": [os.path.abspath(r) for r in cal.roots],
        "count": len(entries),
        # by content: the same images give the same manifest, in a folder or in a container
        "manifest_sha256": digest_lines(
            (e["key"], e["sha256"]) for e in sorted(entries, key=lambda e: (e["key"], e["path"]))
        ),
        "manifest_kind": "relative path + sha256",
        "files": [{"key": e["key"], "sha256": e["sha256"]} for e in entries],
    }
    if not reads_dataset:
        record["eval_set"] = None  # random input tensors: no evaluation image to overlap with
    elif record["source"] == "dataset":  # the run's own samples are the split's held-out part
        record["eval_set"] = {"disjoint_by": "split: calibration from the search part, evaluation held out"}
    else:
        record["eval_set"] = refuse_overlap(entries, eval_root, eval_members() if eval_members else ())
    return record, [image for _, image in files]


def calibration_tensors(images: list[SampleImage], model_path: str, preprocess: PreprocessSpec) -> list[Any]:
    """The calibration images as the float model's input tensors, prepared as the run prepares the
    model's inputs (a detector's letterbox, a classifier's crop: :func:`recipe_input`; each image's
    bytes read again through its reader: nothing is held between the two)."""
    from evalharness.runtime.quantize import float_input

    _, _, shape, dtype = float_input(model_path)
    if len(shape) != 4 or dtype != "float32":
        raise ConfigError(
            f"quant: {model_path} input {list(shape)} {dtype} is not a float NHWC image, which calibration "
            "feeds; give a float image model in model.path, or use a recipe without calibration (quant=fp16, "
            "dynamic_int8 or weight_only_int8)"
        )
    inp = InputSpec(shape[1], shape[2], shape[3], "float32")
    return [recipe_input(image.read(), image.where, preprocess, inp) for image in images]
