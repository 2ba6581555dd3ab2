"""Identical inputs, proved: each prediction record carries hashes of the exact input it was fed.

"Desktop and phone disagree" is most often a preprocessing, layout or label drift rather than the
model, and nobody checks the inputs. So the loop hashes, per sample, what it hands the model:

- ``input_sha256``: the exact tensors fed (dtype, shape and bytes of each input, in the model's own
  layout and dtype): equal only where two runs fed the very same bits;
- ``input_float_sha256``: the real values those tensors stand for, as float32 in NHWC (an NCHW image
  input transposed back; an integer input dequantised with its own scale and zero point), so an ONNX
  model fed NCHW and a ``.tflite`` fed NHWC compare equal when their pixels are the same.

``report diff`` compares them image by image (``report/input_check.py``). The layout comes from the
task (an image input's ``nhwc``/``nchw``); an input of another shape is hashed as it is.
"""

from __future__ import annotations

import numpy as np

from evalharness.core.tensors import TensorInfo, real_nhwc, tensors_sha256


class InputIdentity:
    """The two hashes of a sample's inputs, for a model's ``inputs`` and the task's image layout."""

    def __init__(self, inputs: list[TensorInfo], layout: str | None) -> None:
        self.inputs, self.layout = inputs, layout

    def of(self, tensors: list[np.ndarray]) -> dict[str, str]:
        if len(tensors) != len(self.inputs):  # a stand-in model describing no inputs: the exact hash only
            return {"input_sha256": tensors_sha256(tensors)}
        exact = tensors_sha256(tensors)
        real = [real_nhwc(t, info, self.layout) for t, info in zip(tensors, self.inputs, strict=True)]
        # a float32 NHWC input is its own real values: the same bytes, hashed once (~0.7 ms an image)
        same = all(r is t for r, t in zip(real, tensors, strict=True))
        return {"input_sha256": exact, "input_float_sha256": exact if same else tensors_sha256(real)}
