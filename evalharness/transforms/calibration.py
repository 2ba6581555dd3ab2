"""The images that calibrate a quantized variant: listed (the roots given, or the dataset's search
part), recorded (``provenance.model.quant.calibration``: manifest, source, size) and checked
disjoint from the evaluation set, then preprocessed into the quantizer's float tensors.

Calibration images must be disjoint from the evaluation set: an image of the evaluation folder
(``dataset.root``) with the same file name or the same bytes (sha256) as a calibration image is an
error before anything is built. Tasks that feed random tensors (benchmark, inference_diff) have no
evaluation images, so nothing can overlap. Both manifests go into ``provenance.model.quant``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypedDict

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import ConfigError, DataError
from evalharness.data.ground_truth import DEFAULT_EXTENSIONS
from evalharness.data.listing import list_images
from evalharness.data.manifest import manifest_hash
from evalharness.data.preprocess import InputSpec, PreprocessSpec, preprocess_file
from evalharness.settings.groups import CalibrationSchema


def calibration_files(
    cal: CalibrationSchema, dataset_files: list[str] | None = None
) -> list[tuple[str, Path]]:
    """(manifest key, path) of the calibration images: every root listed (or the dataset's search
    part, ``source: dataset``), first ``num_images`` kept."""
    if cal.source == "dataset":
        files: list[tuple[str, Path]] = [
            (f"dataset/{os.path.basename(f)}", Path(f)) for f in dataset_files or []
        ]
        num = cal.num_images
        files = files[:num] if num > 0 else files
        if not files:
            raise DataError(
                "quant.calibration source=dataset: the dataset's search part has no image files; use more "
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
        files += [(f"{i}/{name}", Path(root, name)) for name in list_images(Path(root), DEFAULT_EXTENSIONS)]
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


def refuse_overlap(calibration: list[dict[str, Any]], eval_root: str) -> EvalSetManifest:
    """The eval folder's manifest; DataError if any of its images shares a name or bytes with calibration."""
    names = list_images(Path(eval_root), DEFAULT_EXTENSIONS) if Path(eval_root).is_dir() else []
    images = {name: Path(eval_root, name) for name in names}
    by_name = {Path(c["key"]).name: c for c in calibration}
    by_hash = {c["sha256"]: c for c in calibration}
    sizes = {c["bytes"] for c in calibration}
    for name, path in sorted(images.items()):
        clash = by_name.get(name)
        if clash is None and path.stat().st_size in sizes:  # hash only what could be equal
            clash = by_hash.get(sha256_file(str(path)))
        if clash is not None:
            raise DataError(
                f"quant: calibration image {clash['path']} is also in the evaluation set ({path}); "
                "calibration and evaluation images must be disjoint: set quant.calibration.roots"
            )
    entries = [(name, str(path)) for name, path in images.items()]
    return {
        "root": os.path.abspath(eval_root),
        "count": len(entries),
        "manifest_sha256": manifest_hash(entries),
        "manifest_kind": "relative path + size",
        "overlap_checked_by": "file name, and sha256 of same-size files",
    }


def calibration_record(
    cal: CalibrationSchema, reads_dataset: bool, eval_root: str, dataset_files: list[str] | None = None
) -> tuple[dict[str, Any], list[Path]]:
    """(``provenance.model.quant.calibration``, image paths): manifest, source, size, and the
    evaluation set it was checked disjoint from."""
    files = calibration_files(cal, dataset_files)
    entries: list[dict[str, Any]] = [
        {"key": key, "path": str(path), "bytes": path.stat().st_size, "sha256": sha256_file(str(path))}
        for key, path in files
    ]
    record = {
        "name": cal.name,
        "source": cal.source,
        "roots": [os.path.abspath(r) for r in cal.roots],
        "count": len(entries),
        "manifest_sha256": manifest_hash([(e["key"], e["path"]) for e in entries], content=True),
        "manifest_kind": "relative path + sha256",
        "files": [{"key": e["key"], "sha256": e["sha256"]} for e in entries],
    }
    if not reads_dataset:
        record["eval_set"] = None  # random input tensors: no evaluation image to overlap with
    elif record["source"] == "dataset":  # the run's own samples are the split's held-out part
        record["eval_set"] = {"disjoint_by": "split: calibration from the search part, evaluation held out"}
    else:
        record["eval_set"] = refuse_overlap(entries, eval_root)
    return record, [path for _, path in files]


def calibration_tensors(paths: list[Path], model_path: str, preprocess: PreprocessSpec) -> list[Any]:
    """The calibration images as the float model's input tensors, prepared as the model's inputs are."""
    from evalharness.runtime.quantize import float_input

    _, _, shape, dtype = float_input(model_path)
    if len(shape) != 4 or dtype != "float32":
        raise ConfigError(
            f"quant: {model_path} input {list(shape)} {dtype} is not a float NHWC image, which calibration "
            "feeds; give a float image model in model.path, or use a recipe without calibration (quant=fp16, "
            "dynamic_int8 or weight_only_int8)"
        )
    inp = InputSpec(shape[1], shape[2], shape[3], "float32")
    return [preprocess_file(str(p), preprocess, inp) for p in paths]
