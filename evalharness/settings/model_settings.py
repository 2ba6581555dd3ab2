"""``model.path=X.tflite`` alone: the model settings the file itself carries, and where each came from.

``python -m evalharness model.path=X`` selects the ``file`` model preset (``conf/model/file.yaml``:
``from_file: true``, ``labels: auto``, the name = the file's stem). Then, for what the command line
did not set:

- ``labels``: the label file the TFLite metadata associates with the output (TF-Hub, Model Maker:
  ``imagenet_labels.txt``, ``labels_without_background.txt``), or Ultralytics' ``names``; extracted
  to ``<paths.cache_dir>/model_files/<sha256>/`` so the run records a real file and its hash;
- ``preprocess.mean/std``: the input's ``NormalizationOptions``;
- Ultralytics exports: ``decoder: yolo``, ``class_map`` (``coco80`` for the 80 COCO names, else
  ``labels``) and letterbox preprocessing (the ``yolo_letterbox`` preset);
- YOLO-seg / YOLO-pose heads (Ultralytics' ``task``, or the output shapes alone:
  :mod:`evalharness.settings.yolo_heads`): ``decoder: yolo_seg`` / ``yolo_pose``, ``class_map``
  ``coco80`` and letterbox preprocessing;
- a graph ending in ``TFLite_Detection_PostProcess``: ``decoder: ssd_postprocess``.

A command-line value always wins, for that key only (``model.preprocess.integer_input=quantize``
keeps the file's mean/std); where it contradicts the file a warning says so. Every setting's origin
(``command line``, ``model file``, ``preset``) goes to ``provenance.model.settings_source``, each
preprocessing key's too (:mod:`evalharness.settings.preprocess_sources`).
Labels nothing provides stay ``auto`` and reading them is one error naming ``model.labels``.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import TYPE_CHECKING, Any, cast

from omegaconf import OmegaConf

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.documents import JSONMap
from evalharness.core.fileguard import refuse_special_file
from evalharness.core.paths import CONF_DIR
from evalharness.data.labels import LABELS_AUTO
from evalharness.settings.preprocess_sources import (
    COMMAND_LINE,
    MODEL_FILE,
    PRESET,
    PreprocessSources,
    chosen_whole,
)
from evalharness.settings.yolo_heads import head_decoder, yolo_head

if TYPE_CHECKING:
    from evalharness.runtime.model_file import ModelFile

log = logging.getLogger("evalharness")

SETTINGS = ("name", "path", "labels", "preprocess", "decoder", "class_map")
COCO80_FIRST = ("person", "bicycle", "car", "motorcycle", "airplane")
YOLO_DECODER = {"name": "yolo", "conf_threshold": 0.001, "iou_threshold": 0.7, "max_detections": 300}
YOLO_NMS_DECODER = {"name": "yolo_nms", "conf_threshold": 0.0, "max_detections": 300}
SSD_DECODER = {"name": "ssd_postprocess", "score_threshold": 0.0}


def given_on_command_line(overrides: list[str]) -> set[str]:
    """Model settings the user wrote (``model.labels=…`` -> ``labels``; ``model/preprocess=…`` and
    ``model.preprocess.mean=…`` -> ``preprocess`` and ``preprocess.mean``)."""
    from evalharness.settings.overrides import parse

    given: set[str] = set()
    for key in (o.key_or_group for o in parse(overrides)):
        for prefix in ("model.", "model/"):
            if key.startswith(prefix):
                parts = key[len(prefix) :].replace("/", ".").split(".")
                given.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    return given


def infer_model_settings(
    model: dict[str, Any], overrides: list[str], cache_dir: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(model group with what the file says filled in, {setting: source}). Only for ``from_file``
    (its file checked by :func:`check_model_file` first); ``cache_dir`` None: a dry run that extracts
    no label file."""
    from evalharness.runtime.model_file import read_model_file
    from evalharness.runtime.source_formats import source_format

    given = given_on_command_line(overrides)
    sources = {k: COMMAND_LINE if k in given else PRESET for k in SETTINGS}
    pre_sources = PreprocessSources(given, chosen_whole(overrides))
    if not model.get("from_file"):  # a preset's file is checked once its settings are (check_model_file)
        pre_sources.record(sources)
        return model, sources
    check_model_file(model["path"])
    sources["name"] = COMMAND_LINE if "name" in given else MODEL_FILE

    fmt = source_format(model["path"])
    info = fmt.read(model["path"]) if fmt is not None else read_model_file(model["path"])
    model = {**model, "preprocess": dict(model.get("preprocess") or {})}
    _labels(model, info, given, sources, cache_dir)
    _normalization(model, info, pre_sources)
    _detector(model, info, given, sources, pre_sources)
    pre_sources.record(sources)
    return model, sources


def check_model_file(path: str) -> None:
    """Every model file, a preset's too, through the one guard before any reader sees it: special
    files, size, a damaged flatbuffer and an input of dynamic size refused by key and file."""
    from evalharness.runtime.model_guard import read_model_bytes, refuse_dynamic_inputs
    from evalharness.runtime.source_formats import source_format

    if (fmt := source_format(path)) is not None:  # a source model: its own reader checks the file
        fmt.read(path)
        return
    refuse_dynamic_inputs(read_model_bytes(path), f"model.path={path}")


