"""What explain counts as the answer of a model: a classifier's classes or a detector's boxes.

- classifier (one score vector, no decoder): the dequantized scores; the answer is the top-1 class,
  restored when B's top-1 is A's.
- detector (the run's ``model.decoder``, the decoder ``task=coco`` used): the decoded detections
  (boxes normalised to the model input). B's answer is A's when the two match as ``report diff``
  counts an unchanged image (every detection with score >= the comparison's ``min_score`` paired
  one-to-one with a same-class detection at IoU >= ``iou``; IoU does not change under the stretch or
  letterbox to original-image pixels), so the images explain picks as changed are those the run
  comparison listed, and "restored" means "no box lost, none new".

Beside that yes/no, each image gets the decoded comparison of :mod:`evalharness.stats.decoded`
(top-5 overlap and score change; or matched-box IoU, class agreement, score change).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalharness.decoders.base import build_decoder
from evalharness.explain.sides import ExplainError, Side
from evalharness.explain.trace import Dequantizer
from evalharness.stats.decoded import boxes_agree, compare_boxes, compare_classes, top_classes


class Answers:
    """One side's answers from its output tensors (raw values by tensor index)."""

    def __init__(self, side: Side, deq: Dequantizer, options: dict[str, Any]) -> None:
        graph, run = side.graph, side.run
        self.outputs, self.deq = list(graph.outputs), deq
        self.min_score, self.iou = float(options["min_score"]), float(options["iou"])
        decoder = dict(run.provenance.config.section("model", "decoder"))
        self.decoder = None
        if decoder.get("name"):
            self.kind = "detector"
            self.decoder = build_decoder(decoder.pop("name"), decoder)
            infos = [deq.infos[t] for t in self.outputs]  # runtime shapes (a custom op: unset in the file)
            size = run.provenance.model_input
            self.decoder.bind(infos, (int(size.get("height", 1)), int(size.get("width", 1))), graph.path)
        elif len(self.outputs) == 1 and _is_vector(graph.tensor_signature(self.outputs[0])[0]):
            self.kind = "classifier"
        else:
            raise ExplainError(
                f"{graph.path}: {len(self.outputs)} output(s) and no model.decoder; explain restores the "
                "top-1 class of a one-score-vector classifier or the decoded boxes of a detector preset"
            )

    def of(self, values: dict[int, np.ndarray]) -> Any:
        """The decoded answer: a classifier's real scores, a detector's ``[class, score, x, y, w, h]``."""
        if self.decoder is not None:
            return self.decoder.decode([values[t] for t in self.outputs]).rows()
        return self.deq(self.outputs[0], values[self.outputs[0]]).ravel()

    def same(self, a: Any, b: Any) -> bool:
        if self.kind == "detector":
            return boxes_agree(a, b, self.min_score, self.iou)
        return top_classes(a, 1) == top_classes(b, 1)

    def label(self, answer: Any) -> Any:
        """What the images table shows as the answer: the top-1 class, or the number of boxes."""
        if self.kind == "detector":
            return sum(1 for r in answer if r[1] >= self.min_score)
        return top_classes(answer, 1)[0]

    def compare(self, a: Any, b: Any) -> dict[str, Any]:
        if self.kind == "detector":
            return compare_boxes(a, b, self.min_score, self.iou)
        return compare_classes(a, b)


def _is_vector(shape: tuple[Any, ...]) -> bool:
    return bool(shape) and shape[-1] >= 2 and int(np.prod(shape)) == shape[-1]
