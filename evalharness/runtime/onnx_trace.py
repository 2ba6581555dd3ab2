"""ONNX Runtime's intermediate tensors, for explaining a conversion (source ONNX → ``.tflite``).

ONNX Runtime returns only a graph's outputs, so the model (read within the model-file bounds by
:func:`evalharness.runtime.onnx_backend.read_onnx`, never re-read) is copied in memory with the wanted
node outputs added as graph outputs, and that copy is run on the CPU. A tensor that is a graph output
is not fused away by ONNX Runtime's graph optimisations, so a traced run may differ from the plain
run in float rounding only (the fused kernels it no longer uses). Nothing is written to disk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalharness.core.errors import EvalHarnessError
from evalharness.runtime.onnx_backend import _ort, read_onnx


@dataclass(frozen=True)
class SourceNode:
    """One ONNX node in the graph's (topological) order: its type, name and tensor names."""

    index: int
    type: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


def onnx_nodes(path: str) -> list[SourceNode]:
    """The graph's nodes in file order (ONNX requires a topological order)."""
    _, proto = read_onnx(path)
    return [
        SourceNode(i, n.op_type, n.name, tuple(n.input), tuple(n.output))
        for i, n in enumerate(proto.graph.node)
    ]


def onnx_trace(path: str, feeds: list[np.ndarray], names: list[str]) -> list[dict[str, np.ndarray]]:
    """The tensors ``names`` (node outputs) for each single-input ``feed``, by name, one thread."""
    import onnx

    ort = _ort()
    _, proto = read_onnx(path)
    model = onnx.ModelProto()
    model.CopyFrom(proto)
    exposed = {o.name for o in model.graph.output}
    model.graph.output.extend(onnx.ValueInfoProto(name=n) for n in names if n not in exposed)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        inputs = session.get_inputs()
        if len(inputs) != 1:
            raise EvalHarnessError(f"{path}: {len(inputs)} inputs; explain traces single-input ONNX models")
        return [dict(zip(names, session.run(names, {inputs[0].name: x}), strict=True)) for x in feeds]
    except EvalHarnessError:
        raise
    except Exception as exc:  # onnxruntime raises its own kinds for a graph it cannot run
        text = " ".join(str(exc).split())[:300]
        raise EvalHarnessError(
            f"{path}: ONNX Runtime cannot trace its intermediate tensors ({text})"
        ) from None
