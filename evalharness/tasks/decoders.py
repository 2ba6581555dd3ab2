"""Detector output decoders: raw output tensors -> boxes normalised to the model input.

A decoder is picked by name from config with :func:`build_decoder`: its dataclass fields are its
parameters, checked the one way every plug-in's settings are (:mod:`evalharness.schema`). ``bind``
checks the model's outputs before any image is read, so a classifier or a differently shaped
detector fails at once with the fix in the message;
``decode`` dequantises with the bound tensor details and returns :class:`Detections` whose boxes
are x1, y1, x2, y2 in 0..1 of the model input. Undoing the resize or letterbox to original-image
pixels (and clipping there) is the task's job, since only it knows how the image was prepared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from evalharness.errors import ConfigError, ModelMismatchError
from evalharness.runtime.tensors import TensorInfo
from evalharness.tasks.decoder_base import (  # noqa: F401 - re-exported: the decoders' public API
    DECODERS,
    Detections,
    _check_choice,
    _Decoder,
    _model_kind_hint,
    _shapes,
    build_decoder,
)
from evalharness.tasks.decoders_nms import YoloNmsDecoder
from evalharness.tasks.nms import nms

__all__ = [
    "DECODERS",
    "Detections",
    "SsdPostprocessDecoder",
    "YoloDecoder",
    "YoloNmsDecoder",
    "build_decoder",
]


SSD_EXPECTS = "TFLite_Detection_PostProcess outputs (boxes [1,N,4], classes [1,N], scores [1,N], count [1])"
_TF1_OP_NAME = re.compile(r"tflite_detection_postprocess:(\d)$")  # matched on lower-cased names


@DECODERS.register("ssd_postprocess")
@dataclass
class SsdPostprocessDecoder(_Decoder):
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
        self._classes = self._scores = None
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
            index = [_TF1_OP_NAME.search(n) for n in names]
            if all(index) and {m.group(1) for m in index} == {"1", "2"}:
                cls_first = index[0].group(1) == "1"
                self._decided(*((a, b) if cls_first else (b, a)), "by TFLite_Detection_PostProcess:k name")

    def _decided(self, classes: int, scores: int, how: str) -> None:
        self._classes, self._scores = classes, scores
        self.notes.append(f"classes = output {classes}, scores = output {scores} ({how})")

    def _classes_by_value(self, a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
        """Decide which [1,N] output is the classes from one decode's values, or use TF1 order."""
        first, second = self._pair

        def integral(v):
            return bool(np.all(v == np.round(v)))

        def probability(v):
            return bool(np.all((v >= 0) & (v <= 1)))

        if a.size and integral(a) and not integral(b) and probability(b):
            self._decided(first, second, "by value: integral vs scores in [0,1]")
        elif a.size and integral(b) and not integral(a) and probability(a):
            self._decided(second, first, "by value: integral vs scores in [0,1]")
        else:
            note = f"classes vs scores ambiguous by value; used TF1 order (classes = output {first})"
            if note not in self.notes:
                self.notes.append(note)
            return first, second
        return self._classes, self._scores

    def decode(self, outputs: list[np.ndarray]) -> Detections:
        real = self._real_values(outputs)
        n = real[self._boxes].shape[1]
        count = int(np.clip(np.floor(real[self._count].reshape(-1)[0]), 0, n))
        if self._classes is None:
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


def _tristate(decoder: str, param: str, value) -> bool | None:
    """Config value auto | true | false (YAML may give a bool or a string) -> None | True | False."""
    table = {"auto": None, "true": True, "false": False, True: True, False: False}
    key = value.lower() if isinstance(value, str) else value
    if key not in table:
        raise ConfigError(f"decoder {decoder}: {param}={value!r}; valid: auto, true, false")
    return table[key]


YOLO_EXPECTS = "one raw output [1, 4+C, N] or [1, N, 4+C] (YOLOv5 with objectness: 5+C)"


