"""LiteRT ``CompiledModel`` backend: the GPU accelerator (WebGPU over Vulkan).

What really ran is read from the runtime, never assumed: the adapter the accelerator selected
(``Selected adapter: llvmpipe ..., arch=software`` on a host without a GPU — recorded and warned
about, so a software renderer is never reported as a hardware GPU), ``is_fully_accelerated()``, and
for partial delegation the accelerator's own "N operations will run on the GPU, and the remaining M
... on the CPU" line plus the op types it refused. Counts it does not report stay ``None``.

Timing: ``run_by_index`` may return before the GPU finishes; completion is only observable by
reading the outputs back, so ``invoke()`` here runs the model AND copies the outputs to host
memory (``timed_region`` says so in metrics.json).
"""

from __future__ import annotations

import atexit
import ctypes.util
import functools
import glob
import os
import re
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from evalharness.core.errors import ConfigError, DelegateUnavailableError, EvalHarnessError
from evalharness.core.tensors import TensorInfo
from evalharness.runtime.compile_cache import shader_cache, xnnpack_weight_cache
from evalharness.runtime.contract import BACKENDS, Coverage, Model, RuntimeInfo
from evalharness.runtime.delegates import DelegatePlan
from evalharness.runtime.invoke_failure import invoke_failure
from evalharness.runtime.litert import captured_native_stderr, check_flatbuffer, graph_summary, runtime_info

if TYPE_CHECKING:  # for the type only
    from evalharness.runtime.runners import RunnerSettings

_ICD_DIRS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d")
_INSTALL_HINT = (
    "install a Vulkan driver (no GPU: Mesa's lavapipe >= 24, on Debian bookworm "
    "`bash .ci/install-vulkan.sh` = mesa-vulkan-drivers from bookworm-backports)"
)
_SPLIT = re.compile(
    r"(\d+) operations will run on the GPU, and the remaining (\d+) operations will run on the CPU"
)
_ADAPTER = re.compile(r"Selected adapter: (.*)$")


def check_vulkan() -> None:
    """The GPU accelerator runs over Vulkan: a loader and at least one driver must exist."""
    if not ctypes.util.find_library("vulkan"):
        raise DelegateUnavailableError(
            f"delegate=gpu: no Vulkan loader (libvulkan.so.1) on this host; {_INSTALL_HINT}"
        )
    env_icds = os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES")
    if not env_icds and not any(glob.glob(os.path.join(d, "*.json")) for d in _ICD_DIRS):
        raise DelegateUnavailableError(
            f"delegate=gpu: Vulkan loader found but no Vulkan driver (ICD); {_INSTALL_HINT}"
        )


class GpuLog(TypedDict):
    """What the GPU accelerator printed while it compiled the model (None where it said nothing)."""

    adapter: str | None
    software_renderer: bool | None
    gpu_ops: int | None
    cpu_ops: int | None
    unsupported: list[str]  # its "not supported by GPU delegate" lines


def parse_gpu_log(lines: list[str]) -> GpuLog:
    """Adapter and GPU/CPU op split as the accelerator printed them (None where it said nothing)."""
    info: GpuLog = {
        "adapter": None,
        "software_renderer": None,
        "gpu_ops": None,
        "cpu_ops": None,
        "unsupported": [],
    }
    collecting = False
    for line in lines:
        if m := _ADAPTER.search(line):
            info["adapter"] = m.group(1).strip()
            info["software_renderer"] = "arch=software" in line or "CPU / Software" in line
        elif "Following operations are not supported by GPU delegate" in line:
            collecting = True
        elif m := _SPLIT.search(line):
            info["gpu_ops"], info["cpu_ops"] = int(m.group(1)), int(m.group(2))
            collecting = False
        elif collecting and ":" in line:
            info["unsupported"].append(line.strip())
    return info


TENSOR_BUFFER_DTYPES = ("float32", "float16", "int32", "int8", "uint8", "bool")  # TensorBuffer._DTYPE_STRINGS


