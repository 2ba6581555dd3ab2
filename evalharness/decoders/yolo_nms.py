"""Detector exports with NMS inside the graph: one ``[1, N, 6]`` output of final detections.

Ultralytics ``export(format="tflite", nms=True)`` (and other exporters that fold NMS into the
model) emit rows of x1, y1, x2, y2, score, class, already suppressed and sorted; unused rows are
padding with score 0. Nothing is re-suppressed here: rows with score > ``conf_threshold`` are kept
in the model's order (at most ``max_detections``). Boxes in input pixels are divided by the input
size (``normalized=auto``: a coordinate above 2 means pixels, as for the raw YOLO decoder).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from evalharness.core.errors import ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.decoders import base
from evalharness.decoders.yolo import KeptRows

NMS_EXPECTS = "one output [1, N, 6]: x1, y1, x2, y2, score, class per detection (NMS inside the model)"


@base.DECODERS.register("yolo_nms")
@dataclass
class YoloNmsDecoder(base.Decoder):
    """Final detections as the model emits them (x1, y1, x2, y2, score, class)."""

    conf_threshold: float = 0.0  # keep rows with score > this (0 drops only the zero padding)
    max_detections: int = 300
    normalized: str = "auto"  # auto | true (boxes in 0..1) | false (input pixels)

    def __post_init__(self) -> None:
        super().__post_init__()
        base._check_choice("yolo_nms", "normalized", str(self.normalized).lower(), ("auto", "true", "false"))

    def bind(self, outputs: list[TensorInfo], input_hw: tuple[int, int], model_path: str) -> None:
        self.input_hw, self.model_path, self.notes = tuple(input_hw), model_path, []
        out = outputs[0] if len(outputs) == 1 else None
        if out is None or len(out.shape) != 3 or out.shape[0] != 1 or out.shape[2] != 6:
            raise ModelMismatchError(
                f"{model_path}: {base._shapes(outputs)}; decoder yolo_nms expects {NMS_EXPECTS}"
                + base._model_kind_hint(outputs)
            )
        self.outputs = list(outputs)
        self._pixels = {"auto": None, "true": False, "false": True}[str(self.normalized).lower()]
        self.notes.append(f"NMS inside the model: {out.shape[1]} rows of x1, y1, x2, y2, score, class")

    def decode(self, outputs: list[np.ndarray]) -> base.Detections:
        kept = final_rows(self, self._real_values(outputs)[0][0])
        return base.Detections(boxes=kept.boxes, scores=kept.scores, classes=kept.classes)


def final_rows(decoder: Any, rows: npt.NDArray[np.float64]) -> KeptRows:
    """Rows of an NMS-inside head (x1, y1, x2, y2, score, class, then what a seg / pose head adds)
    with score > ``decoder.conf_threshold``, the first ``decoder.max_detections`` in the model's
    order; boxes in input pixels (``decoder._pixels``, None: told by a coordinate above 2, once)
    divided by the input size."""
    rows = rows[rows[:, 4] > decoder.conf_threshold][: decoder.max_detections]
    boxes = rows[:, :4].copy()
    if decoder._pixels is None:
        decoder._pixels = bool(boxes.size and np.max(boxes) > 2)
        decoder.notes.append(f"boxes in {'input pixels' if decoder._pixels else 'normalised units'} (auto)")
    if decoder._pixels:
        h, w = decoder.input_hw
        boxes = boxes / np.array([w, h, w, h], dtype=np.float64)
    return KeptRows(rows, boxes, rows[:, 4], np.round(rows[:, 5]).astype(np.int64))
