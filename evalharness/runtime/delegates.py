"""Delegate configs -> a load plan, with TFLite delegate-registrar flag names.

Each delegate declares its settings as a dataclass beside its plan function (checked with
:mod:`evalharness.schema`, like every plug-in). This module imports no runtime and knows no runner:
:func:`check_delegate` validates a config, the delegate's plan function decides whether it can run
on this host and with which interpreter settings (runtime/runners.py picks host or device). A
delegate that cannot run is a :class:`DelegateUnavailableError` naming the missing piece, never a
quiet CPU fallback. A flag that the chosen delegate does not read is an error too, so a typo'd
sweep never measures the default.
"""

from __future__ import annotations

import ctypes.util
import dataclasses
import functools
import importlib.metadata
import os
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evalharness.errors import ConfigError, DelegateUnavailableError
from evalharness.registry import Registry
from evalharness.schema import FrozenDict, check_keys, field_names, instantiate


@dataclass
class DelegateSettings:
    """Flags every delegate reads; names mirror TFLite's delegate registrar / benchmark_model."""

    name: str = "cpu"
    num_threads: int = 1
    require_full_delegation: bool = False
    cache_dir: str = ""  # '' off; a folder: compile caches per model there (runtime/cache.py)


# Delegates whose runtime exposes a cache to point at delegate.cache_dir (README: Compile caches).
CACHE_DELEGATES = ("cpu", "gpu")


@dataclass(frozen=True)
class DelegatePlan:
    """What the runtime must do to honour a delegate config (plus the flags, for provenance)."""

    name: str
    op_resolver: str
    num_threads: int
    external_path: str | None = None
    external_options: dict[str, str] = field(default_factory=dict)
    expects_xnnpack: bool = False  # the run is only valid if XNNPACK really took nodes
    backend: str = "interpreter"  # the runtime/contract.py BACKENDS name: interpreter | compiled_gpu | adb
    require_full_delegation: bool = False
    flags: dict = field(default_factory=dict)
    cache_dir: str | None = None


@dataclass(frozen=True)
class DelegateKind:
    schema: type  # a DelegateSettings subclass: the flags this delegate reads
    plan: Callable[[Any], DelegatePlan]  # its settings -> a plan for this host

    @property
    def flags(self) -> list[str]:
        return field_names(self.schema)


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


def make_plan(cfg: DelegateSettings, op_resolver: str, **kw) -> DelegatePlan:
    """The plan every runner starts from: thread count checked, the delegate's flags recorded."""
    if cfg.num_threads < -1 or cfg.num_threads == 0:
        raise ConfigError(f"delegate.num_threads={cfg.num_threads}: use -1 (runtime decides) or >= 1")
    if cfg.cache_dir and cfg.name not in CACHE_DELEGATES:
        raise ConfigError(
            f"delegate={cfg.name} has no compile cache evalharness can point at delegate.cache_dir "
            f"(only {', '.join(CACHE_DELEGATES)}); leave delegate.cache_dir empty"
        )
    return DelegatePlan(
        name=cfg.name,
        op_resolver=op_resolver,
        num_threads=cfg.num_threads,
        require_full_delegation=cfg.require_full_delegation,
        flags=FrozenDict(dataclasses.asdict(cfg)),
        cache_dir=os.path.abspath(cfg.cache_dir) if cfg.cache_dir else None,
        **kw,
    )


def _register(name: str, schema: type = DelegateSettings):
    def add(plan: Callable[[Any], DelegatePlan]):
        DELEGATES.register(name)(DelegateKind(schema, plan))
        return plan

    return add


@_register("cpu")
def _cpu(cfg: DelegateSettings) -> DelegatePlan:
    """LiteRT's default CPU path: builtin kernels with XNNPACK applied by default. With
    delegate.cache_dir, LiteRT's CompiledModel on the CPU: only its options carry XNNPACK's weight
    cache (the Interpreter API has none)."""
    return make_plan(cfg, "auto", backend="compiled_cpu" if cfg.cache_dir else "interpreter")


@dataclass
class ReferenceSettings(DelegateSettings):
    # builtin_without_default_delegates (TFLite kernels, no XNNPACK) | builtin_ref (reference kernels)
    op_resolver: str = "auto"


@_register("reference", ReferenceSettings)
def _reference(cfg: ReferenceSettings) -> DelegatePlan:
    """The golden baseline: TFLite builtin kernels, no default delegate, one thread."""
    resolver = "builtin_without_default_delegates" if cfg.op_resolver == "auto" else cfg.op_resolver
    if resolver not in ("builtin_without_default_delegates", "builtin_ref"):
        raise ConfigError(
            f"delegate=reference: op_resolver={cfg.op_resolver!r}; use builtin_without_default_delegates "
            "or builtin_ref (the slow reference kernels)"
        )
    if cfg.require_full_delegation:
        raise ConfigError("delegate=reference delegates nothing: require_full_delegation cannot hold")
    return make_plan(cfg, resolver)


