"""LiteRT / tf.lite interpreter backend: the Interpreter API (``runtime=litert`` or ``tensorflow``).

Delegation coverage is derived from the interpreter's own graph after delegation: each
``DELEGATE`` node replaced a convex set of original nodes, recovered by walking back from the
delegate node's outputs to its inputs. That gives ops delegated / total and the op types left on
the CPU without parsing native log text.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import importlib.metadata
import os
import re
import tempfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from evalharness.core.errors import DelegateUnavailableError, EvalHarnessError, ModelMismatchError
from evalharness.core.native_output import routine
from evalharness.core.tensors import TensorInfo
from evalharness.runtime.compile_cache import xnnpack_weight_cache
from evalharness.runtime.contract import BACKENDS, Coverage, Model, RuntimeInfo
from evalharness.runtime.delegates import DelegatePlan
from evalharness.runtime.invoke_failure import invoke_failure
from evalharness.runtime.model_guard import check_model_file

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.runners import RunnerSettings

RUNTIME_PACKAGES = {"litert": "ai-edge-litert", "tensorflow": "tensorflow"}
# The ai-edge-litert releases whose libLiteRt.so C structs runtime/litert_capi.py mirrors and whose
# plug-ins OPENVINO_BUILT_AGAINST names: [lowest, first refused). pyproject.toml declares the same range.
SUPPORTED_LITERT = ((2, 3), (2, 4))


def _release(version: str) -> tuple[int, ...]:
    """The leading numeric release of a version string ("2.3.0rc1" -> (2, 3, 0))."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def check_litert_version(installed: str | None = None) -> str:
    """Refuse an ai-edge-litert outside :data:`SUPPORTED_LITERT` before anything of it loads: its C
    structs and plug-ins are what the profiler and the NPU path were written against, and a mismatch
    would not fail loudly but read wrong memory. Returns the installed version."""
    if installed is None:
        try:
            installed = importlib.metadata.version(RUNTIME_PACKAGES["litert"])
        except importlib.metadata.PackageNotFoundError:
            raise EvalHarnessError(
                "ai-edge-litert is not installed: pip install 'ai-edge-litert>=2.3.0,<2.4'"
            ) from None
    low, high = SUPPORTED_LITERT
    if not low <= _release(installed)[:2] < high:
        supported = f">={'.'.join(map(str, low))}.0,<{'.'.join(map(str, high))}"
        raise EvalHarnessError(
            f"ai-edge-litert {installed} is installed but evalharness supports ai-edge-litert{supported}: "
            f"pip install 'ai-edge-litert{supported}'"
        )
    return installed


def _import_runtime(runtime: str) -> tuple[Any, Any, Any]:
    """Return (Interpreter, OpResolverType, load_delegate) of the chosen runtime."""
    if runtime == "litert":
        from ai_edge_litert import interpreter as lite

        return lite.Interpreter, lite.OpResolverType, lite.load_delegate
    if runtime == "tensorflow":
        try:
            import tensorflow as tf
        except ImportError:
            raise EvalHarnessError(
                "runtime=tensorflow needs TensorFlow: pip install 'evalharness[tf]' (or use runtime=litert)"
            ) from None
        return tf.lite.Interpreter, tf.lite.experimental.OpResolverType, tf.lite.experimental.load_delegate
    raise EvalHarnessError(f"unknown runtime {runtime!r}; valid: {', '.join(RUNTIME_PACKAGES)}")


def runtime_info(runtime: str) -> RuntimeInfo:
    package = RUNTIME_PACKAGES.get(runtime, runtime)
    try:
        version = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return {"name": runtime, "package": package, "version": version}


@contextlib.contextmanager
def captured_native_stderr(sink: list[str]) -> Iterator[None]:
    """Collect what native code prints on fd 2 (TFLite logs there) and echo it afterwards."""
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            lines = [line for line in text.splitlines() if line.strip()]
            sink.extend(lines)
            # Echo what is not routine chatter (INFO / I0000-style lines stay in metrics.json only).
            loud = [line for line in lines if not routine(line)]
            if loud:
                os.write(2, ("\n".join(loud) + "\n").encode())


def _delegate_failure(exc: Exception) -> str:
    """The delegate's own reason from LiteRT's "Failed to load delegate from P\n<reason>" error."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = [line for line in lines if not line.startswith("Failed to load delegate from")]
    if reason:
        return " ".join(reason)
    return "tflite_plugin_create_delegate returned NULL" if lines else type(exc).__name__


def check_flatbuffer(model_path: str) -> None:
    """Before a loader sees the file: the one model-file guard (missing, special, damaged: one error)."""
    check_model_file(model_path)


def check_delegate_library(path: str) -> None:
    """Open the library ourselves first: a clear error instead of LiteRT's noisy failure path."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise DelegateUnavailableError(f"cannot load delegate library {path}: {exc}") from None
    missing = [
        s for s in ("tflite_plugin_create_delegate", "tflite_plugin_destroy_delegate") if not hasattr(lib, s)
    ]
    if missing:
        raise DelegateUnavailableError(
            f"{path} is not a TFLite external delegate: it does not export {', '.join(missing)}"
        )


