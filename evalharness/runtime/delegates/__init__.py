"""Delegate configs -> a load plan, with TFLite delegate-registrar flag names.

The contract of a delegate kind lives here; each kind is one module of this package
(``cpu``: cpu, reference, xnnpack; ``external``: external, edgetpu; ``gpu``; ``npu``: npu, npu_aot;
``mobile``: nnapi, hexagon, coreml), registered lazily by name. A kind declares its settings as a
dataclass beside its plan function (checked with :mod:`evalharness.core.schema`, like every plug-in)
and what it can do (:class:`DelegateKind`: a compile cache to point at, whether it offloads ops at
all, how TFLite's ``benchmark_model`` runs it on a phone). Callers ask those abilities; no code
outside this package compares a delegate's name.

This package imports no runtime and knows no runner: :func:`check_delegate` validates a config, the
kind's plan function decides whether it can run on this host and with which interpreter settings
(``runtime/runners.py`` picks host or device). A delegate that cannot run is a
:class:`DelegateUnavailableError` naming the missing piece, never a quiet CPU fallback. A flag that
the chosen delegate does not read is an error too, so a typo'd sweep never measures the default.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import platform
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from evalharness.core.errors import ConfigError, DelegateUnavailableError
from evalharness.core.registry import Registry
from evalharness.core.schema import FrozenDict, check_keys, field_names, instantiate


@dataclass
class DelegateSettings:
    """Flags every delegate reads; names mirror TFLite's delegate registrar / benchmark_model."""

    name: str = "cpu"
    num_threads: int = 1
    require_full_delegation: bool = False
    compile_cache_dir: str = ""  # '' off; a folder: compile caches per model there (runtime/compile_cache.py)


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
    flags: dict[str, Any] = field(default_factory=dict)
    compile_cache_dir: str | None = None  # delegate.compile_cache_dir (absolute), or None
    offloads: bool = True  # False: the CPU's own kernels (nothing to cover, nothing partial to warn of)
    shader_cache: bool = False  # the driver's shader cache is one of its compile caches (GPU)
    variant_dir: str | None = None  # paths.cache_dir: where derived model files (AOT-compiled) are cached


@dataclass(frozen=True)
class OnDevice:
    """How TFLite's ``benchmark_model`` runs a delegate on an Android phone (``runner=adb``).

    ``flags``: the delegate's own registrar flags from its settings (bad values -> ConfigError);
    ``applied_as``: the name benchmark_model prints in "Explicitly applied X delegate" ('' when no
    delegate is applied: the CPU kinds); ``replacing_tag``: the tag of the "Replacing N node(s) with
    delegate (TAG)" line that counts its ops ('' any but XNNPACK's, None: count none);
    ``serializable``: honours --delegate_serialize_dir; ``warning``: the device facts -> a caveat."""

    flags: Callable[[Mapping[str, Any]], list[str]]
    applied_as: str = ""
    replacing_tag: str | None = "xnnpack"
    serializable: bool = False
    warning: Callable[[Mapping[str, Any]], str | None] = lambda device: None


@dataclass(frozen=True)
class DelegateKind:
    schema: type  # a DelegateSettings subclass: the flags this delegate reads
    plan: Callable[[Any], DelegatePlan]  # its settings -> a plan for this host
    compile_cache: bool = False  # its runtime exposes a compile cache evalharness can point at
    on_device: OnDevice | None = None  # None: benchmark_model cannot run it on a phone
    runs_source_models: bool = False  # a source model (ONNX, .pt2: runtime/source_formats.py) may run on it

    @property
    def flags(self) -> list[str]:
        return field_names(self.schema)


_KIND_MODULES = {  # module of this package -> the delegates it registers when imported
    "cpu": ("cpu", "reference", "xnnpack"),
    "external": ("external", "edgetpu"),
    "gpu": ("gpu",),
    "npu": ("npu", "npu_aot"),
    "mobile": ("nnapi", "hexagon", "coreml"),
}
DELEGATES: Registry[DelegateKind] = Registry(
    "delegate",
    base=DelegateKind,
    lazy={name: f"{__name__}.{module}" for module, names in _KIND_MODULES.items() for name in names},
)
CPU_CHOICES = "pick delegate=cpu|xnnpack|reference"