class CompiledBuffersModel(Model):
    """A LiteRT ``CompiledModel`` with its I/O buffers: what the GPU and NPU backends share.

    Subclasses build the ``Options`` (and an ``Environment`` where plug-ins are needed) and call
    :meth:`_compile`; failures surface as :meth:`_load_error`, after the native log is complete.
    """

    timed_region = "run + output readback (accelerator completion is only observable through readback)"
    accelerator = "a LiteRT accelerator"  # for the runtime=tensorflow error
    plan: DelegatePlan

    def __init__(self, model_path: str, plan: DelegatePlan) -> None:
        """Each backend compiles its own way (its options, environment and caches)."""
        raise NotImplementedError

    @classmethod
    def load(cls, model_path: str, plan: DelegatePlan, runtime: str, runner: RunnerSettings | None) -> Model:
        if runtime != "litert":
            raise ConfigError(
                f"delegate={plan.name} runs on {cls.accelerator}: use runtime=litert, not {runtime}"
            )
        return cls(model_path, plan)

    def _options(self, accelerator: str, weight_cache: str = "", **vendor_options: Any) -> Any:
        """LiteRT ``Options`` for ``accelerator`` (GPU | NPU | CPU), with the CPU for refused ops unless
        require_full_delegation; ``weight_cache``: XNNPACK's packed-weight cache file."""
        from ai_edge_litert.options import CpuOptions, HardwareAccelerator, Options

        accel = HardwareAccelerator[accelerator]
        if not self.plan.require_full_delegation:
            accel |= HardwareAccelerator.CPU
        cpu = CpuOptions(num_threads=max(self.plan.num_threads, 0), xnnpack_weight_cache_path=weight_cache)
        return Options(hardware_accelerators=accel, cpu_options=cpu, **vendor_options)

    def _compile(
        self, model_path: str, options: Any, environment: Any = None, source_path: str | None = None
    ) -> None:
        """``source_path``: the undelegated graph when ``model_path`` is already compiled (AOT)."""
        from ai_edge_litert.compiled_model import CompiledModel

        self.inputs, self.outputs, self.ops_by_type = graph_summary(source_path or model_path)
        unsupported = [t.dtype for t in (*self.inputs, *self.outputs) if t.dtype not in TENSOR_BUFFER_DTYPES]
        if unsupported:  # TensorBuffer.write would raise a bare ValueError mid-loop (e.g. int16x8 models)
            raise DelegateUnavailableError(
                f"delegate={self.plan.name}: the LiteRT TensorBuffer API has no {unsupported[0]} tensors "
                f"({model_path})"
            )
        self.native_log: list[str] = []
        failure = None
        with captured_native_stderr(self.native_log):
            try:
                self._model = CompiledModel.from_file(model_path, options=options, environment=environment)
                self._inputs = self._by_name(self._model.create_input_buffers(0), "inputs", self.inputs)
                self._outputs = self._by_name(self._model.create_output_buffers(0), "outputs", self.outputs)
            except RuntimeError as exc:
                failure = exc
        if failure is not None:  # after the block: the captured native log is complete only now
            raise self._load_error(model_path, failure)
        self._host_outputs: list[np.ndarray] = []

    def _load_error(self, model_path: str, exc: RuntimeError) -> EvalHarnessError:
        text = " ".join(str(exc).split())
        return DelegateUnavailableError(
            f"delegate={self.plan.name} could not compile {model_path}: {text[:300]}"
        )

    def _by_name(self, buffers: list[Any], kind: str, infos: list[TensorInfo]) -> list[Any]:
        """Buffers in the order of our TensorInfo lists, matched by graph tensor index (signature
        names can differ from tensor names, e.g. ``args_0`` vs ``serving_default_args_0``)."""
        sig, spec = next(iter(self._model.get_signature_list().items()))
        names = spec[kind]
        details = (
            self._model.get_input_tensor_details
            if kind == "inputs"
            else self._model.get_output_tensor_details
        )(sig)
        position = {int(details[name]["index"]): i for i, name in enumerate(names)}
        # an AOT-compiled graph renumbers its tensors: there the tensor name is what still matches
        by_name = {str(details[name].get("name", name)): i for i, name in enumerate(names)}
        found = [position.get(info.index, by_name.get(info.name)) for info in infos]
        if None in found:
            raise EvalHarnessError(
                f"compiled model {kind} {names} do not match the graph's {[i.name for i in infos]}"
            )
        return [buffers[i] for i in found if i is not None]

    def runtime_info(self) -> RuntimeInfo:
        return runtime_info("litert")

    def set_inputs(self, tensors: list[np.ndarray]) -> None:
        for buf, value in zip(self._inputs, tensors, strict=True):
            buf.write(np.ascontiguousarray(value))

    def invoke(self) -> None:
        try:
            self._model.run_by_index(0, self._inputs, self._outputs)
            self._host_outputs = [
                buf.read(int(np.prod(info.shape)), np.dtype(info.dtype)).reshape(info.shape)
                for buf, info in zip(self._outputs, self.outputs, strict=True)
            ]
        except RuntimeError as exc:  # the native cause, in one line (runtime/invoke_failure.py)
            error = invoke_failure(exc, self.plan.name, runtime_info("litert")["version"])
            if not error.known:  # the runtime's own error, read with its native lines where it is reported
                raise
            raise error from exc

    def get_outputs(self) -> list[np.ndarray]:
        return [a.copy() for a in self._host_outputs]


