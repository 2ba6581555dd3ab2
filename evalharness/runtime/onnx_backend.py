"""ONNX Runtime backend: an ONNX source model (``model.path=x.onnx``) run on the CPU, behind the one
model contract, so its run is scored, recorded, cached and diffed like any ``.tflite`` run.

The file is read once, within the model-file bounds (``model_guard``), and handed to ONNX Runtime as
bytes: an ONNX model may name external data files, and nothing a file names is loaded here, so such
a model is refused with the fix (save it with its tensors inside), wherever the tensor that names a
file sits (``onnx_references``: initializers, sparse initializers, node attributes, subgraphs,
functions). The graph's facts (op histogram, ``metadata_props``) are read with the ``onnx``
package from the same bytes; text read from ``metadata_props`` as JSON passes the untrusted-JSON
limits first. ``metadata_props`` give the labels where the exporter wrote them (Ultralytics'
``names`` dict, or ``labels``/``classes`` as a JSON list or one label a line), so settings
inference treats them as a ``.tflite``'s metadata.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.errors import ConfigError, EvalHarnessError, ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.core.untrusted import check_json_limits
from evalharness.runtime.contract import BACKENDS, Coverage, Model, RuntimeInfo
from evalharness.runtime.delegates import DelegatePlan
from evalharness.runtime.model_file import ModelFile, TensorSummary, parse_literal, ultralytics_meta
from evalharness.runtime.model_guard import read_bounded, stamp
from evalharness.runtime.onnx_references import external_tensors

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.runners import RunnerSettings

_DTYPES = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
    "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(int16)": "int16", "tensor(int32)": "int32",
    "tensor(int64)": "int64", "tensor(bool)": "bool",
}  # fmt: skip
LABEL_KEYS = ("labels", "classes")
_PARSED: dict[tuple[str, int, int], tuple[bytes, Any]] = {}


def _ort() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise EvalHarnessError("ONNX Runtime is not installed: pip install 'evalharness[onnx]'") from None
    return onnxruntime


def read_onnx(path: str, key: str = "model.path") -> tuple[bytes, Any]:
    """(bytes, the parsed ModelProto) of the ONNX file at ``path``, read once per unchanged file;
    not an ONNX model, or one naming external data: one error naming ``key``."""
    where, mark = f"{key}={path}", stamp(path, key)
    if mark not in _PARSED:
        buf = read_bounded(path, where)
        try:
            import onnx
        except ImportError:
            raise EvalHarnessError(
                f"{where}: reading an ONNX model needs: pip install 'evalharness[onnx]'"
            ) from None
        try:
            proto = onnx.load_model_from_string(buf)
        except Exception as exc:  # protobuf's DecodeError and friends: the file is not an ONNX model
            raise ConfigError(f"{where}: not an ONNX model ({type(exc).__name__}); re-export it") from None
        if not proto.graph.node:
            raise ConfigError(f"{where}: not an ONNX model (no graph nodes); re-export it")
        external = external_tensors(proto)
        if external:
            place, named = external[0]
            raise ConfigError(
                f"{where}: names external data files ({len(external)} tensors, e.g. {place} names "
                f"{named!r}); evalharness loads the model file alone: save it with its tensors "
                "inside (onnx.save(model, path, save_as_external_data=False))"
            )
        _PARSED[mark] = (buf, proto)
    return _PARSED[mark]


def read_onnx_file(path: str) -> ModelFile:
    """What an ONNX file says about itself, in the ``.tflite`` reader's form (settings/model_settings.py)."""
    _, proto = read_onnx(path)
    props = {p.key: p.value for p in proto.metadata_props}
    init = {t.name for t in proto.graph.initializer}

    def tensors(values: Iterable[Any]) -> list[TensorSummary]:
        return [_summary(v) for v in values if v.name not in init]

    info = ModelFile(
        path=path,
        inputs=tensors(proto.graph.input),
        outputs=tensors(proto.graph.output),
        op_histogram=dict(sorted(Counter(n.op_type for n in proto.graph.node).items())),
        metadata_buffers=sorted(props),
        description=f"{proto.producer_name} {proto.producer_version}".strip() or None,
        metadata={k: v for k, v in props.items() if k in ("author", "license", "version", "description")},
    )
    if "names" in props:  # Ultralytics' export: each field a str() of its value
        meta: dict[str, Any] = dict(props)
        for key in ("names", "imgsz"):
            if key in meta:
                meta[key] = parse_literal(meta[key].encode(), path, f"metadata_props[{key!r}]")
        info.ultralytics = ultralytics_meta(meta, f"model.path={path}: metadata_props")
    for t in info.inputs:
        if any(d < 0 for d in t.shape[1:]):
            raise ModelMismatchError(
                f"model.path={path}: input {t.name!r} has a dynamic size {t.shape}; evalharness feeds the "
                "size the file fixes, never a placeholder: export the model with a fixed input height and "
                "width"
            )
    for key in LABEL_KEYS:
        if key in props and info.labels is None:
            info.label_file = f"metadata_props[{key!r}]"
            info.labels = _label_lines(props[key], f"model.path={path}: {info.label_file}")
    return info


