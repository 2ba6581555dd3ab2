"""What a ``.tflite`` file says about itself, read without loading it into an interpreter.

Three places carry settings in real files:

- the ``TFLITE_METADATA`` buffer (TF-Hub, Model Maker, Ultralytics): a flatbuffer in the TFLite
  metadata schema (``metadata_schema.fbs``, file identifier ``M001``) with the model's name,
  version, author, licence, per-tensor ``NormalizationOptions`` (mean/std) and associated files
  (``TENSOR_AXIS_LABELS``: the label file);
- a zip archive appended to the flatbuffer holding those associated files (``imagenet_labels.txt``,
  ``labels_without_background.txt``, Ultralytics' ``temp_meta.txt``);
- Ultralytics' ``temp_meta.txt`` (or ``metadata.json``): a Python dict literal / JSON object with
  ``task``, ``imgsz``, ``stride``, ``batch``, ``names``.

The metadata flatbuffer is read with ``flatbuffers``' generic table accessors and the field order
of ``metadata_schema.fbs``; the only maintained-looking reader (``tflite-support``) last shipped in
2023 and pins old TensorFlow-era dependencies, so it is not used. The model flatbuffer itself is
read with ``ai_edge_litert``'s generated schema, as :mod:`evalharness.runtime.modelgen` writes it.
"""

from __future__ import annotations

import ast
import io
import json
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema
from flatbuffers import number_types as nt
from flatbuffers.table import Table

from evalharness.core.errors import ConfigError
from evalharness.core.untrusted import check_json_limits
from evalharness.runtime.model_guard import read_model_bytes

__all__ = ["ModelFile", "TensorSummary", "read_model_file"]

_DTYPES = {v: k.lower() for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
_OPS = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
_TENSOR_AXIS_LABELS = 2  # metadata_schema.fbs AssociatedFileType
_NORMALIZATION_OPTIONS = 1  # metadata_schema.fbs ProcessUnitOptions union tag
ULTRALYTICS_FILES = ("temp_meta.txt", "metadata.json")


@dataclass(frozen=True)
class TensorSummary:
    name: str
    shape: list[int]
    dtype: str
    scale: float = 0.0
    zero_point: int = 0

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "shape": self.shape,
            "dtype": self.dtype,
            "quantization": {"scale": self.scale, "zero_point": self.zero_point},
        }


@dataclass
class ModelFile:
    """Everything the file says; ``None``/empty where it says nothing."""

    path: str
    inputs: list[TensorSummary]
    outputs: list[TensorSummary]
    op_histogram: dict[str, int]
    metadata_buffers: list[str]
    description: str | None = None  # the converter's string ("MLIR Converted.")
    metadata: dict = field(default_factory=dict)  # name, version, author, license, description
    normalization: dict | None = None  # {"mean": [...], "std": [...]} of the first input
    label_file: str | None = None  # associated file holding the labels (name inside the zip)
    labels: list[str] | None = None
    attached_files: list[str] = field(default_factory=list)
    ultralytics: dict | None = None

    def summary(self) -> dict:
        return {
            "inputs": [t.as_dict() for t in self.inputs],
            "outputs": [t.as_dict() for t in self.outputs],
            "op_histogram": self.op_histogram,
            "metadata_buffers": self.metadata_buffers,
            "converter": self.description,
            "metadata": self.metadata,
            "normalization": self.normalization,
            "labels": None if self.labels is None else {"count": len(self.labels), "source": self.label_file},
            "attached_files": self.attached_files,
            "ultralytics": self.ultralytics,
        }


def read_model_file(path: str) -> ModelFile:
    """Parse ``path`` (through :func:`read_model_bytes`: a file that is not a whole TFLite flatbuffer
    is one ConfigError naming it)."""
    buf = read_model_bytes(path)
    model = schema.Model.GetRootAsModel(buf, 0)
    graph = model.Subgraphs(0)
    tensors = lambda ids: [_tensor(graph.Tensors(int(i))) for i in ids]  # noqa: E731
    info = ModelFile(
        path=path,
        inputs=tensors(graph.InputsAsNumpy()),
        outputs=tensors(graph.OutputsAsNumpy()),
        op_histogram=_op_histogram(model),
        metadata_buffers=[model.Metadata(i).Name().decode() for i in range(model.MetadataLength())],
        description=(model.Description() or b"").decode(errors="replace") or None,
    )
    files = _attached(buf)
    info.attached_files = sorted(files)
    raw = _metadata_buffer(buf, model, "TFLITE_METADATA")
    if raw is not None:
        _read_tflite_metadata(raw, info)
    label_name = info.label_file or next((n for n in sorted(files) if "label" in n.lower()), None)
    if label_name in files:
        info.label_file = label_name
        info.labels = files[label_name].decode("utf-8", errors="replace").rstrip().splitlines()
    for name in ULTRALYTICS_FILES:
        if name in files:
            info.ultralytics = _ultralytics(files[name], path)
            break
    return info


def _tensor(t) -> TensorSummary:
    q = t.Quantization()
    scale = float(q.ScaleAsNumpy()[0]) if q is not None and q.ScaleLength() else 0.0
    zero = int(q.ZeroPointAsNumpy()[0]) if q is not None and q.ZeroPointLength() else 0
    shape = [int(s) for s in t.ShapeAsNumpy()] if t.ShapeLength() else []
    return TensorSummary((t.Name() or b"").decode(), shape, _DTYPES.get(t.Type(), str(t.Type())), scale, zero)