def kind_of(plan: DelegatePlan) -> DelegateKind:
    return DELEGATES.get(plan.name)


def compile_cache_kinds() -> list[str]:
    """Delegates whose runtime exposes a compile cache (docs/tasks/benchmark.md: Compile caches)."""
    return [n for n in DELEGATES.names() if DELEGATES.get(n).compile_cache]


def parse_options(text: str) -> dict[str, str]:
    """``"k:v;k:v"`` (benchmark_model's external_delegate_options) as a map; malformed -> ConfigError."""
    options: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(";"))):
        key, sep, value = item.partition(":")
        if not sep or not key.strip():
            raise ConfigError(
                f"delegate.external_delegate_options: {item!r} is not 'key:value' (expected 'k1:v1;k2:v2')"
            )
        options[key.strip()] = value.strip()
    return options


def make_plan(cfg: DelegateSettings, op_resolver: str, **kw: Any) -> DelegatePlan:
    """The plan every runner starts from: thread count checked, the delegate's flags recorded."""
    if cfg.num_threads < -1 or cfg.num_threads == 0:
        raise ConfigError(f"delegate.num_threads={cfg.num_threads}: use -1 (runtime decides) or >= 1")
    if cfg.compile_cache_dir and not DELEGATES.get(cfg.name).compile_cache:
        raise ConfigError(
            f"delegate={cfg.name} has no compile cache evalharness can point at delegate.compile_cache_dir "
            f"(only {', '.join(compile_cache_kinds())}); leave delegate.compile_cache_dir empty"
        )
    return DelegatePlan(
        name=cfg.name,
        op_resolver=op_resolver,
        num_threads=cfg.num_threads,
        require_full_delegation=cfg.require_full_delegation,
        flags=FrozenDict(dataclasses.asdict(cfg)),
        compile_cache_dir=os.path.abspath(cfg.compile_cache_dir) if cfg.compile_cache_dir else None,
        **kw,
    )


PlanFunction = TypeVar("PlanFunction", bound=Callable[[Any], DelegatePlan])  # a kind's settings -> its plan


def register(
    name: str, schema: type = DelegateSettings, **abilities: Any
) -> Callable[[PlanFunction], PlanFunction]:
    """``@register("gpu", GpuSettings, compile_cache=True)`` on a kind's plan function."""

    def add(plan: PlanFunction) -> PlanFunction:
        DELEGATES.register(name)(DelegateKind(schema, plan, **abilities))
        return plan

    return add


def device_choice(key: str, value: str, valid: tuple[str, ...]) -> None:
    """A setting benchmark_model takes only from a fixed list (``''``: its default)."""
    if value not in valid:
        raise ConfigError(
            f"delegate.{key}={value!r} is not a benchmark_model value; "
            f"valid: {', '.join(v for v in valid if v)}"
        )


def unavailable(message: str) -> Callable[[DelegateSettings], DelegatePlan]:
    """A plan function for a delegate that never runs on a host (``{host}`` in ``message``)."""

    def plan(cfg: DelegateSettings) -> DelegatePlan:
        raise DelegateUnavailableError(message.format(host=f"{platform.system()} {platform.machine()}"))

    return plan


@functools.cache
def _every_flag() -> type:
    """One schema holding every flag some delegate reads, at its default (a key outside it is a typo)."""
    flags = {f.name: f.default for name in DELEGATES for f in dataclasses.fields(DELEGATES.get(name).schema)}
    return dataclasses.make_dataclass("DelegateFlags", [(k, Any, field(default=v)) for k, v in flags.items()])


def check_delegate(raw: Mapping[str, Any], key: str = "delegate") -> DelegateSettings:
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
    settings: DelegateSettings = instantiate(
        DELEGATES.get(name).schema, {k: raw[k] for k in raw if k in own}, f"delegate={name}", key
    )
    return settings