def _labels(
    model: dict[str, Any], info: ModelFile, given: set[Any], sources: dict[str, Any], cache_dir: str | None
) -> None:
    names = (info.ultralytics or {}).get("names")
    lines, what = info.labels, info.label_file
    if not lines and isinstance(names, dict) and names:
        lines = [names.get(i, "") for i in range(max(names) + 1)]
        what = "Ultralytics names"
    if model["labels"] != LABELS_AUTO:  # given on the command line: it wins, but not silently
        if lines and _read_lines(model["labels"]) not in (None, lines):
            log.warning(
                "model.labels=%s wins over the %d labels the model file carries (%s), which differ",
                model["labels"],
                len(lines),
                what,
            )
        return
    if not lines:
        model["labels"] = LABELS_AUTO
        sources["labels"] = "none: the model file carries no labels"
        return
    if cache_dir is None:  # a dry run (evalharness inspect): say where the labels would come from
        model["labels"], sources["labels"] = f"<in the model file: {what}>", f"{MODEL_FILE} ({what})"
        return
    assert what is not None  # labels read from the model file come with their file's name (model_file.py)
    with open(info.path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    target = os.path.join(os.path.expanduser(cache_dir), "model_files", digest, os.path.basename(what))
    if what == "Ultralytics names":
        target = os.path.join(os.path.dirname(target), "ultralytics_names.txt")
    atomic_write_text(target, "\n".join(lines) + "\n")
    model["labels"] = target
    sources["labels"] = f"{MODEL_FILE} ({what})"


def _read_lines(path: str) -> list[str] | None:
    refuse_special_file(path, "model.labels")  # a FIFO would block here, before the task's reader
    try:
        with open(path, encoding="utf-8-sig") as f:
            return f.read().rstrip().splitlines()
    except (OSError, UnicodeDecodeError):
        return None  # the task reports an unreadable label file with its own error


def _normalization(model: dict[str, Any], info: ModelFile, pre: PreprocessSources) -> None:
    """The input's NormalizationOptions as mean/std, for each the command line left; a value given
    there wins, with a warning where the file says otherwise."""
    norm = info.normalization
    if not norm or not norm["mean"] or not norm["std"]:
        return
    mean = [float(v) for v in norm["mean"]] * (3 if len(norm["mean"]) == 1 else 1)
    std = [float(v) for v in norm["std"]] * (3 if len(norm["std"]) == 1 else 1)
    preprocess = model["preprocess"]
    file_values = {"mean": mean, "std": std}
    kept = pre.take(preprocess, file_values, "NormalizationOptions")
    differing = [k for k in kept if [float(v) for v in preprocess.get(k, [])] != file_values[k]]
    if differing and pre.whole:  # a preset chosen whole: its mean and std together
        log.warning(
            "model.preprocess mean/std from the command line (%s / %s) win over the model "
            "file's normalization (%s / %s)",
            preprocess.get("mean"),
            preprocess.get("std"),
            mean,
            std,
        )
        return
    for key in differing:
        log.warning(
            "model.preprocess.%s from the command line (%s) wins over the model file's normalization "
            "(%s %s); the other values keep their sources",
            key,
            preprocess.get(key),
            key,
            file_values[key],
        )


def _preset(name: str) -> JSONMap:
    preset = OmegaConf.load(CONF_DIR / "model" / "preprocess" / f"{name}.yaml")
    return cast(JSONMap, OmegaConf.to_container(preset))


def _detector(
    model: dict[str, Any], info: ModelFile, given: set[Any], sources: dict[str, Any], pre: PreprocessSources
) -> None:
    meta = info.ultralytics or {}
    head = yolo_head(info)
    if head is not None:
        how = f"{'Ultralytics task' if meta.get('task') == head else 'output shapes'}: {head} head"
        if "decoder" not in given:
            model["decoder"] = head_decoder(head, info, YOLO_DECODER)
            sources["decoder"] = f"{MODEL_FILE} ({how})"
        if "class_map" not in given:  # COCO's 80 classes, or the person class first in COCO's ids
            names = [meta.get("names", {}).get(i) for i in range(5)]
            coco = not meta.get("names") or tuple(names) == COCO80_FIRST or head == "pose"
            model["class_map"] = "coco80" if coco else "labels"
            sources["class_map"] = f"{MODEL_FILE} ({how})"
        pre.take(model["preprocess"], _preset("yolo_letterbox"), f"{how}: yolo_letterbox")
    elif meta.get("task") == "detect":
        nms_inside = (
            len(info.outputs) == 1 and len(info.outputs[0].shape) == 3 and info.outputs[0].shape[2] == 6
        )
        if "decoder" not in given:
            model["decoder"] = dict(YOLO_NMS_DECODER if nms_inside else YOLO_DECODER)
            layout = "[1, N, 6] output: NMS inside" if nms_inside else "raw head"
            sources["decoder"] = f"{MODEL_FILE} (Ultralytics task: detect, {layout})"
        if "class_map" not in given:
            names = [meta.get("names", {}).get(i) for i in range(5)]
            coco80 = len(meta.get("names", {})) == 80 and tuple(names) == COCO80_FIRST
            model["class_map"] = "coco80" if coco80 else "labels"
            sources["class_map"] = f"{MODEL_FILE} (Ultralytics names)"
        pre.take(model["preprocess"], _preset("yolo_letterbox"), "Ultralytics export: yolo_letterbox")
    elif "TFLite_Detection_PostProcess" in info.op_histogram and "decoder" not in given:
        model["decoder"] = dict(SSD_DECODER)
        sources["decoder"] = f"{MODEL_FILE} (TFLite_Detection_PostProcess op)"
        # SSD exports take the whole image stretched (TFLite's coco tool)
        stretch = "TFLite_Detection_PostProcess op: detection_stretch"
        pre.take(model["preprocess"], _preset("detection_stretch"), stretch)