OpDetails = dict[str, Any]  # one op of the interpreter's graph, as its _get_ops_details() gives it


def _tensor_info(d: dict[str, Any]) -> TensorInfo:
    scale, zero_point = d.get("quantization", (0.0, 0))
    return TensorInfo(
        name=str(d["name"]),
        index=int(d["index"]),
        shape=tuple(int(s) for s in d["shape"]),
        dtype=np.dtype(d["dtype"]).name,
        scale=float(scale),
        zero_point=int(zero_point),
    )


def delegated_ops(ops: list[OpDetails]) -> tuple[dict[int, OpDetails], list[OpDetails], set[int]]:
    """The original ops by index, the DELEGATE nodes, and the original ops those nodes replaced."""
    original, delegate_nodes, members = partitions(ops)
    return original, delegate_nodes, set().union(*members)


def partitions(ops: list[OpDetails]) -> tuple[dict[int, OpDetails], list[OpDetails], list[list[int]]]:
    """The original ops by index, the DELEGATE nodes (by index: the order the interpreter created
    them, which is the order it runs them), and for each the original ops it replaced, ascending
    (walked back from the node's outputs to its inputs)."""
    original = {o["index"]: o for o in ops if o["op_name"] != "DELEGATE"}
    delegate_nodes = sorted((o for o in ops if o["op_name"] == "DELEGATE"), key=lambda o: o["index"])
    producer = {int(t): idx for idx, o in original.items() for t in o["outputs"]}
    members: list[list[int]] = []
    for node in delegate_nodes:
        stop = {int(t) for t in node["inputs"]}
        frontier = [int(t) for t in node["outputs"]]
        covered: set[int] = set()
        while frontier:
            tensor = frontier.pop()
            if tensor in stop or tensor not in producer or producer[tensor] in covered:
                continue
            covered.add(producer[tensor])
            frontier.extend(int(t) for t in original[producer[tensor]]["inputs"] if t >= 0)
        members.append(sorted(covered))
    return original, delegate_nodes, members


def delegation_coverage(ops: list[OpDetails]) -> Coverage:
    """Ops delegated / total, partitions and op types left on the CPU, from the delegated graph."""
    original, delegate_nodes, covered = delegated_ops(ops)
    left = collections.Counter(o["op_name"] for idx, o in original.items() if idx not in covered)
    return Coverage(
        ops_total=len(original),
        ops_delegated=len(covered),
        partitions=len(delegate_nodes),
        fully_accelerated=bool(original) and len(covered) == len(original),
        ops_on_cpu_by_type=dict(sorted(left.items())),
        unsupported_ops=sorted(left),
        adapter="CPU",
        software_renderer=None,
        source="derived from the interpreter graph after delegation",
    )


def graph_summary(
    model_path: str, runtime: str = "litert"
) -> tuple[list[TensorInfo], list[TensorInfo], collections.Counter[str]]:
    """Inputs, outputs (with quantisation) and op types of the undelegated graph, without running it."""
    interpreter_cls, resolver_enum, _ = _import_runtime(runtime)
    try:
        interpreter = interpreter_cls(
            model_path=model_path,
            experimental_op_resolver_type=resolver_enum.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
        )
        interpreter.allocate_tensors()  # output shapes of custom ops are known only after allocation
    except (ValueError, RuntimeError) as exc:
        raise EvalHarnessError(f"{model_path}: runtime could not load the model: {exc}") from None
    ops = collections.Counter(o["op_name"] for o in interpreter._get_ops_details())
    inputs = [_tensor_info(d) for d in interpreter.get_input_details()]
    outputs = [_tensor_info(d) for d in interpreter.get_output_details()]
    return inputs, outputs, ops


