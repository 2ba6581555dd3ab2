"""LiteRT's GPU accelerator (``gpu``): CompiledModel, WebGPU over Vulkan on a host; TFLite's GPU
delegate (OpenCL or OpenGL) through benchmark_model on a phone."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalharness.core.errors import ConfigError, DelegateUnavailableError
from evalharness.runtime.delegates import (
    DelegatePlan,
    DelegateSettings,
    OnDevice,
    device_choice,
    make_plan,
    register,
)

ON_DEVICE_BACKENDS = ("", "cl", "gl")


@dataclass
class GpuSettings(DelegateSettings):
    use_gpu: bool = False
    gpu_precision_loss_allowed: bool = True
    gpu_experimental_enable_quant: bool = True
    gpu_backend: str = ""


def _on_device(f: Mapping[str, Any]) -> list[str]:
    device_choice("gpu_backend", f["gpu_backend"], ON_DEVICE_BACKENDS)
    out = [
        "--use_gpu=true",
        f"--gpu_precision_loss_allowed={str(f['gpu_precision_loss_allowed']).lower()}",
        f"--gpu_experimental_enable_quant={str(f['gpu_experimental_enable_quant']).lower()}",
    ]
    return out + ([f"--gpu_backend={f['gpu_backend']}"] if f["gpu_backend"] else [])


@register("gpu", GpuSettings, compile_cache=True, on_device=OnDevice(_on_device, "GPU", "gpu", True))
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
    return make_plan(cfg, "auto", backend="compiled_gpu", shader_cache=True)
