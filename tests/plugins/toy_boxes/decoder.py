"""Toy detection plug-in, its own output decoder ``toy_peak``: the first output's peak becomes one
box. Registered from outside evalharness with ``@DECODERS.register`` like any decoder plug-in; its
parameters are its dataclass fields, checked the one way every plug-in's settings are."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalharness.core.errors import ModelMismatchError
from evalharness.decoders.base import DECODERS, Decoder, Detections


@DECODERS.register("toy_peak")
@dataclass
class ToyPeakDecoder(Decoder):
    """Output 0 flattened: its highest value is the score, its position along the vector the box's
    horizontal centre; the box is ``size`` wide and tall, centred vertically."""

    size: float = 0.5

    def bind(self, outputs, input_hw, model_path) -> None:
        if not outputs or int(np.prod(outputs[0].shape)) < 2:
            raise ModelMismatchError(f"{model_path}: decoder toy_peak needs an output of at least 2 values")
        self.outputs, self.input_hw, self.model_path = list(outputs[:1]), tuple(input_hw), model_path

    def decode(self, outputs) -> Detections:
        values = self._real_values(outputs[:1])[0].ravel()
        peak = int(np.argmax(values))
        cx, half = (peak + 0.5) / values.size, self.size / 2
        box = np.array([[cx - half, 0.5 - half, cx + half, 0.5 + half]])
        return Detections(boxes=box, scores=np.array([values[peak]]), classes=np.array([0]))
