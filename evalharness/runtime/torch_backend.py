"""PyTorch backend: an exported program (``model.path=x.pt2``, written by ``torch.export.save``) run
on the CPU by torch, behind the one model contract, like the ONNX backend.

torch is an optional extra (``pip install 'evalharness[torch]'``): without it a ``.pt2`` is one
``error:`` line naming the extra, at validation, before the run directory is claimed. The file is
read within the model-file bounds, its parts read as data (``pt2_archive``: a pickle that calls anything
but torch.save's tensor rebuilders is refused before torch unpickles it) and loaded from those bytes
(nothing it names is opened). Inputs
and outputs are the program's flat tensor arguments and results, their shapes and dtypes read from
the graph's example metadata; a program whose input size is symbolic beyond the batch is refused.
"""

from __future__ import annotations

import io
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.errors import ConfigError, EvalHarnessError, ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.runtime.contract import BACKENDS, Coverage, Model, RuntimeInfo
from evalharness.runtime.delegates import DelegatePlan
from evalharness.runtime.model_file import ModelFile, TensorSummary
from evalharness.runtime.model_guard import MAX_MODEL_BYTES, read_bounded, stamp
from evalharness.runtime.pt2_archive import check_pt2_archive

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.runners import RunnerSettings

_LOADED: dict[tuple[str, int, int], Any] = {}


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        raise EvalHarnessError("PyTorch is not installed: pip install 'evalharness[torch]'") from None
    return torch


def load_program(path: str, key: str = "model.path") -> Any:
    """The ``torch.export`` program in ``path``, loaded once per unchanged file; not one: one error.
    The archive is read as data first (``pt2_archive``): torch unpickles only what that allowed."""
    mark = stamp(path, key)
    if mark not in _LOADED:
        buf = read_bounded(path, f"{key}={path}")
        check_pt2_archive(buf, f"{key}={path}", MAX_MODEL_BYTES)
        torch = _torch()
        try:
            _LOADED[mark] = torch.export.load(io.BytesIO(buf))
        except Exception as exc:  # torch raises many kinds for a file that is not an exported program
            text = " ".join(str(exc).split())[:300]
            raise ConfigError(
                f"{key}={path}: not a torch.export program torch {torch.__version__} can load ({text}); "
                "save it with torch.export.save"
            ) from None
    return _LOADED[mark]


def _user_values(program: Any, kind: str) -> list[Any]:
    """The graph's placeholder (``inputs``) or output nodes that are user tensors, in order."""
    signature = program.graph_signature
    names = signature.user_inputs if kind == "inputs" else signature.user_outputs
    nodes = {n.name: n for n in program.graph.nodes}
    return [nodes.get(n) for n in names]


def _summary(name: str, node: Any, path: str) -> TensorSummary:
    value = None if node is None else node.meta.get("val")
    if value is None or not hasattr(value, "shape"):
        raise ModelMismatchError(f"model.path={path}: {name!r} is not a tensor; evalharness feeds tensors")
    shape = [int(d) if str(d).lstrip("-").isdigit() else -1 for d in value.shape]
    return TensorSummary(name, shape, str(value.dtype).removeprefix("torch."))


def read_pt2_file(path: str) -> ModelFile:
    """What an exported program says about itself, in the ``.tflite`` reader's form."""
    program = load_program(path)
    signature = program.graph_signature
    inputs = [
        _summary(n, v, path)
        for n, v in zip(signature.user_inputs, _user_values(program, "inputs"), strict=True)
    ]
    outputs = [TensorSummary(str(n), [], "unknown") for n in signature.user_outputs]
    for t in inputs:
        if any(d < 0 for d in t.shape[1:]):
            raise ModelMismatchError(
                f"model.path={path}: input {t.name!r} has a symbolic size {t.shape}; export it with a fixed "
                "input height and width"
            )
    ops = Counter(str(n.target) for n in program.graph.nodes if n.op == "call_function")
    return ModelFile(path, inputs, outputs, dict(sorted(ops.items())), [], description="torch.export")


@BACKENDS.register("torch_export")
class TorchExportModel(Model):
    """A ``torch.export`` program's module, run under ``torch.inference_mode`` on the CPU."""

    placement = ("PyTorch", "CPU")
    timed_region = "module(*inputs) (inputs in, outputs out)"

    @classmethod
    def load(cls, model_path: str, plan: DelegatePlan, runtime: str, runner: RunnerSettings | None) -> Model:
        return cls(model_path, plan)

    def __init__(self, model_path: str, plan: DelegatePlan) -> None:
        self._torch = torch = _torch()
        info = read_pt2_file(model_path)
        if plan.num_threads > 0:
            torch.set_num_threads(plan.num_threads)
        self._module = load_program(model_path).module()
        self.native_log: list[str] = []
        self.inputs = [
            TensorInfo(t.name, i, tuple(max(d, 1) for d in t.shape), t.dtype)
            for i, t in enumerate(info.inputs)
        ]
        self._feeds: list[Any] = []
        self._results: list[np.ndarray] = []
        self.set_inputs([np.zeros(t.shape, np.dtype(t.dtype)) for t in self.inputs])
        self.invoke()  # the output shapes: the program's own answer on zeros
        self.outputs = [
            TensorInfo(str(n.name), i, tuple(r.shape), r.dtype.name)
            for i, (n, r) in enumerate(zip(info.outputs, self._results, strict=True))
        ]
        self.coverage = Coverage(
            ops_total=sum(info.op_histogram.values()),
            ops_delegated=None,
            partitions=None,
            fully_accelerated=False,
            ops_on_cpu_by_type=info.op_histogram,
            unsupported_ops=[],
            adapter="CPU",
            software_renderer=None,
            source="PyTorch on the CPU: every op in torch's own kernels (no delegation)",
        )

    def runtime_info(self) -> RuntimeInfo:
        return {"name": "torch", "package": "torch", "version": str(self._torch.__version__)}

    def set_inputs(self, tensors: list[np.ndarray]) -> None:
        self._feeds = [self._torch.from_numpy(np.ascontiguousarray(t)) for t in tensors]

    def invoke(self) -> None:
        with self._torch.inference_mode():
            out = self._module(*self._feeds)
        flat = out if isinstance(out, list | tuple) else [out]
        self._results = [t.detach().cpu().numpy() for t in flat]

    def get_outputs(self) -> list[np.ndarray]:
        return list(self._results)
