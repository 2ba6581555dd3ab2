"""Which YOLO head a model file carries: ``segment`` or ``pose``, from Ultralytics' ``task`` when
the file has the metadata, else from the output shapes alone (an export through another converter
keeps the shapes, not the metadata). What :mod:`evalharness.settings.model_settings` fills in for
such a head: its decoder (``yolo_seg`` / ``yolo_pose``, at most 100 detections per image as COCO's
``maxDets``), the class and keypoint counts the metadata states, and letterbox preprocessing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalharness.runtime.model_file import ModelFile

HEAD_DECODERS = {"segment": "yolo_seg", "pose": "yolo_pose"}
COCO_POSE_WIDTH = 4 + 1 + 17 * 3  # box, person score, 17 COCO keypoints (x, y, visibility)
PROTOTYPE_STRIDE = 4


def _input_hw(info: ModelFile) -> tuple[int, int] | None:
    shape = list(info.inputs[0].shape) if len(info.inputs) == 1 else []
    if len(shape) != 4:
        return None
    return (shape[1], shape[2]) if shape[3] in (1, 3) else (shape[2], shape[3])


def yolo_head(info: ModelFile) -> str | None:
    """``segment``, ``pose`` or None (a box detector or something else)."""
    task = (info.ultralytics or {}).get("task")
    if task in HEAD_DECODERS:
        return str(task)
    shapes = [list(o.shape) for o in info.outputs]
    hw = _input_hw(info)
    if hw and sorted(len(s) for s in shapes) == [3, 4]:
        protos = next(s for s in shapes if len(s) == 4)
        grid = [d // PROTOTYPE_STRIDE for d in hw]
        if protos[1:3] == grid or protos[2:4] == grid:
            return "segment"
    widths = {COCO_POSE_WIDTH, COCO_POSE_WIDTH + 1}  # raw; end-to-end (x1 y1 x2 y2 score class)
    if len(shapes) == 1 and len(shapes[0]) == 3 and widths & set(shapes[0][1:]):
        return "pose"
    return None


def head_decoder(head: str, info: ModelFile, base: dict[str, Any]) -> dict[str, Any]:
    """The decoder settings of a ``segment`` / ``pose`` head: ``base`` (the box decoder's
    thresholds) renamed, 100 detections, and what the metadata says of classes and keypoints."""
    meta = info.ultralytics or {}
    decoder = {**base, "name": HEAD_DECODERS[head], "max_detections": 100}
    names = meta.get("names")
    if isinstance(names, dict) and names:
        decoder["num_classes"] = len(names)
    kpt_shape = meta.get("kpt_shape")
    if head == "pose" and isinstance(kpt_shape, list) and kpt_shape and isinstance(kpt_shape[0], int):
        decoder["num_keypoints"] = kpt_shape[0]
    return decoder
