"""The one way a ``.tflite`` file given by a user is read: guarded, bounded and checked for shape.

A model file reaches evalharness through ``model.path=``, a preset's path, ``evalharness inspect``
and ``explain`` (which reads the models of two runs). Each of those used to open it its own way, so
a FIFO blocked forever and a truncated flatbuffer was a ``struct.error`` traceback or an "internal
error" without the file's name (the Python readers of the file's metadata run before the runtime's
own verifier). Here it is read one way: special files refused, the size bounded, the ``TFL3``
identifier checked, and the flatbuffer walked (every table and vector inside the file, every tensor,
buffer and operator-code index in range) before anything else reads it, so that a damaged file is
one error naming the key, the file, what is wrong and the fix.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Callable
from typing import Any

from ai_edge_litert import schema_py_generated as schema

from evalharness.core.errors import ConfigError, ModelMismatchError
from evalharness.core.fileguard import file_error_reason
from evalharness.runtime.source_formats import refuse_tflite_only

# Flatbuffers address 2 GiB; a model over that keeps its weights after the flatbuffer (Buffer.offset).
# Larger than this bound is no single-device .tflite this tool can load whole.
MAX_MODEL_BYTES = 16 << 30
IDENTIFIER = b"TFL3"
_CHECKED: set[tuple[str, int, int]] = set()
_DAMAGED = (
    struct.error, IndexError, ValueError, TypeError, AttributeError, UnicodeDecodeError, OverflowError
)  # fmt: skip


def read_model_bytes(path: str, key: str = "model.path") -> bytes:
    """The bytes of the model at ``path``, or one :class:`ConfigError` naming ``key`` and the file."""
    refuse_tflite_only(path, key, "reading the model's flatbuffer (inspect, explain, sub-models)")
    where, mark = f"{key}={path}", stamp(path, key)
    buf = read_bounded(path, where)
    if mark not in _CHECKED:  # validation, each load and explain read one file: walked once
        check_model_bytes(buf, where)
        _CHECKED.add(mark)
    return buf


def check_model_file(path: str, key: str = "model.path") -> None:
    """:func:`read_model_bytes` for a caller that needs no bytes (a backend about to load the file):
    a file already walked unchanged is not read again."""
    if stamp(path, key) not in _CHECKED:
        read_model_bytes(path, key)


def stamp(path: str, key: str) -> tuple[str, int, int]:
    """(real path, size, mtime) of a regular model file within the size bound, else the error."""
    where = f"{key}={path}"
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the model file ({file_error_reason(exc, path)})") from None
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{where} is a directory; give the .tflite file itself")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{where} is not a regular file (FIFO, device or socket); give the .tflite itself")
    if st.st_size > MAX_MODEL_BYTES:
        raise ConfigError(f"{where} is {st.st_size} bytes, over the {MAX_MODEL_BYTES} a model may have here")
    return os.path.realpath(path), st.st_size, st.st_mtime_ns


def read_bounded(path: str, where: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_MODEL_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read the model file ({file_error_reason(exc, path)})") from None


def check_model_bytes(buf: bytes, where: str) -> None:
    """Refuse a buffer that is not a whole, self-consistent TFLite flatbuffer."""
    if len(buf) < 8 or buf[4:8] != IDENTIFIER:
        raise ConfigError(f"{where}: not a .tflite flatbuffer (no {IDENTIFIER.decode()} identifier)")
    try:
        problem = _walk(buf)
    except _DAMAGED:
        problem = "a table or vector points outside the file: truncated or overwritten"
    if problem:
        raise ConfigError(f"{where}: damaged .tflite flatbuffer ({problem}); re-export or re-download it")


def _walk(buf: bytes) -> str | None:
    """What is wrong with the model's structure, or None. Reads every field the loader reads."""
    model = schema.Model.GetRootAsModel(buf, 0)
    model.Version()
    buffers = model.BuffersLength()
    for i in range(buffers):
        b = model.Buffers(i)
        if b.DataLength():
            b.DataAsNumpy()
        if b.Offset() > 1 and b.Offset() + b.Size() > len(buf):
            return f"buffer {i} lies beyond the end of the file (truncated?)"
    codes = model.OperatorCodesLength()
    for i in range(codes):
        code = model.OperatorCodes(i)
        code.BuiltinCode(), code.DeprecatedBuiltinCode(), code.CustomCode()
    if model.SubgraphsLength() < 1:
        return "no subgraph"
    for g in range(model.SubgraphsLength()):
        problem = _walk_graph(model.Subgraphs(g), buffers, codes)
        if problem:
            return f"subgraph {g}: {problem}"
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        entry.Name()
        if not 0 <= entry.Buffer() < buffers:
            return f"metadata {i} names buffer {entry.Buffer()} of {buffers}"
    return None


def _walk_graph(graph: Any, buffers: int, codes: int) -> str | None:  # a generated SubGraph reader
    tensors = graph.TensorsLength()
    for i in range(tensors):
        t = graph.Tensors(i)
        t.Name(), t.Type()
        if t.ShapeLength():
            t.ShapeAsNumpy()
        if t.ShapeSignatureLength():
            t.ShapeSignatureAsNumpy()
        if not 0 <= t.Buffer() < max(buffers, 1):
            return f"tensor {i} names buffer {t.Buffer()} of {buffers}"
        q = t.Quantization()
        if q is not None:
            for n, get in ((q.ScaleLength(), q.ScaleAsNumpy), (q.ZeroPointLength(), q.ZeroPointAsNumpy)):
                if n:
                    get()
    ends = [*_indices(graph.InputsLength(), graph.InputsAsNumpy)]
    ends += _indices(graph.OutputsLength(), graph.OutputsAsNumpy)
    if not ends or any(not 0 <= int(i) < tensors for i in ends):
        return f"its inputs/outputs name tensors outside its {tensors}"
    for k in range(graph.OperatorsLength()):
        op = graph.Operators(k)
        if not 0 <= op.OpcodeIndex() < codes:
            return f"operator {k} names operator code {op.OpcodeIndex()} of {codes}"
        used = [*_indices(op.InputsLength(), op.InputsAsNumpy)]
        used += _indices(op.OutputsLength(), op.OutputsAsNumpy)
        if any(not -1 <= int(i) < tensors for i in used):
            return f"operator {k} names a tensor outside its {tensors}"
    return None


def _indices(length: int, get: Callable[[], Any]) -> list[int]:
    return list(get()) if length else []


def refuse_dynamic_inputs(buf: bytes, where: str) -> None:
    """An input whose height, width or channels the file leaves open (-1 in its shape signature) has
    a placeholder of 1 in its shape: fed as it stands, a run would score 1x1 images. Refused; a
    dynamic batch (the first dimension) is fine."""
    graph = schema.Model.GetRootAsModel(buf, 0).Subgraphs(0)
    for i in _indices(graph.InputsLength(), graph.InputsAsNumpy):
        tensor = graph.Tensors(int(i))
        signature = [int(d) for d in tensor.ShapeSignatureAsNumpy()] if tensor.ShapeSignatureLength() else []
        if any(d < 0 for d in signature[1:]):
            name = (tensor.Name() or b"").decode(errors="replace")
            raise ModelMismatchError(
                f"{where}: input {name!r} has a dynamic size {signature} (-1 in the file's shape "
                "signature); evalharness feeds the size the file fixes, never a placeholder: export "
                "the model with a fixed input height and width"
            )