@DECODERS.register("yolo")
@dataclass
class YoloDecoder(_Decoder):
    """Raw YOLOv5/v8/v11 head output -> confidence filter -> class-aware greedy NMS -> top detections.

    One tensor of N candidates x (4 box + [objectness] + C class scores), channels-first
    ([1, 84, 8400], v8/v11) or transposed. Score = best class probability (x objectness when
    present); one label per box (no multi-label). Candidates with score > ``conf_threshold`` are
    capped at ``max_candidates`` by score, then suppressed greedily by descending score with a
    STABLE sort, so equal scores keep the lower anchor index first; IoU > ``iou_threshold``
    suppresses. The first ``max_detections`` survivors are returned, highest score first, NOT
    clipped: boxes reaching into letterbox padding are clipped by the task once it undoes the pad.
    """

    layout: str = "auto"  # auto | channels_first ([1, 4+C, N]) | channels_last ([1, N, 4+C])
    objectness: str | bool = "auto"  # auto: 85 attributes (5+80) = objectness, 84 = none
    num_classes: int | None = None  # auto: 80 when the attribute axis is 84 or 85
    box_format: str = "xywh"  # xywh: centre x, centre y, width, height; xyxy: corners
    normalized: str | bool = "auto"  # auto: boxes with max > 2 are input pixels (divided by w, h)
    conf_threshold: float = 0.001
    iou_threshold: float = 0.7
    max_detections: int = 300
    class_agnostic: bool = False
    max_candidates: int = 30000

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_choice("yolo", "layout", self.layout, ("auto", "channels_first", "channels_last"))
        _check_choice("yolo", "box_format", self.box_format, ("xywh", "xyxy"))
        self._objectness = _tristate("yolo", "objectness", self.objectness)
        self._normalized_cfg = _tristate("yolo", "normalized", self.normalized)
        if self.num_classes is not None and int(self.num_classes) < 1:
            raise ConfigError(f"decoder yolo: num_classes={self.num_classes}; use >= 1, or null for auto")

    def _attributes(self, dim: int) -> tuple[int, bool] | None:
        """(num_classes, has_objectness) if an axis of size ``dim`` can be the attribute axis."""
        for obj in (False, True) if self._objectness is None else (self._objectness,):
            if self.num_classes is not None:
                classes = int(self.num_classes)
            elif self._objectness is not None:
                classes = dim - 4 - obj
            else:
                classes = 80
            if classes >= 1 and dim == 4 + obj + classes:
                return classes, obj
        return None

    def bind(self, outputs: list[TensorInfo], input_hw: tuple[int, int], model_path: str) -> None:
        self.input_hw, self.model_path, self.notes = tuple(input_hw), model_path, []
        out = outputs[0] if len(outputs) == 1 else None
        if out is None or len(out.shape) != 3 or out.shape[0] != 1:
            raise ModelMismatchError(
                f"{model_path}: {_shapes(outputs)}; decoder yolo expects {YOLO_EXPECTS}"
                + _model_kind_hint(outputs)
            )
        shape = list(out.shape)
        if self.layout == "auto":
            axes = [ax for ax in (1, 2) if self._attributes(shape[ax])]
        else:
            axes = [1 if self.layout == "channels_first" else 2]
        if len(axes) == 2:
            raise ModelMismatchError(
                f"{model_path}: output {shape}: either axis could hold the box+class attributes; "
                "set model.decoder.layout=channels_first ([1, 4+C, N]) or channels_last ([1, N, 4+C])"
            )
        if not axes or not self._attributes(shape[axes[0]]):
            if self.num_classes is None and self._objectness is None:
                fix = "auto knows 84/85 = 80 classes; set model.decoder.num_classes (and .objectness for 5+C)"
            else:
                fix = "check model.decoder.num_classes and .objectness"
            where = "no axis" if not axes else f"axis {axes[0]} ({self.layout})"
            raise ModelMismatchError(
                f"{model_path}: output {shape}: {where} has 4+C (or 5+C) attributes for "
                f"num_classes={self.num_classes}, objectness={self.objectness}; {fix}"
            )
        self.outputs = list(outputs)
        self._attr_axis = axes[0]
        self._classes, self._has_obj = self._attributes(shape[axes[0]])
        self._pixels = None if self._normalized_cfg is None else not self._normalized_cfg
        layout = "channels_first" if self._attr_axis == 1 else "channels_last"
        self.notes.append(
            f"{layout}, {self._classes} classes, objectness {'yes' if self._has_obj else 'no'}, "
            f"{shape[3 - self._attr_axis]} candidates"
        )

    def _to_xyxy(self, b: np.ndarray) -> np.ndarray:
        if self.box_format == "xyxy":
            return b.copy()
        half = b[:, 2:4] / 2
        return np.concatenate([b[:, 0:2] - half, b[:, 0:2] + half], axis=1)

    def decode(self, outputs: list[np.ndarray]) -> Detections:
        pred = self._real_values(outputs)[0][0]
        if self._attr_axis == 1:
            pred = pred.T  # -> [N, attributes]
        boxes, cls_scores = pred[:, :4], pred[:, 4 + self._has_obj :]
        if self._pixels is None:
            self._pixels = bool(boxes.size and np.max(boxes) > 2)
            unit = "input pixels" if self._pixels else "normalised units"
            self.notes.append(f"boxes in {unit} (normalized=auto: max coordinate > 2 means pixels)")
        labels = np.argmax(cls_scores, axis=1)
        scores = np.take_along_axis(cls_scores, labels[:, None], axis=1)[:, 0]
        if self._has_obj:
            scores = scores * pred[:, 4]
        cand = np.flatnonzero(scores > self.conf_threshold)
        if cand.size > self.max_candidates:
            cand = cand[np.argsort(-scores[cand], kind="stable")[: self.max_candidates]]
        xyxy = self._to_xyxy(boxes[cand])
        keep = nms(
            xyxy,
            scores[cand],
            self.iou_threshold,
            classes=None if self.class_agnostic else labels[cand],
            max_keep=self.max_detections,
        )
        xyxy = xyxy[keep]
        if self._pixels:
            h, w = self.input_hw
            xyxy = xyxy / np.array([w, h, w, h], dtype=np.float64)
        return Detections(boxes=xyxy, scores=scores[cand][keep], classes=labels[cand][keep].astype(np.int64))
