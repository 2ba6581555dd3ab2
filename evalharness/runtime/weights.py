"""The weight tensors of a ``.tflite`` file, located byte by byte, so they can be measured and edited.

Pruning and clustering (and the model-optimisation guide's size figures) are about an op's *weight*
tensor: the kernel of a convolution, a depthwise convolution, a transposed convolution or a fully
connected layer (input 1 of each), when it is a constant. A weight that reaches its op through a
``DEQUANTIZE`` (float16 or weight-only variants) is the constant behind it. A buffer that two ops
share is one weight tensor (listed once, at its first op).

Each :class:`WeightTensor` knows where its bytes lie in the file (``offset``, ``nbytes``), so a
variant is written by replacing those bytes in place (:func:`replace_values`: same dtype, same size,
the flatbuffer untouched), and :func:`real_values` gives the values the op computes with (stored
values, or ``(q - zero_point) * scale`` per channel for a quantized tensor), which is what sparsity
(exact zeros) and unique counts are measured on. The file is read with LiteRT's generated schema,
through :func:`evalharness.runtime.model_guard.read_model_bytes` (a damaged file is one error line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from evalharness.runtime.model_guard import read_model_bytes

__all__ = [
    "WeightTensor",
    "real_values",
    "replace_values",
    "store_real_values",
    "stored_values",
    "weight_tensors",
]

_OP = schema.BuiltinOperator
# op -> (input index of its weights, axis of its output channels)
WEIGHT_INPUTS = {
    _OP.CONV_2D: (1, 0),
    _OP.DEPTHWISE_CONV_2D: (1, 3),
    _OP.FULLY_CONNECTED: (1, 0),
    _OP.TRANSPOSE_CONV: (1, 0),
    _OP.CONV_3D: (1, 4),
}
_OP_NAMES = {v: k for k, v in vars(_OP).items() if not k.startswith("_")}
_NUMPY = {
    schema.TensorType.FLOAT32: np.float32,
    schema.TensorType.FLOAT16: np.float16,
    schema.TensorType.INT8: np.int8,
    schema.TensorType.UINT8: np.uint8,
}


class WeightDescription(TypedDict):
    """A weight tensor as a report names it: the tensor, the op that reads it and its shape."""

    name: str
    op: str
    op_index: int
    shape: list[int]


@dataclass(frozen=True)
class WeightTensor:
    """One constant weight tensor: which op reads it, its shape and type, where its bytes are."""

    index: int  # tensor index in subgraph 0
    name: str
    op_index: int  # the first op that reads it (execution order)
    op: str  # that op's type (CONV_2D, ...)
    shape: tuple[int, ...]
    dtype: str  # numpy name of the stored values
    offset: int  # first byte of the values in the file
    nbytes: int
    channel_axis: int  # the output-channel axis of the op's kernel
    scale: tuple[float, ...] = ()  # quantized tensors: per-tensor (1) or per-channel scales
    zero_point: tuple[int, ...] = ()
    quantized_dimension: int = 0

    @property
    def elements(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def describe(self) -> WeightDescription:
        return {"name": self.name, "op": self.op, "op_index": self.op_index, "shape": list(self.shape)}


def weight_tensors(path: str) -> tuple[bytes, list[WeightTensor]]:
    """(the file's bytes, its weight tensors in execution order) of subgraph 0."""
    buf = read_model_bytes(path)
    model = schema.Model.GetRootAsModel(buf, 0)
    start = np.frombuffer(buf, np.uint8).ctypes.data  # the address the generated views lie from
    graph = model.Subgraphs(0)
    producers: dict[int, Any] = {}  # tensor index -> the generated Operator reader making it
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        for t in op.OutputsAsNumpy() if op.OutputsLength() else ():
            producers[int(t)] = op
    found: list[WeightTensor] = []
    seen: set[int] = set()
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        code = model.OperatorCodes(op.OpcodeIndex())
        kind = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if kind not in WEIGHT_INPUTS or op.InputsLength() <= WEIGHT_INPUTS[kind][0]:
            continue
        index = int(op.Inputs(WEIGHT_INPUTS[kind][0]))
        index = _behind_dequantize(model, producers, index)
        tensor = graph.Tensors(index) if index >= 0 else None
        if tensor is None or tensor.Type() not in _NUMPY or not tensor.Buffer() or tensor.Buffer() in seen:
            continue
        place = _data_place(model.Buffers(tensor.Buffer()), start)
        if place is None:
            continue
        seen.add(tensor.Buffer())
        found.append(_weight(tensor, index, i, _OP_NAMES.get(kind, str(kind)), WEIGHT_INPUTS[kind][1], place))
    return buf, found


def _behind_dequantize(model: Any, producers: dict[int, Any], index: int) -> int:
    op = producers.get(index)
    if op is None:
        return index
    code = model.OperatorCodes(op.OpcodeIndex())
    if max(code.BuiltinCode(), code.DeprecatedBuiltinCode()) == _OP.DEQUANTIZE and op.InputsLength():
        return int(op.Inputs(0))
    return -1  # computed, not a constant


def _data_place(buffer: Any, start: int) -> tuple[int, int] | None:
    """(offset, size) of a buffer's bytes in the file whose first byte is at address ``start``;
    None for an empty buffer. The generated ``DataAsNumpy`` is a view into the file's bytes, so its
    address less the file's is where the data lies (no table offset read here)."""
    if buffer.Offset() > 1:  # models over 2 GB keep buffers after the flatbuffer
        return int(buffer.Offset()), int(buffer.Size())
    if not buffer.DataLength():
        return None
    data = buffer.DataAsNumpy()
    return int(data.ctypes.data) - start, int(data.nbytes)


def _weight(
    tensor: Any, index: int, op_index: int, op: str, axis: int, place: tuple[int, int]
) -> WeightTensor:
    q = tensor.Quantization()
    scale = tuple(float(s) for s in q.ScaleAsNumpy()) if q is not None and q.ScaleLength() else ()
    zero = tuple(int(z) for z in q.ZeroPointAsNumpy()) if q is not None and q.ZeroPointLength() else ()
    shape = tuple(int(s) for s in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
    return WeightTensor(
        index=index,
        name=(tensor.Name() or b"").decode("utf-8", "replace"),
        op_index=op_index,
        op=op,
        shape=shape,
        dtype=np.dtype(_NUMPY[tensor.Type()]).name,
        offset=place[0],
        nbytes=place[1],
        channel_axis=axis if axis < len(shape) else 0,
        scale=scale,
        zero_point=zero,
        quantized_dimension=int(q.QuantizedDimension()) if q is not None else 0,
    )


def stored_values(buf: bytes | bytearray, w: WeightTensor) -> np.ndarray:
    """The values as stored (a read-only view for ``bytes``), shaped as the tensor."""
    values = np.frombuffer(buf, dtype=w.dtype, count=w.nbytes // np.dtype(w.dtype).itemsize, offset=w.offset)
    return values.reshape(w.shape) if values.size == w.elements else values


def _channel_params(w: WeightTensor, ndim: int) -> tuple[np.ndarray, np.ndarray]:
    """(scale, zero point) of a quantized tensor, shaped to broadcast over its values."""

    def shaped(values: tuple[float, ...], default: float) -> np.ndarray:
        shape = [1] * ndim
        if len(values) > 1 and ndim:
            shape[w.quantized_dimension] = -1
        return np.asarray(values or (default,), np.float64).reshape(shape)

    return shaped(w.scale, 1.0), shaped(w.zero_point, 0.0)


def real_values(buf: bytes | bytearray, w: WeightTensor) -> np.ndarray:
    """The values the op computes with: stored floats, or dequantized integers (per channel)."""
    values = stored_values(buf, w)
    if not w.scale or values.dtype.kind == "f":
        return values.astype(np.float64)
    scale, zero = _channel_params(w, values.ndim)
    real: np.ndarray = (values.astype(np.float64) - zero) * scale  # numpy's stubs: Any
    return real


def store_real_values(buf: bytearray, w: WeightTensor, values: np.ndarray) -> np.ndarray:
    """Write real ``values`` over the tensor in place, quantized with the tensor's own scales and zero
    points when it is an integer tensor (0.0 is its zero point exactly); returns what now stands."""
    if np.dtype(w.dtype).kind == "f":
        replace_values(buf, w, values)
        return np.asarray(values, dtype=w.dtype).astype(np.float64)
    scale, zero = _channel_params(w, np.ndim(values))
    info = np.iinfo(w.dtype)
    replace_values(buf, w, np.clip(np.round(np.asarray(values) / scale) + zero, info.min, info.max))
    return real_values(buf, w)


def replace_values(buf: bytearray, w: WeightTensor, values: np.ndarray) -> None:
    """Write ``values`` over the tensor's bytes in place (same dtype, same number: same size)."""
    data = np.ascontiguousarray(values, dtype=w.dtype).tobytes()
    if len(data) != w.nbytes:
        raise ValueError(f"{w.name}: {len(data)} bytes for a {w.nbytes}-byte buffer")
    buf[w.offset : w.offset + w.nbytes] = data