def _op_histogram(model) -> dict[str, int]:
    counts: Counter = Counter()
    for g in range(model.SubgraphsLength()):
        graph = model.Subgraphs(g)
        for i in range(graph.OperatorsLength()):
            code = model.OperatorCodes(graph.Operators(i).OpcodeIndex())
            op = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            name = _OPS.get(op, str(op))
            counts[code.CustomCode().decode() if name == "CUSTOM" and code.CustomCode() else name] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _metadata_buffer(buf: bytes, model, name: str) -> bytes | None:
    for i in range(model.MetadataLength()):
        entry = model.Metadata(i)
        if entry.Name().decode() != name:
            continue
        b = model.Buffers(entry.Buffer())
        if b.Offset() > 1:  # models over 2 GB keep buffers after the flatbuffer
            return buf[b.Offset() : b.Offset() + b.Size()]
        return b.DataAsNumpy().tobytes() if b.DataLength() else None
    return None


def _attached(buf: bytes) -> dict[str, bytes]:
    """Files of the zip archive appended to the flatbuffer (zipfile finds an archive at the end)."""
    try:
        with zipfile.ZipFile(io.BytesIO(buf)) as z:
            return {i.filename: z.read(i) for i in z.infolist() if not i.is_dir()}
    except (zipfile.BadZipFile, OSError, ValueError):
        return {}


class _Fb:
    """A table of the metadata flatbuffer, fields addressed by their index in the .fbs file."""

    def __init__(self, tab: Table) -> None:
        self.tab = tab

    def _at(self, index: int) -> int:
        return self.tab.Offset(4 + 2 * index)

    def string(self, index: int) -> str | None:
        o = self._at(index)
        return self.tab.String(o + self.tab.Pos).decode(errors="replace") if o else None

    def byte(self, index: int) -> int:
        o = self._at(index)
        return self.tab.Get(nt.Uint8Flags, o + self.tab.Pos) if o else 0

    def table(self, index: int) -> _Fb | None:
        o = self._at(index)
        return _Fb(Table(self.tab.Bytes, self.tab.Indirect(o + self.tab.Pos))) if o else None

    def tables(self, index: int) -> list[_Fb]:
        o = self._at(index)
        if not o:
            return []
        start = self.tab.Vector(o)
        count = self.tab.VectorLen(o)
        return [_Fb(Table(self.tab.Bytes, self.tab.Indirect(start + 4 * j))) for j in range(count)]

    def floats(self, index: int) -> list[float]:
        o = self._at(index)
        return [float(v) for v in self.tab.GetVectorAsNumpy(nt.Float32Flags, o)] if o else []


def _read_tflite_metadata(raw: bytes, info: ModelFile) -> None:
    """ModelMetadata: name(0) description(1) version(2) subgraph_metadata(3) author(4) license(5)."""
    data = bytearray(raw)
    root = _Fb(Table(data, flatbuffers.encode.Get(nt.UOffsetTFlags.packer_type, data, 0)))
    fields = {"name": 0, "description": 1, "version": 2, "author": 4, "license": 5}
    info.metadata = {k: root.string(i) for k, i in fields.items() if root.string(i)}
    subgraphs = root.tables(3)
    if not subgraphs:
        return
    # SubGraphMetadata: input_tensor_metadata(2) output_tensor_metadata(3)
    # TensorMetadata: process_units(4) associated_files(6); ProcessUnit: options_type(0) options(1)
    # NormalizationOptions: mean(0) std(1); AssociatedFile: name(0) type(2)
    for tensor in subgraphs[0].tables(2)[:1]:
        for unit in tensor.tables(4):
            if unit.byte(0) == _NORMALIZATION_OPTIONS and (opts := unit.table(1)) is not None:
                info.normalization = {"mean": opts.floats(0), "std": opts.floats(1)}
    for tensor in subgraphs[0].tables(3):
        for f in tensor.tables(6):
            if f.byte(2) == _TENSOR_AXIS_LABELS and f.string(0):
                info.label_file = info.label_file or f.string(0)


def _ultralytics(raw: bytes, path: str) -> dict:
    meta = parse_literal(raw, path, "its Ultralytics metadata")
    if not isinstance(meta, dict):
        raise ConfigError(f"model.path={path}: its Ultralytics metadata is not a dict")
    return ultralytics_meta(meta)


def parse_literal(raw: bytes, path: str, what: str) -> Any:
    """JSON or a Python literal, from inside a model file: the same limits as any untrusted file first."""
    check_json_limits(raw, f"model.path={path}: {what}", ConfigError)
    text = raw.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        try:
            return ast.literal_eval(text)  # Ultralytics writes str(dict): a Python literal, never code
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise ConfigError(f"model.path={path}: {what} is not a dict literal") from None


def ultralytics_meta(meta: dict) -> dict:
    """Ultralytics' metadata with ``names`` keyed by int and ``imgsz`` a list of ints (the .tflite's
    appended file and an ONNX file's ``metadata_props`` hold the same fields)."""
    names = meta.get("names")
    if isinstance(names, dict):
        meta["names"] = {int(k): str(v) for k, v in names.items()}
    if isinstance(meta.get("imgsz"), list | tuple):
        meta["imgsz"] = [int(v) for v in np.ravel(meta["imgsz"])]
    return meta
