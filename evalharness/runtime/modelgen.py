"""Build small, real ``.tflite`` models from the flatbuffer schema, so tests need no TensorFlow.

A test of a decoder or a task wants a model whose outputs it knows exactly (hand-written YOLO
candidates, SSD post-process tensors in either export order) and which still goes through the real
interpreter: input details, output details, quantisation parameters and ``get_tensor`` all come
from LiteRT, not from a mock. :func:`constant_output_model` writes such a model with
``ai_edge_litert``'s generated schema (object API) and ``flatbuffers``.

The graph makes the image input a real, consumed input and every output a computed tensor::

    x    = CAST(input) -> float32            (only for a non-float32 input)
    z    = MUL(REDUCE_MAX(x, all axes), 0.0) -> float32 scalar 0 (for any finite input)
    y_i  = ADD(const_i, z)                   -> exactly const_i (c + 0 == c in IEEE float)
    q_i  = QUANTIZE(y_i)                     -> int8 / uint8 output i, when output_quant[i] is set

Every op is a plain builtin (version 1) that LiteRT's default resolver and XNNPACK both run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import flatbuffers
import numpy as np
import numpy.typing as npt
from ai_edge_litert import schema_py_generated as schema

__all__ = [
    "QuantSpec",
    "append_files",
    "constant_output_model",
    "conv_classifier_model",
    "resize_bilinear_model",
]

# (scale, zero_point) -> int8, or (scale, zero_point, "int8" | "uint8")
QuantSpec = tuple[float, int] | tuple[float, int, str]

_TENSOR_TYPES = {
    "float32": schema.TensorType.FLOAT32,
    "float16": schema.TensorType.FLOAT16,
    "int32": schema.TensorType.INT32,
    "uint8": schema.TensorType.UINT8,
    "int8": schema.TensorType.INT8,
}
_OP = schema.BuiltinOperator
_OPTS = schema.BuiltinOptions


class _Graph:
    """One subgraph being assembled: tensors, constant buffers, operators and their opcodes."""

    def __init__(self) -> None:
        self.buffers = [schema.BufferT()]  # buffer 0: the empty sentinel every model starts with
        self.tensors: list[Any] = []  # schema.TensorT (the generated object API)
        self.operators: list[Any] = []  # schema.OperatorT
        self.opcodes: dict[int, int] = {}

    def tensor(
        self,
        name: str,
        shape: Iterable[int],
        dtype: str,
        data: npt.ArrayLike | None = None,
        quant: tuple[float, int] | None = None,
    ) -> int:
        t = schema.TensorT()
        t.name, t.shape, t.type, t.hasRank = name, [int(s) for s in shape], _TENSOR_TYPES[dtype], True
        if data is not None:
            buf = schema.BufferT()
            buf.data = np.frombuffer(np.ascontiguousarray(data, dtype=dtype).tobytes(), dtype=np.uint8)
            self.buffers.append(buf)
            t.buffer = len(self.buffers) - 1
        if quant is not None:
            q = schema.QuantizationParametersT()
            q.scale, q.zeroPoint = [float(quant[0])], [int(quant[1])]
            t.quantization = q
        self.tensors.append(t)
        return len(self.tensors) - 1

    def op(
        self,
        code: int,
        inputs: list[int],
        outputs: list[int],
        options_type: int = _OPTS.NONE,
        options: Any = None,
    ) -> None:
        op = schema.OperatorT()
        op.opcodeIndex = self.opcodes.setdefault(code, len(self.opcodes))
        op.inputs, op.outputs = inputs, outputs
        op.builtinOptionsType, op.builtinOptions = options_type, options
        self.operators.append(op)

    def save(self, path: str, inputs: list[int], outputs: list[int]) -> str:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(self.serialize(inputs, outputs))
        return str(path)

    def serialize(self, inputs: list[int], outputs: list[int], signature: bool = False) -> bytes:
        """The model's flatbuffer bytes (an Interpreter takes them as ``model_content``);
        ``signature``: with a ``serving_default`` signature (what ai-edge-quantizer calibrates)."""
        sub = schema.SubGraphT()
        sub.tensors, sub.operators, sub.inputs, sub.outputs = self.tensors, self.operators, inputs, outputs
        sub.name = "main"
        model = schema.ModelT()
        model.version, model.description = 3, "evalharness modelgen"
        model.subgraphs, model.buffers = [sub], self.buffers
        if signature:
            sig = schema.SignatureDefT()
            sig.signatureKey, sig.subgraphIndex = "serving_default", 0
            sig.inputs, sig.outputs = (
                [_tensor_map(self.tensors[t].name, t) for t in ts] for ts in (inputs, outputs)
            )
            model.signatureDefs = [sig]
        model.operatorCodes = []
        for code in sorted(self.opcodes, key=self.opcodes.__getitem__):
            oc = schema.OperatorCodeT()
            oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), 1
            model.operatorCodes.append(oc)
        builder = flatbuffers.Builder(1024)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())


def _tensor_map(name: str, index: int) -> Any:  # a schema.TensorMapT
    m = schema.TensorMapT()
    m.name, m.tensorIndex = name, index
    return m


def _quant_spec(spec: QuantSpec) -> tuple[float, int, str]:
    scale, zero_point, dtype = (*spec, "int8") if len(spec) == 2 else spec
    info = np.iinfo(dtype) if dtype in ("int8", "uint8") else None
    if info is None or not scale > 0 or not info.min <= zero_point <= info.max:
        raise ValueError(f"output_quant {spec!r}: need (scale > 0, zero_point in range, 'int8' | 'uint8')")
    return float(scale), int(zero_point), dtype


def _zero_from_input(g: _Graph, inp: int, shape: Sequence[int], dtype: str) -> int:
    """A float32 scalar 0 that depends on the input, so the input is really consumed."""
    x = inp
    if dtype != "float32":
        x = g.tensor("input_f32", shape, "float32")
        cast = schema.CastOptionsT()
        cast.inDataType, cast.outDataType = _TENSOR_TYPES[dtype], _TENSOR_TYPES["float32"]
        g.op(_OP.CAST, [inp], [x], _OPTS.CastOptions, cast)
    axes = g.tensor("reduce_axes", [len(shape)], "int32", np.arange(len(shape)))
    peak = g.tensor("input_max", [], "float32")
    g.op(_OP.REDUCE_MAX, [x, axes], [peak], _OPTS.ReducerOptions, schema.ReducerOptionsT())
    zero_c = g.tensor("zero", [], "float32", np.zeros((), np.float32))
    zero = g.tensor("input_times_zero", [], "float32")
    g.op(_OP.MUL, [peak, zero_c], [zero], _OPTS.MulOptions, schema.MulOptionsT())
    return zero


def constant_output_model(
    path: str,
    outputs: Sequence[np.ndarray],
    output_quant: Sequence[QuantSpec | None] | None = None,
    input_shape: Sequence[int] = (1, 64, 64, 3),
    input_dtype: str = "uint8",
    input_quant: tuple[float, int] | None = None,
    output_names: Sequence[str] | None = None,
    const_dtype: str = "float32",
) -> str:
    """Write a real model with one image input whose outputs are ``outputs`` (returns ``path``).

    ``outputs`` are real values (cast to float32). ``output_quant[i]`` None keeps output i float32
    and exact; ``(scale, zero_point[, "int8" | "uint8"])`` makes it a quantised output that LiteRT
    computes with QUANTIZE, so it dequantises to within half a step of the value (inside the range).
    ``input_quant`` only annotates the input tensor (as real uint8 models do); it changes nothing.
    ``const_dtype="float16"`` stores the values as float16 weights behind a DEQUANTIZE, with float32
    outputs, as float16 exports (Ultralytics ``half=True``) do.
    Outputs keep the given order and names, so any export order can be reproduced.
    """
    if input_dtype not in ("uint8", "int8", "float32"):
        raise ValueError(f"input_dtype {input_dtype!r}: use uint8, int8 or float32")
    quants = list(output_quant) if output_quant is not None else [None] * len(outputs)
    names = list(output_names) if output_names is not None else [f"output_{i}" for i in range(len(outputs))]
    if not len(quants) == len(names) == len(outputs):
        raise ValueError("outputs, output_quant and output_names must have the same length")
    g = _Graph()
    inp = g.tensor("input", input_shape, input_dtype, quant=input_quant)
    zero = _zero_from_input(g, inp, input_shape, input_dtype)
    result = []
    for i, (values, spec, name) in enumerate(zip(outputs, quants, names, strict=True)):
        values = np.asarray(values, dtype=np.float32)
        if const_dtype == "float16":
            half = g.tensor(f"const_{i}_fp16", values.shape, "float16", values.astype(np.float16))
            const = g.tensor(f"const_{i}", values.shape, "float32")
            g.op(_OP.DEQUANTIZE, [half], [const], _OPTS.DequantizeOptions, schema.DequantizeOptionsT())
        else:
            const = g.tensor(f"const_{i}", values.shape, "float32", values)
        out = g.tensor(name if spec is None else f"{name}_float", values.shape, "float32")
        g.op(_OP.ADD, [const, zero], [out], _OPTS.AddOptions, schema.AddOptionsT())
        if spec is not None:
            scale, zero_point, dtype = _quant_spec(spec)
            quantized = g.tensor(name, values.shape, dtype, quant=(scale, zero_point))
            g.op(_OP.QUANTIZE, [out], [quantized], _OPTS.QuantizeOptions, schema.QuantizeOptionsT())
            out = quantized
        result.append(out)
    return g.save(path, [inp], result)


def append_files(path: str, files: dict[str, str | bytes]) -> str:
    """Append a zip archive of ``files`` to the model at ``path``, as TFLite's metadata writer (and
    so TF-Hub and Ultralytics exports) attach label files and ``temp_meta.txt``; returns ``path``."""
    import zipfile

    with zipfile.ZipFile(path, "a") as archive:  # "a" on a non-zip file appends a new archive
        for name, data in files.items():
            archive.writestr(name, data)
    return str(path)


def with_input_quantization(source: str, path: str, scale: float, zero_point: int) -> str:
    """A copy of ``source`` (a model with a quantized image input read by convolutions, as a quantized
    classifier's is) whose input is quantized with ``scale`` and ``zero_point``, written to ``path``
    (returned): what an export of the same network with another input range would be. The input's
    two numbers are patched where they lie in the flatbuffer, and each reading convolution's int32
    bias, kept in the accumulator's scale (input scale x weight scale), with them; everything else
    (metadata, appended files) stays byte for byte."""
    with open(source, "rb") as f:
        buf = bytearray(f.read())
    model = schema.Model.GetRootAsModel(buf, 0)
    graph = model.Subgraphs(0)
    image = graph.Inputs(0)
    quant = graph.Tensors(image).Quantization()
    scales, zeros = quant.ScaleAsNumpy(), quant.ZeroPointAsNumpy()  # views into ``buf``
    ratio = float(scales[0]) / scale
    scales[0], zeros[0] = scale, zero_point
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        if op.InputsLength() < 3 or op.Inputs(0) != image or op.Inputs(2) < 0:
            continue
        bias = graph.Tensors(op.Inputs(2))
        values = model.Buffers(bias.Buffer()).DataAsNumpy().view(np.int32)
        values[:] = np.round(values.astype(np.float64) * ratio).astype(np.int32)
        bias_scales = bias.Quantization().ScaleAsNumpy()
        bias_scales[:] = bias_scales / ratio
    with open(path, "wb") as f:
        f.write(buf)
    return path


def resize_bilinear_model(channels: int, out_h: int, out_w: int) -> bytes:
    """``uint8 [1, H, W, C] -> CAST -> float32 -> RESIZE_BILINEAR(out_h, out_w)``, any H and W (the
    input's shape signature is dynamic): the TFLite tool's resize (align_corners=false,
    half_pixel_centers=false) as a model, for :mod:`evalharness.runtime.native_resize`."""
    g = _Graph()
    inp = g.tensor("pixels", [1, 1, 1, channels], "uint8")
    g.tensors[inp].shapeSignature = [1, -1, -1, channels]
    x = g.tensor("pixels_f32", [1, 1, 1, channels], "float32")
    g.tensors[x].shapeSignature = [1, -1, -1, channels]
    cast = schema.CastOptionsT()
    cast.inDataType, cast.outDataType = _TENSOR_TYPES["uint8"], _TENSOR_TYPES["float32"]
    g.op(_OP.CAST, [inp], [x], _OPTS.CastOptions, cast)
    size = g.tensor("size", [2], "int32", np.array([out_h, out_w], dtype=np.int32))
    out = g.tensor("resized", [1, out_h, out_w, channels], "float32")
    options = schema.ResizeBilinearOptionsT()
    options.alignCorners, options.halfPixelCenters = False, False
    g.op(_OP.RESIZE_BILINEAR, [x, size], [out], _OPTS.ResizeBilinearOptions, options)
    return g.serialize([inp], [out])


def conv_classifier_model(
    path: str,
    convs: Sequence[tuple[np.ndarray, np.ndarray, bool]],
    fc: tuple[np.ndarray, np.ndarray],
    size: int = 8,
) -> str:
    """A float classifier whose every weight the caller chooses (returns ``path``)::

        x -> CONV_2D 1x1 (w_i [out, 1, 1, in], b_i [out], ReLU if relu_i) ... -> MEAN over H, W
          -> FULLY_CONNECTED (w [classes, channels], b [classes]) -> logits [1, classes]

    One float32 input ``[1, size, size, C]`` and a ``serving_default`` signature, so ai-edge-quantizer
    can calibrate and quantize it: tests plant a defect in one op's weights (a scale that int8
    cannot hold) and know which op it is (op i = conv i, then MEAN, then FULLY_CONNECTED)."""
    g = _Graph()
    channels = int(np.asarray(convs[0][0]).shape[-1]) if convs else int(np.asarray(fc[0]).shape[1])
    x = inp = g.tensor("input", [1, size, size, channels], "float32")
    for i, (w, b, relu) in enumerate(convs):
        w, b = np.asarray(w, np.float32), np.asarray(b, np.float32)
        weights = g.tensor(f"conv{i}_weights", w.shape, "float32", w)
        bias = g.tensor(f"conv{i}_bias", b.shape, "float32", b)
        y = g.tensor(f"conv{i}", [1, size, size, w.shape[0]], "float32")
        options = schema.Conv2DOptionsT()
        options.padding, options.strideW, options.strideH = schema.Padding.VALID, 1, 1
        options.dilationWFactor = options.dilationHFactor = 1
        options.fusedActivationFunction = (
            schema.ActivationFunctionType.RELU if relu else schema.ActivationFunctionType.NONE
        )
        g.op(_OP.CONV_2D, [x, weights, bias], [y], _OPTS.Conv2DOptions, options)
        x, channels = y, w.shape[0]
    axes = g.tensor("mean_axes", [2], "int32", np.array([1, 2], np.int32))
    pooled = g.tensor("pooled", [1, channels], "float32")
    reducer = schema.ReducerOptionsT()
    reducer.keepDims = False
    g.op(_OP.MEAN, [x, axes], [pooled], _OPTS.ReducerOptions, reducer)
    w, b = np.asarray(fc[0], np.float32), np.asarray(fc[1], np.float32)
    weights = g.tensor("fc_weights", w.shape, "float32", w)
    bias = g.tensor("fc_bias", b.shape, "float32", b)
    logits = g.tensor("logits", [1, w.shape[0]], "float32")
    g.op(
        _OP.FULLY_CONNECTED,
        [pooled, weights, bias],
        [logits],
        _OPTS.FullyConnectedOptions,
        schema.FullyConnectedOptionsT(),
    )
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        f.write(g.serialize([inp], [logits], signature=True))
    return str(path)
