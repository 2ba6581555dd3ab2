"""Runtime-neutral description of a model tensor, so tasks never touch runtime objects."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


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
        return (np.asarray(values, dtype=np.float32) - np.float32(self.zero_point)) * np.float32(self.scale)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d