@BACKENDS.register("interpreter")
class InterpreterModel(Model):
    """A loaded model: tensor details, set/invoke/get, and what the delegate really took."""

    placement = ("XNNPACK", "builtin kernel")

    @classmethod
    def load(cls, model_path: str, plan: DelegatePlan, runtime: str, runner: RunnerSettings | None) -> Model:
        return cls(model_path, plan, runtime)

    def __init__(self, model_path: str, plan: DelegatePlan, runtime: str = "litert") -> None:
        check_flatbuffer(model_path)
        interpreter_cls, resolver_enum, load_delegate = _import_runtime(runtime)
        self.plan, self._runtime, self.model_path = plan, runtime, model_path
        # XNNPACK's weight cache is not reachable through this API (recorded off, whatever the resolver)
        self.caches = (xnnpack_weight_cache(None, model_path, plan.name),)
        self.native_log: list[str] = []
        delegates = []
        with captured_native_stderr(self.native_log):
            if plan.external_path:
                check_delegate_library(plan.external_path)
                try:
                    delegates.append(load_delegate(plan.external_path, plan.external_options))
                except (ValueError, OSError, RuntimeError) as exc:
                    raise DelegateUnavailableError(
                        f"cannot load delegate library {plan.external_path}: {_delegate_failure(exc)}"
                    ) from None
            resolver = getattr(resolver_enum, plan.op_resolver.upper())
            try:
                self._interpreter = interpreter_cls(
                    model_path=model_path,
                    num_threads=plan.num_threads,
                    experimental_delegates=delegates or None,
                    experimental_op_resolver_type=resolver,
                )
                self._interpreter.allocate_tensors()
            except (ValueError, RuntimeError) as exc:
                text = " ".join(str(exc).split())
                if delegates:  # the delegate's Prepare failed, not the model
                    raise DelegateUnavailableError(
                        f"delegate {plan.external_path} failed to prepare {model_path}: {text}"
                    ) from None
                raise EvalHarnessError(f"{model_path}: runtime could not load the model: {text}") from None
        self._delegates = delegates  # keep the delegate objects alive as long as the interpreter
        self.inputs = [_tensor_info(d) for d in self._interpreter.get_input_details()]
        self.outputs = [_tensor_info(d) for d in self._interpreter.get_output_details()]
        self.coverage = delegation_coverage(self._interpreter._get_ops_details())
        if plan.external_path:
            self.placement = (f"delegate {os.path.basename(plan.external_path)}", "builtin kernel")
        self._check_delegation(model_path)

    def lane_threads(self) -> int | None:
        """A CPU interpreter (builtin kernels, XNNPACK) with its thread count given; an external
        delegate library may hold a device, so its instances never run side by side."""
        return None if self.plan.external_path or self.plan.num_threads < 1 else self.plan.num_threads

    def op_placements(self) -> list[str]:
        """Per op of the original graph: taken by a DELEGATE node of the interpreter's own graph."""
        original, _, covered = delegated_ops(self._interpreter._get_ops_details())
        return [self.placement[0] if i in covered else self.placement[1] for i in sorted(original)]

    def partition_nodes(self) -> list[list[int]]:
        """Per DELEGATE node, in the order the interpreter runs them: the original ops it replaced."""
        return partitions(self._interpreter._get_ops_details())[2]

    def _check_delegation(self, model_path: str) -> None:
        cov = self.coverage
        if self.plan.expects_xnnpack and cov.partitions == 0:
            raise DelegateUnavailableError(
                f"delegate=xnnpack: XNNPACK took no node of {model_path}; use delegate=cpu to run on "
                "builtin kernels knowingly"
            )
        # coverage not measured (None) cannot show full delegation: refused like a partial one
        if self.plan.require_full_delegation and (cov.ops_delegated or 0) < cov.ops_total:
            raise DelegateUnavailableError(
                f"delegate={self.plan.name}: {cov.ops_delegated}/{cov.ops_total} ops delegated and "
                f"require_full_delegation=true; left on CPU: {cov['ops_on_cpu_by_type']}"
            )

    def runtime_info(self) -> RuntimeInfo:
        return runtime_info(self._runtime)

    def set_batch(self, size: int) -> str:
        """Every input resized to ``size`` samples: a dynamic batch (shape signature -1) strictly,
        a fixed one where the graph allows it (a RESHAPE to a fixed shape refuses: exit 2)."""
        details = self._interpreter.get_input_details()
        signatures = [int(d["shape_signature"][0]) if len(d["shape_signature"]) else 1 for d in details]
        dynamic = all(s == -1 for s in signatures)
        how = "dynamic batch" if dynamic else f"fixed batch {max(signatures)} resized"
        try:
            for d in details:
                self._interpreter.resize_tensor_input(d["index"], [size, *d["shape"][1:]], strict=False)
            with captured_native_stderr(self.native_log):
                self._interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as exc:
            raise ModelMismatchError(
                f"loop.batch_size={size}: {self.model_path} does not run {size} samples per invoke (input "
                f"batch {signatures[0]} in its shape signature; {' '.join(str(exc).split())}); "
                "use loop.batch_size=1"
            ) from None
        unbatched = [
            d["name"] for d in self._interpreter.get_output_details() if d["shape"][:1].tolist() != [size]
        ]
        if unbatched:
            raise ModelMismatchError(
                f"loop.batch_size={size}: {self.model_path}'s outputs {unbatched} do not carry the batch "
                "on their first axis, so samples cannot be told apart; use loop.batch_size=1"
            )
        return f"{how} to {size}"

    def set_inputs(self, tensors: list[np.ndarray]) -> None:
        for info, value in zip(self.inputs, tensors, strict=True):
            self._interpreter.set_tensor(info.index, value)

    def invoke(self) -> None:
        try:
            self._interpreter.invoke()
        except RuntimeError as exc:  # the native cause, in one line (runtime/invoke_failure.py)
            error = invoke_failure(exc, self.plan.name, runtime_info(self._runtime)["version"])
            if not error.known:  # the runtime's own error, read with its native lines where it is reported
                raise
            raise error from exc

    def get_outputs(self) -> list[np.ndarray]:
        # get_tensor copies, so outputs stay valid after the next invoke().
        return [self._interpreter.get_tensor(info.index) for info in self.outputs]
