"""YOLO-pose heads (YOLOv8/11 ``-pose`` exports): rows of box, class score(s) and K keypoints.

One output ``[1, 4+C+3K, N]`` (or transposed): x, y, visibility per keypoint after the box and the
C class scores (C = 1, person, unless ``num_classes`` says otherwise). The attribute axis is the
shorter one (a head has far more candidates than attributes) unless ``layout`` names it. K comes
from ``num_keypoints`` (set from the file's ``kpt_shape`` when Ultralytics' metadata has one) or
from the width; a width whose keypoint part is not x, y, visibility triples is refused. An
end-to-end export (NMS inside) gives ``[1, K, 6+3K]`` rows of x1, y1, x2, y2, score, class and the
keypoints instead, kept as :mod:`evalharness.decoders.yolo_nms` keeps its rows. Keypoints are in
the boxes' unit (normalised 0-1 or input pixels, told as for boxes) and come back normalised to
the input; the visibility score is passed on as the model gives it (Ultralytics' exports apply the
sigmoid inside the graph).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from evalharness.core.errors import ConfigError, ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.decoders.base import DECODERS, Detections, _shapes
from evalharness.decoders.yolo import YoloDecoder
from evalharness.decoders.yolo_nms import final_rows

POSE_EXPECTS = "one output [1, 4+C+3K, N] or [1, N, 4+C+3K]: box, C class scores, K (x, y, visibility)"


@DECODERS.register("yolo_pose")
@dataclass
class YoloPoseDecoder(YoloDecoder):
    """Boxes as :class:`YoloDecoder` (one class by default, no objectness), plus each kept row's
    keypoints on the returned :class:`Detections`."""

    objectness: str | bool = False
    shape_kind: ClassVar[str | None] = "keypoints"
    num_keypoints: int | None = None  # auto: (width - 4 - classes) / 3

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_keypoints is not None and int(self.num_keypoints) < 1:
            raise ConfigError(
                f"decoder yolo_pose: num_keypoints={self.num_keypoints}; use >= 1, or null for auto"
            )

    def bind(self, outputs: list[TensorInfo], input_hw: tuple[int, int], model_path: str) -> None:
        self.input_hw, self.model_path, self.notes = tuple(input_hw), model_path, []
        out = outputs[0] if len(outputs) == 1 else None
        if out is None or len(out.shape) != 3 or out.shape[0] != 1:
            raise ModelMismatchError(
                f"{model_path}: {_shapes(outputs)}; decoder yolo_pose expects {POSE_EXPECTS}"
            )
        shape = list(out.shape)
        if self.layout == "auto":
            axis = 1 if shape[1] <= shape[2] else 2
        else:
            axis = 1 if self.layout == "channels_first" else 2
        classes = 1 if self.num_classes is None else int(self.num_classes)
        self._nms_inside = self.layout == "auto" and 6 < shape[2] < shape[1] and (shape[2] - 6) % 3 == 0
        if self._nms_inside:  # end-to-end export: [1, K, x1 y1 x2 y2 score class + 3K keypoint values]
            axis = 2
        values = shape[axis] - (6 if self._nms_inside else 4 + classes)
        if values < 3 or values % 3:
            raise ModelMismatchError(
                f"{model_path}: pose head {shape}: {shape[axis]} attributes - 4 box - {classes} class "
                f"score(s) = {values} keypoint values, not x, y, visibility triples (a multiple of 3); "
                "export the model with kpt_shape [K, 3], or set model.decoder.num_classes / .layout"
            )
        if self.num_keypoints is not None and values != 3 * int(self.num_keypoints):
            raise ModelMismatchError(
                f"{model_path}: pose head {shape}: {values} keypoint values, not the 3 x "
                f"{self.num_keypoints} of model.decoder.num_keypoints; check num_keypoints / num_classes"
            )
        self.outputs = list(outputs)
        self._attr_axis, self._classes, self._has_obj = axis, classes, False
        self._keypoints = values // 3
        self._pixels = None if self._normalized_cfg is None else not self._normalized_cfg
        layout = (
            "NMS inside, rows of x1 y1 x2 y2 score class"
            if self._nms_inside
            else ("channels_first" if axis == 1 else "channels_last")
        )
        self.notes.append(
            f"pose head: {layout}, {classes} class(es), {self._keypoints} keypoints (x, y, visibility), "
            f"{shape[3 - axis]} candidates"
        )

    @property
    def keypoint_count(self) -> int:
        """K, the keypoints each detection has (known once bound)."""
        return int(self._keypoints)

    def decode(self, outputs: list[np.ndarray]) -> Detections:
        raw = self._real_values(outputs)[0][0]
        kept = final_rows(self, raw) if self._nms_inside else self._kept_rows(raw)
        first = 6 if self._nms_inside else 4 + self._classes
        keypoints = kept.rows[:, first:].reshape(-1, self._keypoints, 3).copy()
        if self._pixels:
            h, w = self.input_hw
            keypoints[:, :, :2] /= np.array([w, h], dtype=np.float64)
        return Detections(
            boxes=kept.boxes,
            scores=kept.scores,
            classes=kept.classes,
            keypoints=keypoints,
            nms_ties=kept.ties,
        )
