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

The metadata flatbuffer is read through accessors generated from the one declaration of its schema
(:mod:`evalharness.runtime.metadata_schema`), each field by name: the only maintained-looking
generated reader (``tflite-support``) last shipped in 2023 and pins old TensorFlow-era dependencies,
so it is not used. The model flatbuffer itself is read with ``ai_edge_litert``'s generated schema,
as :mod:`evalharness.runtime.modelgen` writes it. Neither reader touches a table offset.
"""

from __future__ import annotations

import ast
import io
import json
import zipfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
from ai_edge_litert import schema_py_generated as schema

from evalharness.core.errors import ConfigError
from evalharness.core.untrusted import check_json_limits
from evalharness.runtime.metadata_schema import METADATA
from evalharness.runtime.model_guard import read_model_bytes

__all__ = ["ModelFile", "TensorSummary", "read_model_file"]

_DTYPES = {v: k.lower() for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
_OPS = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
_TENSOR_AXIS_LABELS = METADATA.values["AssociatedFileType"]["TENSOR_AXIS_LABELS"]
_NORMALIZATION_OPTIONS = METADATA.values["ProcessUnitOptions"]["NormalizationOptions"]
ULTRALYTICS_FILES = ("temp_meta.txt", "metadata.json")


class Quantization(TypedDict):
    scale: float
    zero_point: int


class TensorRecord(TypedDict):
    """One input or output as ``inspect`` reports it."""

    name: str
    shape: list[int]
    dtype: str
    quantization: Quantization


class LabelsSummary(TypedDict):
    """How many class names the file carries, and where they are."""

    count: int
    source: str | None


class ModelFileSummary(TypedDict):
    """What ``inspect`` reports of the file itself: tensors, ops, metadata and attached files."""

    inputs: list[TensorRecord]
    outputs: list[TensorRecord]
    op_histogram: dict[str, int]
    metadata_buffers: list[str]
    converter: str | None
    metadata: dict[str, str]
    normalization: dict[str, list[float]] | None
    labels: LabelsSummary | None
    attached_files: list[str]
    ultralytics: dict[str, Any] | None


@dataclass(frozen=True)
class TensorSummary:
    name: str
    shape: list[int]
    dtype: str
    scale: float = 0.0
    zero_point: int = 0

    def as_dict(self) -> TensorRecord:
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
    metadata: dict[str, str] = field(default_factory=dict)  # name, version, author, license, description
    normalization: dict[str, list[float]] | None = None  # {"mean": [...], "std": [...]} of the first input
    label_file: str | None = None  # associated file holding the labels (name inside the zip)
    labels: list[str] | None = None
    attached_files: list[str] = field(default_factory=list)
    ultralytics: dict[str, Any] | None = None

    def summary(self) -> ModelFileSummary:
        return {
            "inputs": [t.as_dict() for t in self.inputs],
            "outputs": [t.as_dict() for t in self.outputs],
            "op_histogram": self.op_histogram,
            "metadata_buffers": self.metadata_buffers,
            "converter": self.description,
            "metadata": self.metadata,
            "normalization": self.normalization,
            "labels": self._labels_summary(),
            "attached_files": self.attached_files,
            "ultralytics": self.ultralytics,
        }

    def _labels_summary(self) -> LabelsSummary | None:
        """The class names the file carries: a label file's lines, else Ultralytics' names."""
        if self.labels is not None:
            return {"count": len(self.labels), "source": self.label_file}
        count = _names_count((self.ultralytics or {}).get("names"))
        if count is None:
            return None
        where = next((n for n in ULTRALYTICS_FILES if n in self.attached_files), "metadata")
        return {"count": count, "source": f"{where} (Ultralytics names)"}


def _names_count(names: object) -> int | None:
    return len(names) if isinstance(names, dict) and names else None


def read_model_file(path: str) -> ModelFile:
    """Parse ``path`` (through :func:`read_model_bytes`: a file that is not a whole TFLite flatbuffer
    is one ConfigError naming it)."""
    buf = read_model_bytes(path)
    model = schema.Model.GetRootAsModel(buf, 0)
    graph = model.Subgraphs(0)

    def tensors(ids: Iterable[int]) -> list[TensorSummary]:
        return [_tensor(graph.Tensors(int(i))) for i in ids]

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
    # Ultralytics' exports name their temp_meta.txt (a dict of date, description, names, ...) as the
    # output's label file: it is no label list; their names are (model_settings reads them)
    if info.label_file in ULTRALYTICS_FILES:
        info.label_file = None
    label_name = info.label_file or next((n for n in sorted(files) if "label" in n.lower()), None)
    if label_name in files:
        info.label_file = label_name
        info.labels = files[label_name].decode("utf-8", errors="replace").rstrip().splitlines()
    for name in ULTRALYTICS_FILES:
        if name in files:
            info.ultralytics = _ultralytics(files[name], path)
            break
    return info


def _tensor(t: Any) -> TensorSummary:  # a generated Tensor reader
    q = t.Quantization()
    scale = float(q.ScaleAsNumpy()[0]) if q is not None and q.ScaleLength() else 0.0
    zero = int(q.ZeroPointAsNumpy()[0]) if q is not None and q.ZeroPointLength() else 0
    shape = [int(s) for s in t.ShapeAsNumpy()] if t.ShapeLength() else []
    return TensorSummary((t.Name() or b"").decode(), shape, _DTYPES.get(t.Type(), str(t.Type())), scale, zero)


def _op_histogram(model: Any) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for g in range(model.SubgraphsLength()):
        graph = model.Subgraphs(g)
        for i in range(graph.OperatorsLength()):
            code = model.OperatorCodes(graph.Operators(i).OpcodeIndex())
            op = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            name = _OPS.get(op, str(op))
            counts[code.CustomCode().decode() if name == "CUSTOM" and code.CustomCode() else name] += 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _metadata_buffer(buf: bytes, model: Any, name: str) -> bytes | None:
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


def _read_tflite_metadata(raw: bytes, info: ModelFile) -> None:
    """The model's name, version, author and licence, the first input's normalisation and the
    label file an output tensor names (``TENSOR_AXIS_LABELS``)."""
    root = METADATA.root(raw, "ModelMetadata")
    fields = ("name", "description", "version", "author", "license")
    info.metadata = {k: text for k in fields if (text := getattr(root, k))}
    subgraphs = root.subgraph_metadata
    if not subgraphs:
        return
    for tensor in subgraphs[0].input_tensor_metadata[:1]:
        for unit in tensor.process_units:
            if unit.options_type == _NORMALIZATION_OPTIONS and unit.options is not None:
                info.normalization = {"mean": unit.options.mean, "std": unit.options.std}
    for tensor in subgraphs[0].output_tensor_metadata:
        for f in tensor.associated_files:
            if f.type == _TENSOR_AXIS_LABELS and f.name:
                info.label_file = info.label_file or f.name


def _ultralytics(raw: bytes, path: str) -> dict[str, Any]:
    meta = parse_literal(raw, path, "its Ultralytics metadata")
    if not isinstance(meta, dict):
        raise ConfigError(f"model.path={path}: its Ultralytics metadata is not a dict")
    return ultralytics_meta(meta, f"model.path={path}: its Ultralytics metadata")


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


def ultralytics_meta(meta: dict[str, Any], source: str) -> dict[str, Any]:
    """Ultralytics' metadata with ``names`` keyed by int and ``imgsz`` a list of ints (the .tflite's
    appended file and an ONNX file's ``metadata_props`` hold the same fields); a value of another
    shape (a name keyed by text, a size that is no integer) is one error naming ``source``."""
    names = meta.get("names")
    try:
        if isinstance(names, dict):
            meta["names"] = {int(k): str(v) for k, v in names.items()}
        if isinstance(meta.get("imgsz"), list | tuple):
            meta["imgsz"] = [int(v) for v in np.ravel(np.asarray(meta["imgsz"], dtype=object))]
    except (ValueError, TypeError, OverflowError) as exc:
        raise ConfigError(
            f"{source}: Ultralytics' names or imgsz are not class ids and sizes ({type(exc).__name__}); "
            "export the model again"
        ) from None
    return meta
