"""The slice of LiteRT's C API that the runtime profiler needs: ``libLiteRt.so`` through ctypes.

The structs mirror LiteRT's public C headers (``litert/c``: ``ProfiledEventData``, ``LiteRtAny``,
``LiteRtEnvOption``, ``LiteRtRankedTensorType``, ``LiteRtLayout``), which the project marks ABI
stable. Options are the runtime's own TOML payloads under their identifiers
(``runtime_options_string``: ``enable_profiling``; ``xnnpack``: the CPU's kernel mode and threads),
the strings its option helpers would build. Every failing call raises :class:`ProfilerUnavailable`
with the call's name, and every handle is released in reverse order of creation.
"""

from __future__ import annotations

import ctypes as C
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, TypeAlias

import numpy as np

CPU, GPU = 1, 2  # LiteRtHwAccelerators
_RUNTIME_LIBRARY_DIR = 22  # kLiteRtEnvOptionTagRuntimeLibraryDir
_ANY_STRING = 8  # kLiteRtAnyTypeString
# LiteRtElementType (= TfLiteType) -> bytes per element, for the output buffers
Buffers: TypeAlias = "C.Array[C.c_void_p]"  # tensor buffer handles, as LiteRtRunCompiledModel takes them
_ELEMENT_BYTES = {1: 4, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 9: 1, 10: 2, 11: 8, 12: 16, 16: 4, 17: 2}


class ProfilerUnavailable(Exception):
    """The runtime's profiler cannot profile this plan here; ``str()`` says why."""


class _Memory(C.Structure):
    _fields_ = [("total", C.c_size_t), ("in_use", C.c_size_t), ("private", C.c_size_t)]


class _Event(C.Structure):  # ProfiledEventData
    _fields_ = [
        ("tag", C.c_char_p),
        ("event_type", C.c_int),
        ("start_us", C.c_uint64),
        ("elapsed_us", C.c_uint64),
        ("begin_memory", _Memory),
        ("end_memory", _Memory),
        ("metadata1", C.c_uint64),
        ("metadata2", C.c_uint64),
        ("source", C.c_int),
    ]


class _Any(C.Structure):  # LiteRtAny: a type tag and a 64-bit union
    _fields_ = [("type", C.c_int), ("value", C.c_void_p)]


class _EnvOption(C.Structure):
    _fields_ = [("tag", C.c_int), ("value", _Any)]


class _TensorType(C.Structure):  # LiteRtRankedTensorType: element type + LiteRtLayout
    _fields_ = [
        ("element_type", C.c_int),
        ("rank_bits", C.c_uint32),  # rank:7, has_strides:1
        ("dimensions", C.c_int32 * 8),
        ("strides", C.c_uint32 * 8),
    ]

    def shape(self) -> list[int]:
        return list(self.dimensions[: self.rank_bits & 0x7F])


class _Layout(C.Structure):  # LiteRtLayout
    _fields_ = [("rank_bits", C.c_uint32), ("dimensions", C.c_int32 * 8), ("strides", C.c_uint32 * 8)]


def load_library() -> tuple[C.CDLL, str]:
    """``libLiteRt.so`` of the installed wheel and its folder (where its accelerators live)."""
    try:
        import ai_edge_litert
    except ImportError as e:  # pragma: no cover - the runtime itself needs it
        raise ProfilerUnavailable(f"ai_edge_litert is not importable ({e})") from None
    folder = os.path.dirname(ai_edge_litert.__file__)
    try:
        lib = C.CDLL(os.path.join(folder, "libLiteRt.so"))
        lib.LiteRtCompiledModelGetProfiler  # noqa: B018 - the symbol this module exists for
    except (OSError, AttributeError) as e:
        raise ProfilerUnavailable(f"this ai-edge-litert's libLiteRt.so has no profiler C API ({e})") from None
    return lib, folder


