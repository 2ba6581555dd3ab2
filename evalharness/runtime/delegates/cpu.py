"""The CPU's own kinds: LiteRT's default path (``cpu``), the golden baseline (``reference``) and
XNNPACK required (``xnnpack``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalharness.core.errors import ConfigError, DelegateUnavailableError
from evalharness.runtime.delegates import DelegatePlan, DelegateSettings, OnDevice, make_plan, register


def _bool(value: object) -> str:
    return str(value).lower()


@register("cpu", compile_cache=True, on_device=OnDevice(flags=lambda f: []), runs_source_models=True)
def _cpu(cfg: DelegateSettings) -> DelegatePlan:
    """LiteRT's default CPU path: builtin kernels with XNNPACK applied by default. With
    delegate.compile_cache_dir, LiteRT's CompiledModel on the CPU: only its options carry XNNPACK's
    weight cache (the Interpreter API has none). The one kind a source model (ONNX, .pt2) runs on:
    its own runtime's CPU kernels."""
    backend = "compiled_cpu" if cfg.compile_cache_dir else "interpreter"
    return make_plan(cfg, "auto", backend=backend, offloads=False)


@dataclass
class ReferenceSettings(DelegateSettings):
    # builtin_without_default_delegates (TFLite kernels, no XNNPACK) | builtin_ref (reference kernels)
    op_resolver: str = "auto"


def _reference_on_device(f: Mapping[str, Any]) -> list[str]:
    if f.get("op_resolver") not in ("auto", "builtin_without_default_delegates"):
        raise ConfigError(
            f"delegate=reference op_resolver={f.get('op_resolver')!r} is host-only; on the device "
            "the reference is builtin kernels without XNNPACK (op_resolver=auto)"
        )
    return ["--use_xnnpack=false"]


@register("reference", ReferenceSettings, on_device=OnDevice(_reference_on_device, replacing_tag=None))
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
    return make_plan(cfg, resolver, offloads=False)


@dataclass
class XnnpackSettings(DelegateSettings):
    use_xnnpack: bool = False
    xnnpack_force_fp16: bool = False


def _xnnpack_on_device(f: Mapping[str, Any]) -> list[str]:
    return ["--use_xnnpack=true", f"--xnnpack_force_fp16={_bool(f['xnnpack_force_fp16'])}"]


@register("xnnpack", XnnpackSettings, on_device=OnDevice(_xnnpack_on_device, "XNNPACK", "xnnpack"))
def _xnnpack(cfg: XnnpackSettings) -> DelegatePlan:
    """XNNPACK explicitly: like cpu, but the run fails if XNNPACK took no node."""
    if cfg.xnnpack_force_fp16:
        raise DelegateUnavailableError(
            "xnnpack_force_fp16 is not exposed by ai-edge-litert's Interpreter (the XNNPACK delegate "
            "options are not settable from Python); set delegate.xnnpack_force_fp16=false"
        )
    return make_plan(cfg, "auto", expects_xnnpack=True)
