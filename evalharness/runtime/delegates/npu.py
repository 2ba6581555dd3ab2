"""LiteRT's NPU accelerator (``npu``, and ``npu_aot`` compiled ahead of time): a vendor compiler
plug-in partitions and compiles the graph, the vendor dispatch library runs it. Intel OpenVINO runs
on a host; the other vendors need their SDK and device."""

from __future__ import annotations

import importlib.metadata
import platform
from dataclasses import dataclass

from evalharness.core.errors import ConfigError, DelegateUnavailableError
from evalharness.runtime.delegates import (
    CPU_CHOICES,
    DelegatePlan,
    DelegateSettings,
    make_plan,
    parse_options,
    register,
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


@register("npu", NpuSettings)
def _npu(cfg: NpuSettings) -> DelegatePlan:
    """LiteRT's NPU accelerator: a vendor compiler plug-in partitions and compiles the graph, the
    vendor dispatch library runs it. Intel OpenVINO runs on this host (its CPU device by default)."""
    if cfg.npu_vendor in NPU_VENDORS_ELSEWHERE:
        raise DelegateUnavailableError(
            f"delegate=npu npu_vendor={cfg.npu_vendor}: ai-edge-litert ships its compiler plug-in only; "
            f"running it needs {NPU_VENDORS_ELSEWHERE[cfg.npu_vendor]} (this host: "
            f"{platform.system()} {platform.machine()}); use npu_vendor=intel_openvino or {CPU_CHOICES}"
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


@register("npu_aot", NpuSettings)
def _npu_aot(cfg: NpuSettings) -> DelegatePlan:
    """``npu`` compiled ahead of time (cached): its own name, so ``-m delegate=cpu,npu,npu_aot``
    sweeps both ways of compiling."""
    if cfg.npu_compile != "aot":
        raise ConfigError(
            f"delegate=npu_aot compiles ahead of time; for npu_compile={cfg.npu_compile} use delegate=npu"
        )
    return _npu(cfg)
