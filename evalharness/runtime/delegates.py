"""Delegate configs -> a load plan, with TFLite delegate-registrar flag names.

This module imports no runtime: it decides, before anything is loaded, whether the requested
delegate can run on this host and with which interpreter settings. A delegate that cannot run is a
:class:`DelegateUnavailableError` naming the missing piece, never a quiet CPU fallback. A flag that
the chosen delegate does not read is an error too, so a typo'd sweep never measures the default.
"""

from __future__ import annotations

import ctypes.util
import dataclasses
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass, field

from evalharness.errors import ConfigError, DelegateUnavailableError
from evalharness.registry import Registry


@dataclass
class DelegateConfig:
    """Every flag any delegate reads; names mirror TFLite's delegate registrar / benchmark_model."""

    name: str = "cpu"
    num_threads: int = 1
    max_delegated_partitions: int = 0  # 0 = no limit
    min_nodes_per_partition: int = 0  # 0 = delegate's default
    require_full_delegation: bool = False
    # reference kernels: builtin_without_default_delegates (TFLite kernels, no XNNPACK) | builtin_ref
    op_resolver: str = "auto"
    use_xnnpack: bool = False
    xnnpack_force_fp16: bool = False
    use_gpu: bool = False
    gpu_precision_loss_allowed: bool = True
    gpu_experimental_enable_quant: bool = True
    gpu_backend: str = ""
    use_nnapi: bool = False
    nnapi_accelerator_name: str = ""
    nnapi_execution_preference: str = ""
    nnapi_execution_priority: str = ""
    disable_nnapi_cpu: bool = True
    nnapi_allow_fp16: bool = False
    use_hexagon: bool = False
    hexagon_lib_path: str = "/data/local/tmp"
    use_coreml: bool = False
    coreml_version: int = 0
    edgetpu_library: str = "libedgetpu.so.1"
    edgetpu_device: str = ""
    external_delegate_path: str = ""
    external_delegate_options: str = ""


COMMON_FLAGS = ("name", "num_threads", "require_full_delegation")
OP_RESOLVERS = ("auto", "builtin", "builtin_ref", "builtin_without_default_delegates")


@dataclass(frozen=True)
class DelegatePlan:
    """What the runtime must do to honour a delegate config (plus the flags, for provenance)."""

    name: str
    op_resolver: str
    num_threads: int
    external_path: str | None = None
    external_options: dict[str, str] = field(default_factory=dict)
    expects_xnnpack: bool = False  # the run is only valid if XNNPACK really took nodes
    backend: str = "interpreter"  # interpreter | compiled_gpu (LiteRT CompiledModel, GPU accelerator)
    require_full_delegation: bool = False
    flags: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DelegateKind:
    flags: tuple[str, ...]
    plan: Callable[[DelegateConfig], DelegatePlan]


DELEGATES: Registry[DelegateKind] = Registry("delegate")
_CPU_CHOICES = "pick delegate=cpu|xnnpack|reference"


def parse_options(text: str) -> dict[str, str]:
    """``"k:v;k:v"`` (benchmark_model's external_delegate_options) -> dict; malformed -> ConfigError."""
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise ConfigError(
                f"delegate.external_delegate_options: {item!r} is not 'key:value' (expected 'k1:v1;k2:v2')"
            )
        options[key.strip()] = value.strip()
    return options


def _plan(cfg: DelegateConfig, op_resolver: str, **kw) -> DelegatePlan:
    if cfg.num_threads < -1 or cfg.num_threads == 0:
        raise ConfigError(f"delegate.num_threads={cfg.num_threads}: use -1 (runtime decides) or >= 1")
    flags = {k: getattr(cfg, k) for k in DELEGATES.get(cfg.name).flags}
    return DelegatePlan(
        name=cfg.name,
        op_resolver=op_resolver,
        num_threads=cfg.num_threads,
        require_full_delegation=cfg.require_full_delegation,
        flags=flags,
        **kw,
    )


def _register(name: str, *flags: str):
    def add(fn: Callable[[DelegateConfig], DelegatePlan]):
        DELEGATES.register(name)(DelegateKind(COMMON_FLAGS + flags, fn))
        return fn

    return add


@_register("cpu")
def _cpu(cfg: DelegateConfig) -> DelegatePlan:
    """LiteRT's default CPU path: builtin kernels with XNNPACK applied by default."""
    return _plan(cfg, "auto")


@_register("reference", "op_resolver")
def _reference(cfg: DelegateConfig) -> DelegatePlan:
    """The golden baseline: TFLite builtin kernels, no default delegate, one thread."""
    resolver = "builtin_without_default_delegates" if cfg.op_resolver == "auto" else cfg.op_resolver
    if resolver not in ("builtin_without_default_delegates", "builtin_ref"):
        raise ConfigError(
            f"delegate=reference: op_resolver={cfg.op_resolver!r}; use builtin_without_default_delegates "
            "or builtin_ref (the slow reference kernels)"
        )
    if cfg.require_full_delegation:
        raise ConfigError("delegate=reference delegates nothing: require_full_delegation cannot hold")
    return _plan(cfg, resolver)


@_register("xnnpack", "use_xnnpack", "xnnpack_force_fp16")
def _xnnpack(cfg: DelegateConfig) -> DelegatePlan:
    """XNNPACK explicitly: like cpu, but the run fails if XNNPACK took no node."""
    if cfg.xnnpack_force_fp16:
        raise DelegateUnavailableError(
            "xnnpack_force_fp16 is not exposed by ai-edge-litert's Interpreter (the XNNPACK delegate "
            "options are not settable from Python); set delegate.xnnpack_force_fp16=false"
        )
    return _plan(cfg, "auto", expects_xnnpack=True)