@functools.cache
def _ensure_runtime_dir() -> None:
    """Give the Vulkan loader an ``XDG_RUNTIME_DIR`` where the environment has none: one private
    folder a process, removed when it exits (a folder made at every GPU load, even where the
    variable was set, was left in the temporary folder: thousands after a day of test runs)."""
    if os.environ.get("XDG_RUNTIME_DIR"):
        return
    folder = tempfile.mkdtemp(prefix="evalharness-xdg-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    os.environ["XDG_RUNTIME_DIR"] = folder


@BACKENDS.register("compiled_gpu")
class CompiledGpuModel(CompiledBuffersModel):
    """A model compiled for the LiteRT GPU accelerator (CPU only for ops the GPU refuses)."""

    timed_region = "run + output readback (GPU completion is only observable through readback)"
    accelerator = "the LiteRT GPU accelerator"
    placement = ("GPU", "CPU (XNNPACK)")

    def __init__(self, model_path: str, plan: DelegatePlan) -> None:
        check_flatbuffer(model_path)
        check_vulkan()
        _ensure_runtime_dir()
        from ai_edge_litert.gpu_options import GpuOptions

        self.plan = plan
        options = self._options(
            "GPU", gpu_options=GpuOptions(enforce_f32=not plan.flags.get("gpu_precision_loss_allowed", True))
        )
        with shader_cache(plan.compile_cache_dir, model_path, plan.name) as probe:
            self.caches = (probe,)
            self._compile(model_path, options)
        self.gpu = parse_gpu_log(self.native_log)
        if self.gpu["adapter"] is None:
            raise DelegateUnavailableError(
                f"delegate=gpu: the LiteRT GPU accelerator selected no GPU adapter for {model_path}; "
                + _INSTALL_HINT
            )
        self.coverage = self._coverage(sum(self.ops_by_type.values()))

    def _load_error(self, model_path: str, exc: RuntimeError) -> EvalHarnessError:
        text = " ".join(str(exc).split())
        if "not accelerated" in text:
            refused = parse_gpu_log(self.native_log)["unsupported"]
            return DelegateUnavailableError(
                f"delegate=gpu with require_full_delegation=true: the GPU refuses some ops of {model_path} "
                f"({'; '.join(refused) or 'see native log'})"
            )
        return super()._load_error(model_path, exc)

    def _coverage(self, ops_total: int) -> Coverage:
        full = bool(self._model.is_fully_accelerated())
        g = self.gpu
        delegated = ops_total if full else g["gpu_ops"]
        if delegated is not None and g["cpu_ops"] is not None and delegated + g["cpu_ops"] != ops_total:
            delegated = None  # the accelerator's count disagrees with the graph: say unknown, not a guess
        return Coverage(
            ops_total=ops_total,
            ops_delegated=delegated,
            partitions=None,
            fully_accelerated=full,
            ops_on_cpu_by_type={} if full else None,
            unsupported_ops=g["unsupported"],
            adapter=g["adapter"],
            software_renderer=g["software_renderer"],
            source="CompiledModel.is_fully_accelerated() and the GPU accelerator's own log",
        )


@BACKENDS.register("compiled_cpu")
class CompiledCpuModel(CompiledBuffersModel):
    """``delegate=cpu`` with ``delegate.compile_cache_dir``: LiteRT's CompiledModel on its CPU accelerator
    (XNNPACK), whose options carry XNNPACK's weight cache; the Interpreter API exposes none."""

    timed_region = "run + output readback"
    accelerator = "LiteRT's CompiledModel CPU accelerator"
    placement = ("XNNPACK (CompiledModel CPU)", "CPU")

    def __init__(self, model_path: str, plan: DelegatePlan) -> None:
        check_flatbuffer(model_path)
        self.plan = plan
        probe = xnnpack_weight_cache(plan.compile_cache_dir, model_path, plan.name)
        self.caches = (probe,)
        self._compile(model_path, self._options("CPU", weight_cache=probe.path or ""))
        total = sum(self.ops_by_type.values())
        self.coverage = Coverage(
            ops_total=total,
            ops_delegated=None,
            partitions=None,
            fully_accelerated=bool(self._model.is_fully_accelerated()),
            ops_on_cpu_by_type=None,
            unsupported_ops=[],
            adapter="CPU",
            software_renderer=None,
            source="LiteRT CompiledModel CPU accelerator (its per-op XNNPACK split is not reported)",
        )
