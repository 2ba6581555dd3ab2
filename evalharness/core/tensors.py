"""Runtime-neutral description of a model tensor, so tasks never touch runtime objects."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evalharness.core.errors import ModelMismatchError


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

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d


def require_real(outputs: list[TensorInfo], model_path: str, what: str) -> None:
    """Outputs a task ranks or decodes must be real numbers: a bool or complex tensor would be
    ranked by an order that means nothing, or crash inside top-k. One error naming the output."""
    for out in outputs:
        if np.dtype(out.dtype).kind not in "iuf":
            raise ModelMismatchError(
                f"{model_path}: output {out.name!r} is {out.dtype}, not real numbers; {what}"
            )