@dataclass
class XnnpackSettings(DelegateSettings):
    use_xnnpack: bool = False
    xnnpack_force_fp16: bool = False


@_register("xnnpack", XnnpackSettings)
def _xnnpack(cfg: XnnpackSettings) -> DelegatePlan:
    """XNNPACK explicitly: like cpu, but the run fails if XNNPACK took no node."""
    if cfg.xnnpack_force_fp16:
        raise DelegateUnavailableError(
            "xnnpack_force_fp16 is not exposed by ai-edge-litert's Interpreter (the XNNPACK delegate "
            "options are not settable from Python); set delegate.xnnpack_force_fp16=false"
        )
    return make_plan(cfg, "auto", expects_xnnpack=True)


def _load_external(cfg: DelegateSettings, path: str, options: dict[str, str]) -> DelegatePlan:
    return make_plan(cfg, "builtin_without_default_delegates", external_path=path, external_options=options)


@dataclass
class ExternalSettings(DelegateSettings):
    external_delegate_path: str = ""
    external_delegate_options: str = ""  # "k1:v1;k2:v2"


@_register("external", ExternalSettings)
def _external(cfg: ExternalSettings) -> DelegatePlan:
    """A delegate shared library (``tflite_plugin_create_delegate``); ops it refuses run on builtin
    kernels without XNNPACK, so the coverage figures count this delegate alone."""
    path = cfg.external_delegate_path
    if not path:
        raise ConfigError("delegate=external needs delegate.external_delegate_path=/path/to/libdelegate.so")
    if not os.path.isfile(path):
        raise DelegateUnavailableError(f"external delegate library not found: {path}")
    return _load_external(cfg, os.path.abspath(path), parse_options(cfg.external_delegate_options))


@dataclass
class EdgeTpuSettings(DelegateSettings):
    edgetpu_library: str = "libedgetpu.so.1"
    edgetpu_device: str = ""


@_register("edgetpu", EdgeTpuSettings)
def _edgetpu(cfg: EdgeTpuSettings) -> DelegatePlan:
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


@dataclass
class GpuSettings(DelegateSettings):
    use_gpu: bool = False
    gpu_precision_loss_allowed: bool = True
    gpu_experimental_enable_quant: bool = True
    gpu_backend: str = ""


@_register("gpu", GpuSettings)
def _gpu(cfg: GpuSettings) -> DelegatePlan:
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
    return make_plan(cfg, "auto", backend="compiled_gpu")


def _unavailable(message: str) -> Callable[[DelegateSettings], DelegatePlan]:
    def plan(cfg: DelegateSettings) -> DelegatePlan:
        raise DelegateUnavailableError(message.format(host=f"{platform.system()} {platform.machine()}"))

    return plan


@dataclass
class NnapiSettings(DelegateSettings):
    use_nnapi: bool = False
    nnapi_accelerator_name: str = ""
    nnapi_execution_preference: str = ""
    nnapi_execution_priority: str = ""
    disable_nnapi_cpu: bool = True
    nnapi_allow_fp16: bool = False
    max_delegated_partitions: int = 0  # 0 = no limit


_register("nnapi", NnapiSettings)(
    _unavailable(
        "NNAPI is Android-only (this host: {host}): run on the device (runner=adb) or " + _CPU_CHOICES
    )
)


@dataclass
class HexagonSettings(DelegateSettings):
    use_hexagon: bool = False
    hexagon_lib_path: str = "/data/local/tmp"


_register("hexagon", HexagonSettings)(
    _unavailable(
        "the Hexagon delegate needs an Android device with a Hexagon 680-690 DSP and "
        "libhexagon_interface.so (this host: {host}): run on the device (runner=adb) or " + _CPU_CHOICES
    )
)


@dataclass
class CoremlSettings(DelegateSettings):
    use_coreml: bool = False
    coreml_version: int = 0


_register("coreml", CoremlSettings)(
    _unavailable(
        "the Core ML delegate runs only on Apple devices and is not part of the ai-edge-litert wheel "
        "(this host: {host}); build it and use delegate=external, or " + _CPU_CHOICES
    )
)


# The OpenVINO release ai-edge-litert's Intel plug-ins were built against (ai-edge-litert-sdk-intel
# pins it); pyproject's [openvino] extra pins the same one.
OPENVINO_BUILT_AGAINST = "2026.3.1"
NPU_VENDORS_ELSEWHERE = {
    "qualcomm": "Qualcomm's QAIRT SDK (ai-edge-litert-sdk-qualcomm downloads it at install time), "
    "libLiteRtDispatch_Qualcomm.so and a Snapdragon HTP device",
    "mediatek": "MediaTek's NeuroPilot SDK (ai-edge-litert-sdk-mediatek downloads it at install time), "
    "the MediaTek dispatch library and a Dimensity APU device",
    "google_tensor": "Google's Tensor compiler SDK, the Google Tensor dispatch library and a Pixel "
    "(Tensor G-series) device",
    "samsung": "Samsung's Exynos AI Studio SDK, the Samsung dispatch library and an Exynos NPU device",
}


