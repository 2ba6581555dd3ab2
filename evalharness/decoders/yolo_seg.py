"""YOLO-seg heads (YOLOv8/11 ``-seg`` exports): detection rows that carry mask coefficients, plus
one prototype tensor.

Two outputs, told apart by rank: rows ``[1, 4+C+M, N]`` (or transposed) of box, C class scores
and M mask coefficients, and prototypes ``[1, h, w, M]`` (NHWC, TFLite's) or ``[1, M, h, w]``.
An end-to-end export (NMS inside, Ultralytics' ``end2end``) gives rows ``[1, K, 6+M]`` of x1, y1, x2,
y2, score, class and the coefficients instead: kept as :mod:`evalharness.decoders.yolo_nms` keeps
its rows. Which prototype axis holds the M channels is read from the input size (the grid is the input / 4,
Ultralytics' stride-4 mask branch). The rows are filtered and suppressed exactly as the box decoder
does (:class:`~evalharness.decoders.yolo.YoloDecoder`); only the kept rows' coefficients are
returned, with the prototypes, so masks are made for at most ``max_detections`` boxes (by the task,
once it knows the letterbox: :mod:`evalharness.decoders.image_shapes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from evalharness.core.errors import ModelMismatchError
from evalharness.core.opencv import require_opencv
from evalharness.core.tensors import TensorInfo
from evalharness.decoders.base import DECODERS, Detections, _shapes
from evalharness.decoders.yolo import YoloDecoder
from evalharness.decoders.yolo_nms import final_rows

SEG_EXPECTS = "two outputs: rows [1, 4+C+M, N] (or [1, N, 4+C+M]) and prototypes [1, h, w, M] or [1, M, h, w]"
PROTOTYPE_STRIDE = 4  # the prototype grid is the input size / 4 in every Ultralytics seg head


def prototype_channels_axis(shape: list[int], input_hw: tuple[int, ...]) -> int | None:
    """3 (NHWC) or 1 (NCHW): the axis of the M channels of a ``[1, ., ., .]`` prototype tensor, from
    where the input / 4 grid sits (NHWC first: TFLite's layout); None when neither fits."""
    grid = [d // PROTOTYPE_STRIDE for d in input_hw[:2]]
    if shape[1:3] == grid:
        return 3
    if shape[2:4] == grid:
        return 1
    return None


@DECODERS.register("yolo_seg")
@dataclass
class YoloSegDecoder(YoloDecoder):
    """Boxes as :class:`YoloDecoder` (no objectness), plus the kept rows' mask coefficients and the
    image's prototypes (``[h, w, M]``) on the returned :class:`Detections`."""

    objectness: str | bool = False
    shape_kind: ClassVar[str | None] = "segm"

    def bind(self, outputs: list[TensorInfo], input_hw: tuple[int, int], model_path: str) -> None:
        self.input_hw, self.model_path, self.notes = tuple(input_hw), model_path, []
        # the masks' sampling: loaded now (not in the timed image loop), or one line naming the extra
        require_opencv(f"model.path={model_path}: decoding its masks (decoder yolo_seg)")
        ranks = [len(o.shape) for o in outputs]
        if sorted(ranks) != [3, 4] or any(o.shape[0] != 1 for o in outputs):
            raise ModelMismatchError(
                f"{model_path}: {_shapes(outputs)}; decoder yolo_seg expects {SEG_EXPECTS}"
            )
        self._rows_at, self._protos_at = ranks.index(3), ranks.index(4)
        rows, protos = list(outputs[self._rows_at].shape), list(outputs[self._protos_at].shape)
        axis = prototype_channels_axis(protos, input_hw)
        if axis is None:
            raise ModelMismatchError(
                f"{model_path}: prototypes {protos} are not a grid of the input {list(input_hw)} / "
                f"{PROTOTYPE_STRIDE}; decoder yolo_seg expects {SEG_EXPECTS}"
            )
        self._nhwc, self._masks = axis == 3, protos[axis]
        classes = 80 if self.num_classes is None else int(self.num_classes)
        width = 4 + classes + self._masks
        self._nms_inside = self.layout == "auto" and rows[2] == 6 + self._masks and width not in rows[1:]
        if self._nms_inside:  # end-to-end export: [1, K, x1 y1 x2 y2 score class + M coefficients]
            self.outputs, self._classes = list(outputs), classes
            self._pixels = None if self._normalized_cfg is None else not self._normalized_cfg
            self.notes.append(
                f"seg head with NMS inside: {rows[1]} rows of box, score, class, {self._masks} "
                f"mask coefficients; prototypes {protos} ({'NHWC' if self._nhwc else 'NCHW'})"
            )
            return
        axes = [ax for ax in (1, 2) if rows[ax] == width] if self.layout == "auto" else []
        if self.layout != "auto":
            axes = [1 if self.layout == "channels_first" else 2]
        if not axes or rows[axes[0]] != width:
            raise ModelMismatchError(
                f"{model_path}: the prototypes {protos} have {self._masks} channels, but the rows {rows} "
                f"have no axis of 4 box + {classes} classes + {self._masks} mask coefficients = {width}: "
                "the coefficients per row must equal the prototype channels; re-export the model, or set "
                f"model.decoder.num_classes if it has other than {classes} classes"
            )
        self.outputs = list(outputs)
        self._attr_axis, self._classes, self._has_obj = axes[0], classes, False
        self._pixels = None if self._normalized_cfg is None else not self._normalized_cfg
        layout = "channels_first" if self._attr_axis == 1 else "channels_last"
        self.notes.append(
            f"seg head: {layout}, {classes} classes, {self._masks} mask coefficients, "
            f"{rows[3 - self._attr_axis]} candidates; prototypes {protos} "
            f"({'NHWC' if self._nhwc else 'NCHW'})"
        )

    def decode(self, outputs: list[np.ndarray]) -> Detections:
        rows = self._real_value(outputs, self._rows_at)[0]
        if self._nms_inside:
            kept, first = final_rows(self, rows), 6
        else:
            kept, first = self._kept_rows(rows), 4 + self._classes
        # the masks are made in float32: the prototypes' real values straight to it (dequantised in
        # float32 already), not through a float64 copy of the whole grid and back
        protos = self._real_value(outputs, self._protos_at, np.float32)[0]
        return Detections(
            boxes=kept.boxes,
            scores=kept.scores,
            classes=kept.classes,
            mask_coefficients=kept.rows[:, first : first + self._masks],
            prototypes=protos if self._nhwc else np.moveaxis(protos, 0, -1),
            nms_ties=kept.ties,
        )
