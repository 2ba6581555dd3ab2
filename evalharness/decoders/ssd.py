"""TFLite's SSD post-processing op (``TFLite_Detection_PostProcess``): its four outputs -> boxes."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from evalharness.core.errors import ConfigError, ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.decoders.base import DECODERS, Decoder, Detections, _model_kind_hint, _shapes

SSD_EXPECTS = "TFLite_Detection_PostProcess outputs (boxes [1,N,4], classes [1,N], scores [1,N], count [1])"
_TF1_OP_NAME = re.compile(r"tflite_detection_postprocess:(\d)$")  # matched on lower-cased names


@DECODERS.register("ssd_postprocess")
@dataclass
class SsdPostprocessDecoder(Decoder):
    """Outputs of the ``TFLite_Detection_PostProcess`` op, found by shape, name or value.

    TF1 exports list boxes, classes, scores, count; TF2 exports list them in another order
    (tensorflow#59239), so outputs are identified, not indexed: boxes are [1,N,4], count is [1],
    and of the two [1,N] tensors the classes are told from the scores by name ("class"/"score",
    or the op output index in TF1 names) or else, on the first decode with detections, by value
    (classes are all integral, scores lie in [0,1] and are not). Detections keep the model's order.
    """

    score_threshold: float = 0.0  # keep detections with score >= this (0 keeps all `count`)
    classes_output: int | None = None  # output index of the classes, only if auto-detection fails

    def bind(self, outputs: list[TensorInfo], input_hw: tuple[int, int], model_path: str) -> None:
        self.input_hw, self.model_path, self.notes = tuple(input_hw), model_path, []
        boxes = [
            i for i, o in enumerate(outputs) if len(o.shape) == 3 and o.shape[0] == 1 and o.shape[2] == 4
        ]
        count = [i for i, o in enumerate(outputs) if tuple(o.shape) in ((1,), ())]
        n = outputs[boxes[0]].shape[1] if len(boxes) == 1 else -1
        pair = [i for i, o in enumerate(outputs) if tuple(o.shape) == (1, n)]
        if len(outputs) != 4 or len(boxes) != 1 or len(count) != 1 or len(pair) != 2:
            raise ModelMismatchError(
                f"{model_path}: {_shapes(outputs)}; decoder ssd_postprocess expects {SSD_EXPECTS}"
                + _model_kind_hint(outputs)
            )
        self.outputs = list(outputs)
        self._boxes, self._count, self._pair = boxes[0], count[0], pair
        self._classes: int | None = None
        self._scores: int | None = None
        if self.classes_output is None:
            self._classes_by_name()
        elif self.classes_output in pair:
            self._decided(self.classes_output, sum(pair) - self.classes_output, "classes_output parameter")
        else:
            raise ConfigError(
                f"{model_path}: decoder ssd_postprocess classes_output={self.classes_output} is not one of "
                f"the [1,{n}] outputs {pair}"
            )

    def _classes_by_name(self) -> None:
        names = [self.outputs[i].name.lower() for i in self._pair]
        a, b = self._pair
        if "class" in names[0] and "score" in names[1]:
            self._decided(a, b, "by name")
        elif "score" in names[0] and "class" in names[1]:
            self._decided(b, a, "by name")
        else:
            index = [m.group(1) for n in names if (m := _TF1_OP_NAME.search(n))]
            if len(index) == len(names) and set(index) == {"1", "2"}:
                cls_first = index[0] == "1"
                self._decided(*((a, b) if cls_first else (b, a)), "by TFLite_Detection_PostProcess:k name")

    def _decided(self, classes: int, scores: int, how: str) -> tuple[int, int]:
        self._classes, self._scores = classes, scores
        self.notes.append(f"classes = output {classes}, scores = output {scores} ({how})")
        return classes, scores

    def _classes_by_value(self, a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
        """Decide which [1,N] output is the classes from one decode's values, or use TF1 order."""
        first, second = self._pair

        def integral(v: np.ndarray) -> bool:
            return bool(np.all(v == np.round(v)))

        def probability(v: np.ndarray) -> bool:
            return bool(np.all((v >= 0) & (v <= 1)))

        if a.size and integral(a) and not integral(b) and probability(b):
            return self._decided(first, second, "by value: integral vs scores in [0,1]")
        if a.size and integral(b) and not integral(a) and probability(a):
            return self._decided(second, first, "by value: integral vs scores in [0,1]")
        note = f"classes vs scores ambiguous by value; used TF1 order (classes = output {first})"
        if note not in self.notes:
            self.notes.append(note)
        return first, second

    def decode(self, outputs: list[np.ndarray]) -> Detections:
        real = self._real_values(outputs)
        n = real[self._boxes].shape[1]
        count = int(np.clip(np.floor(real[self._count].reshape(-1)[0]), 0, n))
        if self._classes is None or self._scores is None:  # set together by _decided
            a, b = (real[i].reshape(-1)[:count] for i in self._pair)
            cls_i, score_i = self._classes_by_value(a, b)
        else:
            cls_i, score_i = self._classes, self._scores
        classes = real[cls_i].reshape(-1)[:count]
        scores = real[score_i].reshape(-1)[:count]
        if not np.all(classes == np.round(classes)):
            raise ModelMismatchError(
                f"{self.model_path}: output {cls_i} taken as classes has non-integral values; "
                f"set model.decoder.classes_output={sum(self._pair) - cls_i}"
            )
        box = real[self._boxes].reshape(n, 4)[:count]
        ymin, xmin = np.maximum(box[:, 0], 0.0), np.maximum(box[:, 1], 0.0)
        ymax, xmax = np.minimum(box[:, 2], 1.0), np.minimum(box[:, 3], 1.0)
        keep = scores >= self.score_threshold
        return Detections(
            boxes=np.stack([xmin, ymin, xmax, ymax], axis=1)[keep],
            scores=scores[keep],
            classes=classes[keep].astype(np.int64),
        )