@dataclass
class NpuSettings(DelegateSettings):
    npu_vendor: str = "intel_openvino"
    device: str = "cpu"  # OpenVINO graph backend: cpu | gpu | npu (cpu: the NPU code path on this host)
    performance_mode: str = ""  # '' (plug-in default) | latency | throughput | cumulative_throughput
    openvino_config: str = ""  # extra OpenVINO properties, "KEY:value;KEY:value"
    allow_cpu_fallback: bool = False  # a plug-in that does not apply: coverage 0 + warning, not an error
    npu_compile: str = "jit"  # jit (compiled when loaded) | aot (ai_edge_litert.aot, then run)


def _check_openvino() -> str:
    """The installed openvino wheel's version, which must be the one the plug-ins were built against."""
    try:
        version = importlib.metadata.version("openvino")
    except importlib.metadata.PackageNotFoundError:
        raise DelegateUnavailableError(
            "delegate=npu npu_vendor=intel_openvino needs OpenVINO: pip install 'evalharness[openvino]'"
        ) from None
    if version.split("-")[0] != OPENVINO_BUILT_AGAINST:
        raise DelegateUnavailableError(
            f"delegate=npu: openvino {version} is installed but ai-edge-litert's Intel plug-ins were built "
            f"against {OPENVINO_BUILT_AGAINST}: pip install 'evalharness[openvino]' "
            f"(openvino=={OPENVINO_BUILT_AGAINST})"
        )
    return version


@_register("npu", NpuSettings)
def _npu(cfg: NpuSettings) -> DelegatePlan:
    """LiteRT's NPU accelerator: a vendor compiler plug-in partitions and compiles the graph, the
    vendor dispatch library runs it. Intel OpenVINO runs on this host (its CPU device by default)."""
    if cfg.npu_vendor in NPU_VENDORS_ELSEWHERE:
        raise DelegateUnavailableError(
            f"delegate=npu npu_vendor={cfg.npu_vendor}: ai-edge-litert ships its compiler plug-in only; "
            f"running it needs {NPU_VENDORS_ELSEWHERE[cfg.npu_vendor]} (this host: "
            f"{platform.system()} {platform.machine()}); use npu_vendor=intel_openvino or {_CPU_CHOICES}"
        )
    if cfg.npu_vendor != "intel_openvino":
        raise ConfigError(
            f"delegate.npu_vendor={cfg.npu_vendor!r}; "
            f"valid: intel_openvino, {', '.join(NPU_VENDORS_ELSEWHERE)}"
        )
    choices = {
        "device": ("cpu", "gpu", "npu"),
        "npu_compile": ("jit", "aot"),
        "performance_mode": ("", "latency", "throughput", "cumulative_throughput"),
    }
    for key, valid in choices.items():
        if getattr(cfg, key) not in valid:
            raise ConfigError(f"delegate.{key}={getattr(cfg, key)!r}; valid: {', '.join(map(repr, valid))}")
    if cfg.require_full_delegation and cfg.allow_cpu_fallback:
        raise ConfigError("delegate=npu: require_full_delegation=true and allow_cpu_fallback=true contradict")
    parse_options(cfg.openvino_config)  # malformed -> ConfigError now, not at load
    _check_openvino()
    return make_plan(cfg, "auto", backend="compiled_npu")


@_register("npu_aot", NpuSettings)
def _npu_aot(cfg: NpuSettings) -> DelegatePlan:
    """``npu`` compiled ahead of time (cached): its own name, so ``-m delegate=cpu,npu,npu_aot``
    sweeps both ways of compiling."""
    if cfg.npu_compile != "aot":
        raise ConfigError(
            f"delegate=npu_aot compiles ahead of time; for npu_compile={cfg.npu_compile} use delegate=npu"
        )
    return _npu(cfg)


@functools.cache
def _every_flag() -> type:
    """One schema holding every flag some delegate reads, at its default (a key outside it is a typo)."""
    flags = {f.name: f.default for name in DELEGATES for f in dataclasses.fields(DELEGATES.get(name).schema)}
    return dataclasses.make_dataclass("DelegateFlags", [(k, Any, field(default=v)) for k, v in flags.items()])


def check_delegate(raw: Mapping) -> DelegateSettings:
    """A delegate config (a plain dict from Hydra) checked against its delegate's schema.

    A flag that only another delegate reads is tolerated at its default and refused otherwise."""
    every = _every_flag()
    check_keys(every, raw, "delegate", what="flag")
    name = raw.get("name", DelegateSettings.name)
    own = DELEGATES.get(name).flags
    defaults = {f.name: f.default for f in dataclasses.fields(every)}
    stray = sorted(k for k in raw if k not in own and raw[k] != defaults[k])
    if stray:
        raise ConfigError(
            f"delegate={name} does not read {', '.join(stray)}; "
            f"its flags: {', '.join(f for f in own if f != 'name')}"
        )
    return instantiate(DELEGATES.get(name).schema, {k: raw[k] for k in raw if k in own}, f"delegate={name}")
