"""Which ONNX tensor a ``.tflite`` op's output is: the op map of a conversion (source → ``.tflite``).

A converter keeps names where it can (tf2onnx and litert-torch carry the tensor names across), so an
op's output is first looked up **by name**. It also fuses: ONNX's Conv followed by Clip (ReLU6) is one
CONV_2D with a fused activation, whose output carries the Conv's name but the Clip's values; so where
the ``.tflite`` op fuses an activation and the named ONNX tensor's only consumer is an activation
node, the map takes that node's output. Ops left unnamed are mapped **by position** within a kind
(the k-th convolution of one graph is the k-th of the other) when both graphs have as many ops of
that kind. Anything else is left unmapped, with the reason: a number is never compared against a
tensor it was only guessed to be.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalharness.runtime.onnx_trace import SourceNode

ACTIVATIONS = frozenset({"Clip", "Relu", "Tanh", "Sigmoid", "LeakyRelu", "HardSigmoid"})
# ops matched by position within their kind: the ones a converter keeps one for one
KINDS = {
    "CONV_2D": "convolution", "DEPTHWISE_CONV_2D": "convolution", "Conv": "convolution",
    "FULLY_CONNECTED": "dense", "Gemm": "dense", "MatMul": "dense",
    "ADD": "add", "Add": "add", "MUL": "multiply", "Mul": "multiply",
    "MEAN": "mean", "ReduceMean": "mean", "GlobalAveragePool": "mean", "AVERAGE_POOL_2D": "pool",
    "AveragePool": "pool", "MAX_POOL_2D": "max pool", "MaxPool": "max pool", "SOFTMAX": "softmax",
    "Softmax": "softmax", "CONCATENATION": "concat", "Concat": "concat",
}  # fmt: skip


@dataclass(frozen=True)
class TargetOp:
    """A ``.tflite`` op as the map needs it: its index, type, first output's name, fused activation."""

    index: int
    type: str
    output: str
    fused: bool


def map_ops(
    ops: Sequence[TargetOp], nodes: Sequence[SourceNode]
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """(mapped: ``{"op", "tensor", "how", "node"}`` in op order, unmapped: ``{"op", "type", "why"}``)."""
    producer = {o: n for n in nodes for o in n.outputs}
    consumers: dict[str, list[SourceNode]] = {}
    for n in nodes:
        for i in n.inputs:
            consumers.setdefault(i, []).append(n)
    found: dict[int, dict[str, object]] = {}  # op index -> mapped row, or unmapped row (with "why")
    used: set[int] = set()  # ONNX nodes taken by name

    def take(op: TargetOp, node: SourceNode, how: str) -> None:
        after = consumers.get(node.outputs[0], [])
        if not op.fused:
            found[op.index] = {"op": op.index, "tensor": node.outputs[0], "how": how, "node": node.type}
        elif len(after) == 1 and after[0].type in ACTIVATIONS:
            node_types = f"{node.type} + {after[0].type}"
            found[op.index] = {"op": op.index, "tensor": after[0].outputs[0], "how": how, "node": node_types}
        else:
            why = f"fuses an activation that ONNX's {node.type} is not followed by"
            found[op.index] = {"op": op.index, "type": op.type, "why": why}

    for op in ops:
        if op.output in producer:
            used.add(producer[op.output].index)
            take(op, producer[op.output], "name")
    for kind in sorted(set(KINDS.values())):  # the rest by rank within their kind
        theirs = [n for n in nodes if KINDS.get(n.type) == kind]
        ours = [op for op in ops if KINDS.get(op.type) == kind]
        if ours and len(theirs) == len(ours):
            for op, node in zip(ours, theirs, strict=True):
                if op.index not in found and node.index not in used:
                    take(op, node, "position")
    mapped = [found[op.index] for op in ops if op.index in found and "tensor" in found[op.index]]
    unmapped = [
        found.get(op.index)
        or {"op": op.index, "type": op.type, "why": "no ONNX tensor of its name or position"}
        for op in ops
        if "tensor" not in found.get(op.index, {})
    ]
    return mapped, unmapped