class ProfiledModel:
    """One profiled compiled model and its host-memory buffers; ``close`` frees them in order."""

    def __init__(
        self, model_path: str, hardware: int, cpu_payload: str, inputs: dict[int, np.ndarray]
    ) -> None:
        self.lib, folder = load_library()
        self._stack = ExitStack()
        try:
            self._build(folder, model_path, hardware, cpu_payload, inputs)
        except BaseException:
            self.close()
            raise

    def _ok(self, status: int, what: str) -> None:
        if status != 0:
            raise ProfilerUnavailable(f"{what} failed (LiteRtStatus {status})")

    def _handle(
        self, create: Callable[..., int], *args: Any, destroy: str | None = None, what: str = ""
    ) -> C.c_void_p:
        handle = C.c_void_p()
        self._ok(create(*args, C.byref(handle)), what)
        if destroy:
            self._stack.callback(getattr(self.lib, destroy), handle)
        return handle

    def _opaque(self, identifier: bytes, payload: str) -> C.c_void_p:
        """Options the runtime parses from a TOML string it owns (freed by its own deleter)."""
        libc = C.CDLL(None)
        libc.strdup.restype = C.c_void_p
        copy = libc.strdup(payload.encode())
        return self._handle(
            self.lib.LiteRtCreateOpaqueOptions,
            identifier,
            C.c_void_p(copy),
            C.cast(libc.free, C.c_void_p),
            what="LiteRtCreateOpaqueOptions",
        )

    def _build(
        self, folder: str, model_path: str, hardware: int, cpu_payload: str, inputs: dict[int, np.ndarray]
    ) -> None:
        lib = self.lib
        self._folder = C.c_char_p(folder.encode())  # must outlive the environment
        env_options = (_EnvOption * 1)(
            _EnvOption(_RUNTIME_LIBRARY_DIR, _Any(_ANY_STRING, C.cast(self._folder, C.c_void_p)))
        )
        # created in this order, destroyed in the reverse one by the ExitStack
        self.env = self._handle(
            lib.LiteRtCreateEnvironment,
            1,
            env_options,
            destroy="LiteRtDestroyEnvironment",
            what="LiteRtCreateEnvironment",
        )
        self.model = self._handle(
            lib.LiteRtCreateModelFromFile,
            self.env,
            os.fsencode(model_path),
            destroy="LiteRtDestroyModel",
            what="LiteRtCreateModelFromFile",
        )
        options = self._handle(
            lib.LiteRtCreateOptions, destroy="LiteRtDestroyOptions", what="LiteRtCreateOptions"
        )
        self._ok(
            lib.LiteRtSetOptionsHardwareAccelerators(options, hardware),
            "LiteRtSetOptionsHardwareAccelerators",
        )
        payloads = [(b"runtime_options_string", "enable_profiling = true\n")]
        if cpu_payload:
            payloads.append((b"xnnpack", cpu_payload))
        for identifier, payload in payloads:  # the options own each one once added
            self._ok(
                lib.LiteRtAddOpaqueOptions(options, self._opaque(identifier, payload)),
                "LiteRtAddOpaqueOptions",
            )
        self.compiled = self._handle(
            lib.LiteRtCreateCompiledModel,
            self.env,
            self.model,
            options,
            destroy="LiteRtDestroyCompiledModel",
            what="LiteRtCreateCompiledModel",
        )
        self.profiler = self._handle(
            lib.LiteRtCompiledModelGetProfiler, self.compiled, what="LiteRtCompiledModelGetProfiler"
        )
        signature = self._handle(
            lib.LiteRtGetModelSignature, self.model, C.c_size_t(0), what="LiteRtGetModelSignature"
        )
        self._arrays: list[np.ndarray] = []
        self.inputs = self._input_buffers(signature, inputs)
        self.outputs = self._output_buffers(signature)

    def _tensor(self, signature: C.c_void_p, kind: str, i: int) -> tuple[_TensorType, int]:
        tensor = self._handle(
            getattr(self.lib, f"LiteRtGetSignature{kind}TensorByIndex"),
            signature,
            C.c_size_t(i),
            what=f"LiteRtGetSignature{kind}TensorByIndex",
        )
        ttype, index = _TensorType(), C.c_uint32()
        self._ok(self.lib.LiteRtGetRankedTensorType(tensor, C.byref(ttype)), "LiteRtGetRankedTensorType")
        self._ok(self.lib.LiteRtGetTensorIndex(tensor, C.byref(index)), "LiteRtGetTensorIndex")
        return ttype, index.value

    def _count(self, signature: C.c_void_p, kind: str) -> int:
        n = C.c_size_t()
        self._ok(getattr(self.lib, f"LiteRtGetNumSignature{kind}s")(signature, C.byref(n)), f"{kind} count")
        return n.value

    def _host_buffer(self, ttype: _TensorType, array: np.ndarray) -> C.c_void_p:
        """A tensor buffer over ``array``'s memory (kept alive here; 64-byte aligned as LiteRT asks)."""
        raw = np.empty(array.nbytes + 64, dtype=np.uint8)
        start = (-raw.ctypes.data) % 64
        aligned = raw[start : start + array.nbytes]
        aligned[:] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        self._arrays.append(raw)
        return self._handle(
            self.lib.LiteRtCreateTensorBufferFromHostMemory,
            C.byref(ttype),
            C.c_void_p(aligned.ctypes.data),
            C.c_size_t(array.nbytes),
            None,
            destroy="LiteRtDestroyTensorBuffer",
            what="LiteRtCreateTensorBufferFromHostMemory",
        )

    def _input_buffers(self, signature: C.c_void_p, inputs: dict[int, np.ndarray]) -> Buffers:
        buffers = []
        for i in range(self._count(signature, "Input")):
            ttype, index = self._tensor(signature, "Input", i)
            if index not in inputs:
                raise ProfilerUnavailable(
                    f"signature input {index} is none of the run's inputs {sorted(inputs)}"
                )
            array = inputs[index]
            if ttype.shape() != list(array.shape):  # dynamic dimensions: the sample's shape
                dims = (C.c_int * array.ndim)(*array.shape)
                self._ok(
                    self.lib.LiteRtCompiledModelResizeInputTensor(
                        self.compiled, C.c_size_t(0), C.c_size_t(i), dims, C.c_size_t(array.ndim)
                    ),
                    "LiteRtCompiledModelResizeInputTensor",
                )
                ttype.rank_bits = array.ndim
                for d, size in enumerate(array.shape):
                    ttype.dimensions[d] = size
            buffers.append(self._host_buffer(ttype, array))
        return (C.c_void_p * len(buffers))(*buffers)

    def _output_buffers(self, signature: C.c_void_p) -> Buffers:
        n = self._count(signature, "Output")
        layouts = (_Layout * n)()
        self._ok(
            self.lib.LiteRtGetCompiledModelOutputTensorLayouts(
                self.compiled, C.c_size_t(0), C.c_size_t(n), layouts, True
            ),
            "LiteRtGetCompiledModelOutputTensorLayouts",
        )
        buffers = []
        for i in range(n):
            ttype, _ = self._tensor(signature, "Output", i)
            size = _ELEMENT_BYTES.get(ttype.element_type)
            if size is None:
                raise ProfilerUnavailable(f"output {i}: element type {ttype.element_type} has no known size")
            ttype.rank_bits, ttype.dimensions = layouts[i].rank_bits, layouts[i].dimensions
            count = int(np.prod(ttype.shape(), dtype=np.int64))
            buffers.append(self._host_buffer(ttype, np.zeros(count * size, dtype=np.uint8)))
        return (C.c_void_p * len(buffers))(*buffers)

    def invoke(self) -> tuple[float, float]:
        """One run: wall-clock and process CPU time (ms, all threads) around the C call."""
        used, start = time.process_time(), time.perf_counter()
        status = self.lib.LiteRtRunCompiledModel(
            self.compiled,
            C.c_size_t(0),
            C.c_size_t(len(self.inputs)),
            self.inputs,
            C.c_size_t(len(self.outputs)),
            self.outputs,
        )
        elapsed = (time.perf_counter() - start) * 1e3, (time.process_time() - used) * 1e3
        if status != 0:
            raise ProfilerUnavailable(
                f"a profiled invoke failed (LiteRtStatus {status}; the runtime's own message is in "
                "native.log: the WebGPU accelerator's is 'UNIMPLEMENTED: Profile is not implemented')"
            )
        return elapsed

    def events(self) -> list[tuple[str, int, float, int]]:
        """(tag, type, elapsed ms, metadata1) of every event since the last reset, in begin order."""
        n = C.c_int()
        self._ok(self.lib.LiteRtGetNumProfilerEvents(self.profiler, C.byref(n)), "LiteRtGetNumProfilerEvents")
        raw = (_Event * n.value)()
        self._ok(self.lib.LiteRtGetProfilerEvents(self.profiler, n, raw), "LiteRtGetProfilerEvents")
        return [
            ((e.tag or b"").decode(errors="replace"), e.event_type, e.elapsed_us / 1e3, e.metadata1)
            for e in raw
        ]

    def profile_one(self) -> tuple[tuple[float, float], list[tuple[str, int, float, int]]]:
        self._ok(self.lib.LiteRtResetProfiler(self.profiler), "LiteRtResetProfiler")
        self._ok(self.lib.LiteRtStartProfiler(self.profiler), "LiteRtStartProfiler")
        wall = self.invoke()
        self._ok(self.lib.LiteRtStopProfiler(self.profiler), "LiteRtStopProfiler")
        return wall, self.events()

    def close(self) -> None:
        self._stack.close()
