"""Every place an ONNX model can name another file, found before ONNX Runtime opens any.

A tensor in an ONNX model may keep its bytes in an external file (``data_location: EXTERNAL`` and
an ``external_data`` ``location``), and ONNX Runtime reads that file wherever the tensor sits: not
only a graph initializer but a sparse initializer's values or indices, a node attribute (a
``Constant``'s ``value`` or ``sparse_value``, any attribute's tensor or list of tensors), a subgraph
of an ``If``, ``Loop`` or ``Scan`` at any depth, a local function's body and a training graph. A
model handed to ONNX Runtime as bytes then reads that file relative to the working directory: a
``Constant`` naming ``/etc/hostname`` puts that file's bytes in the model's outputs.

:func:`external_tensors` walks every graph and attribute of the parsed model (without recursion:
subgraphs nest as deep as the file says) and lists each such tensor with where it sits and what it
names; the backend refuses the model if the list is not empty, so nothing a file names is ever
read, contained in the model's folder or not.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

EXTERNAL = 1  # onnx.TensorProto.EXTERNAL (DataLocation), kept here so the walk needs no onnx import


def names_a_file(tensor: Any) -> bool:
    """A TensorProto whose bytes live in another file (either field says so: ONNX Runtime reads both)."""
    return tensor.data_location == EXTERNAL or len(tensor.external_data) > 0


def location(tensor: Any) -> str:
    found = [entry.value for entry in tensor.external_data if entry.key == "location"]
    return found[0] if found else "?"


def external_tensors(model: Any) -> list[tuple[str, str]]:
    """(where in the model, the file it names) of every tensor that names a file."""
    return [(where, location(t)) for where, t in _tensors(model) if names_a_file(t)]


def _tensors(model: Any) -> Iterator[tuple[str, Any]]:
    graphs: list[tuple[str, Any]] = [("graph", model.graph)]
    for info in model.training_info:
        graphs += [("training initialization graph", info.initialization), ("training graph", info.algorithm)]
    for function in model.functions:
        yield from _nodes(f"function {function.name!r}", function.node, graphs)
    while graphs:
        where, graph = graphs.pop()
        for t in graph.initializer:
            yield f"{where}: initializer {t.name!r}", t
        for s in graph.sparse_initializer:
            yield f"{where}: sparse initializer {s.values.name!r} values", s.values
            yield f"{where}: sparse initializer {s.values.name!r} indices", s.indices
        yield from _nodes(where, graph.node, graphs)


def _nodes(where: str, nodes: Any, graphs: list[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """The tensors of every node's attributes; their subgraphs pushed on ``graphs`` to walk next."""
    for node in nodes:
        for attr in node.attribute:
            here = f"{where}: node {node.name or node.op_type!r} ({node.op_type}) attribute {attr.name!r}"
            if attr.HasField("t"):
                yield here, attr.t
            for t in attr.tensors:
                yield here, t
            sparse = [attr.sparse_tensor] if attr.HasField("sparse_tensor") else []
            for s in [*sparse, *attr.sparse_tensors]:
                yield f"{here} values", s.values
                yield f"{here} indices", s.indices
            if attr.HasField("g"):
                graphs.append((f"{here} subgraph", attr.g))
            graphs.extend((f"{here} subgraph", g) for g in attr.graphs)