def _load_external(cfg: DelegateConfig, path: str, options: dict[str, str]) -> DelegatePlan:
    return _plan(cfg, "builtin_without_default_delegates", external_path=path, external_options=options)


@_register("external", "external_delegate_path", "external_delegate_options")
def _external(cfg: DelegateConfig) -> DelegatePlan:
    """A delegate shared library (``tflite_plugin_create_delegate``); ops it refuses run on builtin
    kernels without XNNPACK, so the coverage figures count this delegate alone."""
    path = cfg.external_delegate_path
    if not path:
        raise ConfigError("delegate=external needs delegate.external_delegate_path=/path/to/libdelegate.so")
    if not os.path.isfile(path):
        raise DelegateUnavailableError(f"external delegate library not found: {path}")
    return _load_external(cfg, os.path.abspath(path), parse_options(cfg.external_delegate_options))


@_register("edgetpu", "edgetpu_library", "edgetpu_device")
def _edgetpu(cfg: DelegateConfig) -> DelegatePlan:
    """Coral Edge TPU through libedgetpu's external-delegate entry points."""
    lib = cfg.edgetpu_library
    found = lib if os.path.isfile(lib) else ctypes.util.find_library("edgetpu")
    if not found:
        raise DelegateUnavailableError(
            f"delegate=edgetpu needs the Coral runtime library {lib} (package libedgetpu1-std) and an "
            f"Edge TPU device, and a model compiled by edgetpu_compiler; {_CPU_CHOICES}"
        )
    options = {"device": cfg.edgetpu_device} if cfg.edgetpu_device else {}
    return _load_external(cfg, found, options)


def _unavailable(message: str) -> Callable[[DelegateConfig], DelegatePlan]:
    def plan(cfg: DelegateConfig) -> DelegatePlan:
        raise DelegateUnavailableError(message.format(host=f"{platform.system()} {platform.machine()}"))

    return plan


@_register("gpu", "use_gpu", "gpu_precision_loss_allowed", "gpu_experimental_enable_quant", "gpu_backend")
def _gpu(cfg: DelegateConfig) -> DelegatePlan:
    """LiteRT's GPU accelerator (CompiledModel, WebGPU over Vulkan); ops it refuses run on the CPU
    unless require_full_delegation. gpu_precision_loss_allowed=false enforces fp32."""
    if not cfg.use_gpu:
        raise ConfigError(
            "delegate=gpu with use_gpu=false runs nothing on the GPU; pick delegate=cpu instead"
        )
    if cfg.gpu_backend not in ("", "webgpu", "vulkan"):
        raise DelegateUnavailableError(
            f"delegate.gpu_backend={cfg.gpu_backend!r}: this LiteRT build's GPU accelerator on "
            f"{platform.system()} is WebGPU over Vulkan only (use '' or webgpu)"
        )
    if not cfg.gpu_experimental_enable_quant:
        raise ConfigError(
            "delegate.gpu_experimental_enable_quant=false is not supported by the LiteRT GPU accelerator "
            "(it always runs quantized models, dequantizing weights); leave it true"
        )
    return _plan(cfg, "auto", backend="compiled_gpu")


_register(
    "nnapi",
    "use_nnapi",
    "nnapi_accelerator_name",
    "nnapi_execution_preference",
    "nnapi_execution_priority",
    "disable_nnapi_cpu",
    "nnapi_allow_fp16",
    "max_delegated_partitions",
)(
    _unavailable(
        "NNAPI is Android-only (this host: {host}): run on the device (runner=adb) or " + _CPU_CHOICES
    )
)
_register("hexagon", "use_hexagon", "hexagon_lib_path")(
    _unavailable(
        "the Hexagon delegate needs an Android device with a Hexagon 680-690 DSP and "
        "libhexagon_interface.so (this host: {host}): run on the device (runner=adb) or " + _CPU_CHOICES
    )
)
_register("coreml", "use_coreml", "coreml_version")(
    _unavailable(
        "the Core ML delegate runs only on Apple devices and is not part of the ai-edge-litert wheel "
        "(this host: {host}); build it and use delegate=external, or " + _CPU_CHOICES
    )
)
_register("npu", "min_nodes_per_partition")(
    _unavailable(
        "delegate=npu needs a vendor NPU dispatch library (ai-edge-litert-sdk-qualcomm/-mediatek/"
        "-google-tensor) and the matching device (this host: {host}); " + _CPU_CHOICES
    )
)


def plan_delegate(raw: dict, runner: str = "host") -> DelegatePlan:
    """Validate a delegate config (a plain dict from Hydra) and decide how to load it.

    ``runner=adb``: the delegate runs in benchmark_model on an Android phone (runtime/android)."""
    known = {f.name for f in dataclasses.fields(DelegateConfig)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(
            f"delegate: unknown flag(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    cfg = DelegateConfig(**raw)
    kind = DELEGATES.get(cfg.name)
    defaults = DelegateConfig()
    stray = [k for k in known - set(kind.flags) if getattr(cfg, k) != getattr(defaults, k)]
    if stray:
        raise ConfigError(
            f"delegate={cfg.name} does not read {', '.join(sorted(stray))}; "
            f"its flags: {', '.join(f for f in kind.flags if f != 'name')}"
        )
    if cfg.op_resolver not in OP_RESOLVERS:
        raise ConfigError(f"delegate.op_resolver={cfg.op_resolver!r}; valid: {', '.join(OP_RESOLVERS)}")
    if runner == "adb":
        from evalharness.runtime.android.benchmark_model import plan_on_device

        return plan_on_device(_plan(cfg, "benchmark_model", backend="adb"))
    return kind.plan(cfg)
