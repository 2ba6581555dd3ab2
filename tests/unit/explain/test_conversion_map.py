"""The op map of a conversion without running anything: by name, through a fused activation, by
position within a kind, and what is left unmapped with its reason."""

from __future__ import annotations

from evalharness.explain.conversion_map import TargetOp, map_ops
from evalharness.runtime.onnx_trace import SourceNode


def _node(i: int, kind: str, inputs: list[str], outputs: list[str]) -> SourceNode:
    return SourceNode(i, kind, f"n{i}", tuple(inputs), tuple(outputs))


NODES = [
    _node(0, "Conv", ["x", "w0"], ["conv0"]),
    _node(1, "Clip", ["conv0"], ["relu0"]),
    _node(2, "Conv", ["relu0", "w1"], ["c1"]),
    _node(3, "Add", ["c1", "relu0"], ["sum"]),
    _node(4, "Gemm", ["sum", "w2"], ["logits"]),
]


def test_by_name_through_a_fused_activation_and_by_position():
    ops = [
        TargetOp(0, "CONV_2D", "conv0", fused=True),  # Conv + Clip folded into one op
        TargetOp(1, "DEPTHWISE_CONV_2D", "renamed", fused=False),  # 2nd convolution of both graphs
        TargetOp(2, "ADD", "sum", fused=False),
        TargetOp(3, "FULLY_CONNECTED", "logits", fused=False),
    ]
    mapped, unmapped = map_ops(ops, NODES)
    assert [(m["op"], m["tensor"], m["how"], m["node"]) for m in mapped] == [
        (0, "relu0", "name", "Conv + Clip"),
        (1, "c1", "position", "Conv"),
        (2, "sum", "name", "Add"),
        (3, "logits", "name", "Gemm"),
    ]
    assert unmapped == []


def test_what_cannot_be_mapped_says_why():
    ops = [
        TargetOp(0, "CONV_2D", "c1", fused=True),  # fuses an activation ONNX does not apply after c1
        TargetOp(1, "RESHAPE", "nowhere", fused=False),
    ]
    mapped, unmapped = map_ops(ops, NODES)
    assert mapped == []
    assert [u["op"] for u in unmapped] == [0, 1]
    assert "fuses an activation" in unmapped[0]["why"] and "name or position" in unmapped[1]["why"]


def test_position_needs_as_many_ops_of_the_kind_on_both_sides():
    ops = [TargetOp(0, "CONV_2D", "a", fused=False)]  # one convolution here, two in the ONNX graph
    mapped, unmapped = map_ops(ops, NODES)
    assert mapped == [] and unmapped[0]["op"] == 0
