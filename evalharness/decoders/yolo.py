"""Raw YOLOv5/v8/v11 heads: one tensor of candidates -> confidence filter -> class-aware NMS."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from evalharness.core.errors import ConfigError, ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.decoders.base import DECODERS, Decoder, Detections, _check_choice, _model_kind_hint, _shapes
from evalharness.decoders.nms import nms_counting_ties, score_order


def _tristate(decoder: str, param: str, value: str | bool) -> bool | None:
    """Config value auto | true | false (YAML may give a bool or a string) -> None | True | False."""
    table = {"auto": None, "true": True, "false": False, True: True, False: False}
    key = value.lower() if isinstance(value, str) else value
    if key not in table:
        raise ConfigError(f"decoder {decoder}: {param}={value!r}; valid: auto, true, false")
    return table[key]


YOLO_EXPECTS = "one raw output [1, 4+C, N] or [1, N, 4+C] (YOLOv5 with objectness: 5+C)"


@DECODERS.register("yolo")
@dataclass
class YoloDecoder(Decoder):
    """Raw YOLOv5/v8/v11 head output -> confidence filter -> class-aware greedy NMS -> top detections.

    One tensor of N candidates x (4 box + [objectness] + C class scores), channels-first
    ([1, 84, 8400], v8/v11) or transposed. Score = best class probability (x objectness when
    present); one label per box (no multi-label). Candidates with score > ``conf_threshold`` are
    capped at ``max_candidates`` by score, then suppressed greedily by descending score, equal scores
    the higher anchor index first (numpy's ``argsort()[::-1]``, made deterministic:
    :func:`~evalharness.decoders.nms.score_order`, which says why); IoU > ``iou_threshold``
    suppresses. The first ``max_detections`` survivors are returned, highest score first, NOT
    clipped: boxes reaching into letterbox padding are clipped by the task once it undoes the pad.
    ``nms_ties`` of the result counts the suppressions that equal scores decided.
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
        attributes = self._attributes(shape[axes[0]]) if axes else None
        if attributes is None:
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
        self._classes, self._has_obj = attributes
        self._pixels = None if self._normalized_cfg is None else not self._normalized_cfg
        layout = "channels_first" if self._attr_axis == 1 else "channels_last"
        self.notes.append(
            f"{layout}, {self._classes} classes, objectness {'yes' if self._has_obj else 'no'}, "
            f"{shape[3 - self._attr_axis]} candidates"
        )

    def _to_xyxy(self, b: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        corners: npt.NDArray[np.float64]  # numpy's stubs type copy() and concatenate() of these as Any
        if self.box_format == "xyxy":
            corners = b.copy()
        else:
            half = b[:, 2:4] / 2
            corners = np.concatenate([b[:, 0:2] - half, b[:, 0:2] + half], axis=1)
        return corners

    def decode(self, outputs: list[np.ndarray]) -> Detections:
        kept = self._kept_rows(self._real_values(outputs)[0][0])
        return Detections(boxes=kept.boxes, scores=kept.scores, classes=kept.classes, nms_ties=kept.ties)

    def _kept_rows(self, raw: npt.NDArray[np.float64]) -> KeptRows:
        """The head's rows that survive the score filter and NMS, best first: their row index (for
        the mask coefficients or keypoints a seg/pose row carries after the class scores), boxes
        normalised to the input, scores and classes."""
        pred = raw.T if self._attr_axis == 1 else raw  # -> [N, attributes]
        first = 4 + self._has_obj
        boxes, cls_scores = pred[:, :4], pred[:, first : first + self._classes]
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
            # the best by the NMS's own order, then back in anchor order (which decides its ties)
            cand = np.sort(cand[score_order(scores[cand])[: self.max_candidates]])
        xyxy = self._to_xyxy(boxes[cand])
        keep, ties = nms_counting_ties(
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
        rows = cand[keep]
        return KeptRows(pred[rows], xyxy, scores[rows], labels[rows].astype(np.int64), ties)


@dataclass
class KeptRows:
    """What survived NMS: the whole rows (box, scores, then what a seg/pose head adds), the decoded
    boxes, scores and classes of the same rows, and how many suppressions equal scores decided
    (None: the model's own NMS, whose ties are not seen)."""

    rows: npt.NDArray[np.float64]
    boxes: npt.NDArray[np.float64]
    scores: npt.NDArray[np.float64]
    classes: npt.NDArray[np.int64]
    ties: int | None = None