def _label_lines(text: str, source: str) -> list[str]:
    """A JSON list of labels, or one label a line; JSON within the untrusted-file limits first."""
    check_json_limits(text.encode("utf-8", "surrogatepass"), source, ConfigError)
    try:
        values = json.loads(text)
    except ValueError:
        return text.rstrip().splitlines()
    return [str(v) for v in values] if isinstance(values, list) else text.rstrip().splitlines()


def _summary(value: Any) -> TensorSummary:
    t = value.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim]
    import onnx

    dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type).name if t.elem_type else "unknown"
    return TensorSummary(value.name, shape, dtype)


def _tensor_info(index: int, arg: Any, path: str) -> TensorInfo:
    dims = list(arg.shape)
    if any(not isinstance(d, int) for d in dims[1:]):
        raise ModelMismatchError(
            f"model.path={path}: {arg.name!r} has a dynamic size {dims}; evalharness feeds the size the "
            "file fixes, never a placeholder: export the model with a fixed input height and width"
        )
    shape = tuple(d if isinstance(d, int) else 1 for d in dims)  # a symbolic batch: one sample
    if arg.type not in _DTYPES:
        raise ModelMismatchError(
            f"model.path={path}: {arg.name!r} is {arg.type}, which evalharness does not feed"
        )
    return TensorInfo(name=arg.name, index=index, shape=shape, dtype=_DTYPES[arg.type])


@BACKENDS.register("onnxruntime")
class OnnxModel(Model):
    """An ONNX model in an ONNX Runtime session on the CPU execution provider."""

    placement = ("ONNX Runtime", "CPU")
    timed_region = "InferenceSession.run() (inputs in, outputs out)"

    @classmethod
    def load(cls, model_path: str, plan: DelegatePlan, runtime: str, runner: RunnerSettings | None) -> Model:
        return cls(model_path, plan)

    def __init__(self, model_path: str, plan: DelegatePlan) -> None:
        ort = _ort()
        buf, proto = read_onnx(model_path)
        options = ort.SessionOptions()
        options.log_severity_level = 3  # errors only: they come back as the exception below
        options.intra_op_num_threads = max(plan.num_threads, 0)  # -1: ONNX Runtime decides (0)
        options.inter_op_num_threads = 1
        self.native_log: list[str] = []
        self.model_path, self.plan, self._version = model_path, plan, ort.__version__
        try:
            self._session = ort.InferenceSession(buf, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's pybind errors subclass Exception only
            text = " ".join(str(exc).split())
            raise ModelMismatchError(
                f"model.path={model_path}: ONNX Runtime {ort.__version__} cannot run this model "
                f"({text[:300]}); an op or opset it does not implement: pip install -U "
                "'evalharness[onnx]' or export with another opset"
            ) from None
        self.inputs = [_tensor_info(i, a, model_path) for i, a in enumerate(self._session.get_inputs())]
        self.outputs = [_tensor_info(i, a, model_path) for i, a in enumerate(self._session.get_outputs())]
        self._names = [t.name for t in self.outputs]
        self._feeds: dict[str, np.ndarray] = {}
        self._results: list[np.ndarray] = []
        ops = Counter(n.op_type for n in proto.graph.node)
        self.coverage = Coverage(
            ops_total=sum(ops.values()),
            ops_delegated=None,  # nothing to delegate to: not a 0 % coverage to compare with LiteRT's
            partitions=None,
            fully_accelerated=False,
            ops_on_cpu_by_type=dict(sorted(ops.items())),
            unsupported_ops=[],
            adapter="CPU",
            software_renderer=None,
            source="ONNX Runtime CPUExecutionProvider: every op on the CPU (no delegation)",
        )

    def runtime_info(self) -> RuntimeInfo:
        return {"name": "onnxruntime", "package": "onnxruntime", "version": self._version}

    def set_inputs(self, tensors: list[np.ndarray]) -> None:
        self._feeds = {info.name: value for info, value in zip(self.inputs, tensors, strict=True)}

    def invoke(self) -> None:
        self._results = self._session.run(self._names, self._feeds)

    def get_outputs(self) -> list[np.ndarray]:
        return list(self._results)
