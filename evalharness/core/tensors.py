"""Runtime-neutral description of a model tensor, so tasks never touch runtime objects."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from evalharness.core.errors import ModelMismatchError


class TensorInfoRecord(TypedDict):
    """A model tensor as metrics.json's ``provenance.model.inputs``/``outputs`` and ``inspect`` write it."""

    name: str
    index: int
    shape: list[int]
    dtype: str
    scale: float
    zero_point: int


@dataclass(frozen=True)
class TensorInfo:
    name: str
    index: int
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name
    scale: float = 0.0  # 0 = not quantised
    zero_point: int = 0

    @property
    def quantized(self) -> bool:
        return self.scale > 0 and np.dtype(self.dtype).kind in "iu"

    def dequantize(self, values: np.ndarray) -> np.ndarray:
        """Real values of a quantised tensor ((q - zp) * scale); float tensors unchanged."""
        if not self.quantized:
            return np.asarray(values)
        real: np.ndarray = (np.asarray(values, dtype=np.float32) - np.float32(self.zero_point)) * np.float32(
            self.scale
        )
        return real

    @property
    def nbytes(self) -> int:
        """Bytes of one tensor of this shape and dtype; 0 where a dimension is not fixed (-1, 0)."""
        try:
            itemsize = np.dtype(self.dtype).itemsize
        except TypeError:  # a dtype numpy does not name (a string tensor's)
            return 0
        return 0 if any(d <= 0 for d in self.shape) else math.prod(self.shape) * itemsize  # exact, no wrap

    def as_dict(self) -> TensorInfoRecord:
        return {
            "name": self.name,
            "index": self.index,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "scale": self.scale,
            "zero_point": self.zero_point,
        }


def require_real(outputs: list[TensorInfo], model_path: str, what: str) -> None:
    """Outputs a task ranks or decodes must be real numbers: a bool or complex tensor would be
    ranked by an order that means nothing, or crash inside top-k. One error naming the output."""
    for out in outputs:
        if np.dtype(out.dtype).kind not in "iuf":
            raise ModelMismatchError(
                f"{model_path}: output {out.name!r} is {out.dtype}, not real numbers; {what}"
            )


def tensors_sha256(tensors: list[np.ndarray]) -> str:
    """sha256 of the tensors' dtypes, shapes and C-order bytes, in input order (a record's input hash)."""
    digest = hashlib.sha256()
    for t in tensors:
        a = np.ascontiguousarray(t)
        digest.update(f"{a.dtype.str}{list(a.shape)};".encode())
        digest.update(a.view(np.uint8).reshape(-1).data)
    return digest.hexdigest()


def real_nhwc(tensor: np.ndarray, info: TensorInfo, layout: str | None) -> np.ndarray:
    """The float32 values ``tensor`` stands for (an integer input dequantised with its own scale and
    zero point), transposed to NHWC where ``layout`` is nchw: what two layouts and dtypes compare by."""
    real = np.asarray(info.dequantize(tensor), dtype=np.float32)
    return nhwc(real) if layout == "nchw" and real.ndim == 4 else real


def nhwc(array: np.ndarray) -> np.ndarray:
    """A C-order NHWC copy of an NCHW array. An image's few channels are copied one by one (a
    strided store per channel: ~4x faster than numpy's general transposing copy, which an NCHW
    input's identity pays per sample); many channels go the general way."""
    n, c, h, w = array.shape
    if c > 4:
        return np.ascontiguousarray(array.transpose(0, 2, 3, 1))
    out = np.empty((n, h, w, c), array.dtype)
    for j in range(c):
        out[..., j] = array[:, j]
    return out
