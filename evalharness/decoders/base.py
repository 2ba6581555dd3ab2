"""What every output decoder shares: :class:`Detections`, the ``DECODERS`` registry,
:func:`build_decoder` and the bound-state base class.

A decoder is picked by name from config with :func:`build_decoder`: its dataclass fields are its
parameters, checked the one way every plug-in's settings are (:mod:`evalharness.core.schema`).
``bind`` checks the model's outputs before any image is read, so a classifier or a differently
shaped detector fails at once with the fix in the message; ``decode`` dequantises with the bound
tensor details and returns :class:`Detections` whose boxes are x1, y1, x2, y2 in 0..1 of the model
input. Undoing the resize or letterbox to original-image pixels (and clipping there) is the task's
job, since only it knows how the image was prepared. The decoders live one family per module
(``ssd``, ``yolo``, ``yolo_nms``, ``yolo_seg``, ``yolo_pose``), registered lazily by name; an
outside decoder registers itself with ``@DECODERS.register(name)`` from a plug-in module or the
``evalharness.output_decoders`` entry points.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from evalharness.core.errors import ConfigError
from evalharness.core.registry import Registry
from evalharness.core.schema import check_keys, instantiate
from evalharness.core.tensors import TensorInfo


@dataclass
class Detections:
    boxes: np.ndarray  # [N, 4] float64, x1, y1, x2, y2 normalised to the model input (0..1)
    scores: np.ndarray  # [N] float64
    classes: np.ndarray  # [N] int64, the model's own 0-based class index
    # YOLO-seg (decoders.yolo_seg): each kept row's mask coefficients [N, M] and the image's
    # prototypes [h, w, M]; the task makes masks of them once it knows the letterbox
    mask_coefficients: np.ndarray | None = None
    prototypes: np.ndarray | None = None
    # YOLO-pose (decoders.yolo_pose): [N, K, 3] x, y normalised to the model input, visibility score
    keypoints: np.ndarray | None = None
    # suppressions of a box by a kept box of exactly its score (decoders.nms: which one is kept is
    # decided by the order equal scores are visited in); None: the decoder ran no NMS of its own
    nms_ties: int | None = None

    def __len__(self) -> int:
        return int(self.scores.shape[0])

    def rows(self) -> list[list[float]]:
        """``[class, score, x, y, w, h]`` rows (normalised to the model input): what
        :mod:`evalharness.stats.decoded` and :mod:`evalharness.stats.boxes` compare."""
        return [
            [int(c), float(s), float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])]
            for b, s, c in zip(self.boxes, self.scores, self.classes, strict=True)
        ]


def build_decoder(name: str, params: Mapping[str, Any] | None = None) -> Decoder:
    """The decoder ``name`` with ``params`` checked against its fields (one-line ConfigError)."""
    cls = DECODERS.get(name)
    check_keys(cls, params or {}, f"decoder {name}", what="parameter")
    decoder: Decoder = instantiate(cls, params, f"decoder {name}", "model.decoder")
    return decoder


def _shapes(outputs: list[TensorInfo]) -> str:
    return f"{len(outputs)} output(s) {[list(o.shape) for o in outputs]}"


def _model_kind_hint(outputs: list[TensorInfo]) -> str:
    """What the outputs look like, as a hint appended to a mismatch error ('' when unclear)."""
    if len(outputs) == 1 and outputs[0].shape and int(np.prod(outputs[0].shape)) == outputs[0].shape[-1]:
        return "; is this a classifier? use task=imagenet"
    if len(outputs) == 1 and len(outputs[0].shape) == 3:
        return "; is this a raw YOLO output? set model.decoder.name=yolo"
    if len(outputs) == 4 and any(len(o.shape) == 3 and o.shape[-1] == 4 for o in outputs):
        return "; is this a TFLite_Detection_PostProcess model? set model.decoder.name=ssd_postprocess"
    return ""


def detector_decoder(outputs: list[TensorInfo]) -> str | None:
    """The built-in decoder these outputs look made for, or None: a raw YOLO head of COCO's 80 classes
    (one [1, 84|85, N] or [1, N, 84|85] tensor) or TFLite_Detection_PostProcess' four outputs. For
    the hint that sends a detector run under a classification task to ``task=coco``."""
    if len(outputs) == 1 and len(outputs[0].shape) == 3 and outputs[0].shape[0] == 1:
        return "yolo" if {84, 85} & {int(d) for d in outputs[0].shape[1:]} else None
    if len(outputs) == 4 and any(len(o.shape) == 3 and o.shape[-1] == 4 for o in outputs):
        return "ssd_postprocess"
    return None


def _check_choice(decoder: str, param: str, value: object, choices: tuple[object, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"decoder {decoder}: {param}={value!r}; valid: {', '.join(map(str, choices))}")


class Decoder:
    """What ``bind`` keeps: the output details, the input size and the model path (for errors).

    Not a dataclass: its attributes are state, so a decoder's dataclass fields are its parameters."""

    outputs: list[TensorInfo]
    input_hw: tuple[int, ...]  # (height, width)
    model_path: str
    notes: list[str]  # what bind/decode decided (output order, layout), for the run record
    # what the decoder gives beside boxes, as COCO's iouType names it (``segm``: masks, ``keypoints``):
    # the metric a repair of such a head bounds by default (tasks/coco/comparison.py); None: boxes only
    shape_kind: ClassVar[str | None] = None

    def __post_init__(self) -> None:
        self.notes = []

    def bind(self, outputs: list[TensorInfo], input_hw: tuple[int, int], model_path: str) -> None:
        """Check the model's outputs and keep their details; each decoder family defines it."""
        raise NotImplementedError(f"{type(self).__name__} does not define bind")

    def decode(self, outputs: list[npt.NDArray[Any]]) -> Detections:
        """The raw outputs of one image as :class:`Detections`; each decoder family defines it."""
        raise NotImplementedError(f"{type(self).__name__} does not define decode")

    def _real_values(self, outputs: list[npt.NDArray[Any]]) -> list[npt.NDArray[np.float64]]:
        """Dequantised float64 copies of the raw outputs, in the bound order."""
        self._check_bound()
        pairs = zip(self.outputs, outputs, strict=True)
        return [np.asarray(info.dequantize(v), dtype=np.float64) for info, v in pairs]

    def _real_value(
        self, outputs: list[npt.NDArray[Any]], at: int, dtype: type = np.float64
    ) -> npt.NDArray[Any]:
        """Output ``at`` dequantised, as ``dtype`` (a decoder that reads only some outputs, or reads
        one in float32 to keep it small)."""
        self._check_bound()
        return np.asarray(self.outputs[at].dequantize(outputs[at]), dtype=dtype)

    def _check_bound(self) -> None:
        if not getattr(self, "outputs", None):
            raise RuntimeError(f"{type(self).__name__}.decode called before bind")


DECODERS: Registry[type[Decoder]] = Registry(
    "output decoder",
    base=Decoder,
    lazy={
        "ssd_postprocess": "evalharness.decoders.ssd:SsdPostprocessDecoder",
        "yolo": "evalharness.decoders.yolo:YoloDecoder",
        "yolo_nms": "evalharness.decoders.yolo_nms:YoloNmsDecoder",
        "yolo_pose": "evalharness.decoders.yolo_pose:YoloPoseDecoder",
        "yolo_seg": "evalharness.decoders.yolo_seg:YoloSegDecoder",
    },
)
