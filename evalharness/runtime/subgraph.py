"""Cut sub-models out of a ``.tflite`` flatbuffer, so any delegate can run part of a graph.

``explain`` asks two questions of a delegate that only runs whole models: what does op *i* compute
from given inputs, and what does the rest of the graph (ops *k*..end) answer from given tensors?
Both are answered by writing a real model whose subgraph keeps every tensor (so tensor indices
stay the original ones) but only the chosen operators, with the tensors crossing the cut as its
inputs and the wanted tensors as its outputs. The delegate then runs that model as it runs any
other, through ``runtime.load_model``. Same schema handling as :mod:`evalharness.runtime.modelgen`.

Operators are taken in the flatbuffer's order, which is TFLite's execution order (a topological
order), so "ops 0..k" is a prefix of what the interpreter runs. Only single-subgraph models are cut
(control flow ops that call other subgraphs are refused with the reason).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from typing import Any

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema

from evalharness.core.errors import ModelMismatchError
from evalharness.runtime.model_guard import read_model_bytes

__all__ = ["GraphOp", "ModelGraph"]

_OP_NAMES: dict[int, str] = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


@dataclass(frozen=True)
class GraphOp:
    """One operator: its position in execution order, type, a readable name and its tensors."""

    index: int
    type: str
    name: str  # the name of its first output tensor (what Model Explorer and converters show)
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


class ModelGraph:
    """A parsed model (object API) that writes sub-models of itself."""

    def __init__(self, path: str) -> None:
        raw = read_model_bytes(path, "model")
        self._model = schema.ModelT.InitFromPackedBuf(bytearray(raw), 0)
        for buf in self._model.buffers:  # data stored after the flatbuffer (offset/size): inline it
            if getattr(buf, "offset", 0) > 1:
                buf.data = np.frombuffer(raw, np.uint8, int(buf.size), int(buf.offset))
                buf.offset = buf.size = 0
        self.path = path
        if len(self._model.subgraphs) != 1:
            raise ModelMismatchError(
                f"{path}: {len(self._model.subgraphs)} subgraphs; explain cuts single-subgraph models only"
            )
        sub = self._model.subgraphs[0]
        self._sub = sub
        # the subgraph's name: Model Explorer's id for the graph (its TFLite adapter names each op's
        # node by the op's index in execution order)
        self.name = _decode(sub.name) or "main"
        self.inputs = tuple(int(t) for t in sub.inputs)
        self.outputs = tuple(int(t) for t in sub.outputs)
        codes = self._model.operatorCodes
        self.ops = [
            GraphOp(
                index=i,
                type=self._op_type(codes[op.opcodeIndex]),
                name=_name(sub.tensors[op.outputs[0]]) if len(op.outputs) else f"op{i}",
                inputs=tuple(int(t) for t in (op.inputs if op.inputs is not None else [])),
                outputs=tuple(int(t) for t in (op.outputs if op.outputs is not None else [])),
            )
            for i, op in enumerate(sub.operators)
        ]

    @staticmethod
    def _op_type(code: Any) -> str:  # a generated OperatorCodeT
        builtin = max(int(code.builtinCode), int(code.deprecatedBuiltinCode))
        if builtin == schema.BuiltinOperator.CUSTOM:
            custom = code.customCode
            return (custom or b"CUSTOM").decode() if isinstance(custom, bytes) else "CUSTOM"
        return _OP_NAMES.get(builtin, f"OP{builtin}")

    def tensor_name(self, index: int) -> str:
        return _name(self._sub.tensors[index])

    def fused_activation(self, op_index: int) -> bool:
        """Whether the op applies an activation to its own output (``fused_activation_function`` not
        NONE): a converter folds ONNX's Conv + Clip into one such op, so the two map as one."""
        options = self._sub.operators[op_index].builtinOptions
        return bool(getattr(options, "fusedActivationFunction", 0))

    def tensor_signature(self, index: int) -> tuple[tuple[int, ...], int]:
        """(shape, type) of a tensor: what must agree for two models to share a graph."""
        t = self._sub.tensors[index]
        return (tuple(int(s) for s in (t.shape if t.shape is not None else [])), int(t.type))

    def is_constant(self, index: int) -> bool:
        buf = self._model.buffers[self._sub.tensors[index].buffer]
        return buf.data is not None and len(buf.data) > 0

    def activations(self) -> list[int]:
        """Graph inputs, then every op output in execution order: the tensors a trace records."""
        seen = dict.fromkeys(self.inputs)
        for op in self.ops:
            seen.update(dict.fromkeys(t for t in op.outputs if t >= 0))
        return list(seen)

    def crossing(self, start: int) -> list[int]:
        """Non-constant tensors that ops ``start``.. read (or the graph outputs) but do not produce."""
        produced = {t for op in self.ops[start:] for t in op.outputs}
        needed = [t for op in self.ops[start:] for t in op.inputs if t >= 0] + list(self.outputs)
        return [t for t in dict.fromkeys(needed) if t not in produced and not self.is_constant(t)]

    def write(self, path: str, start: int, stop: int, outputs: list[int] | None = None) -> str:
        """Write ops ``start``..``stop - 1`` as a model; inputs are the tensors crossing into them,
        outputs ``outputs`` (default: the graph's outputs produced there, else their last op's)."""
        ops = self._sub.operators[start:stop]
        produced = {t for op in self.ops[start:stop] for t in op.outputs}
        consumed = [t for op in self.ops[start:stop] for t in op.inputs if t >= 0]
        inputs = [t for t in dict.fromkeys(consumed) if t not in produced and not self.is_constant(t)]
        if outputs is None:
            outputs = [t for t in self.outputs if t in produced] or list(self.ops[stop - 1].outputs)
        sub = copy.copy(self._sub)
        sub.operators, sub.inputs, sub.outputs = ops, inputs, list(outputs)
        model = copy.copy(self._model)
        model.subgraphs, model.signatureDefs = [sub], []
        used = set(consumed) | produced | set(outputs)
        sub.tensors, model.buffers, model.metadata = self._pruned(used)
        builder = flatbuffers.Builder(1 << 20)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(builder.Output())
        return path

    def _pruned(self, used: set[int]) -> tuple[list[Any], list[Any], list[Any]]:
        """Tensors (indices kept) whose constant data is carried only where an op of the cut uses
        it, and the buffers that remain: a 60-op cut of an 18 MB model stays small to write."""
        buffers, remap, tensors = [self._model.buffers[0]], dict[int, int](), list[Any]()
        for index, tensor in enumerate(self._sub.tensors):
            t = copy.copy(tensor)
            if index in used and tensor.buffer:
                if tensor.buffer not in remap:
                    remap[tensor.buffer] = len(buffers)
                    buffers.append(self._model.buffers[tensor.buffer])
                t.buffer = remap[tensor.buffer]
            else:
                t.buffer = 0
            tensors.append(t)
        metadata: list[Any] = []  # the generated object API's TensorT, BufferT, MetadataT
        for entry in self._model.metadata or []:  # e.g. min_runtime_version: buffers named by index
            m = copy.copy(entry)
            m.buffer = len(buffers)
            buffers.append(self._model.buffers[entry.buffer])
            metadata.append(m)
        return tensors, buffers, metadata

    def write_exposed(self, path: str) -> str:
        """The whole graph with every activation as an output (original outputs first): one run on
        any delegate then yields every intermediate tensor (the delegate keeps them, as it must for
        an output)."""
        acts = [t for t in self.activations() if t not in self.inputs]
        return self.write(path, 0, len(self.ops), list(dict.fromkeys([*self.outputs, *acts])))


def _name(tensor: Any) -> str:
    return _decode(tensor.name)


def _decode(name: object) -> str:
    if name is None:
        return ""
    return name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
