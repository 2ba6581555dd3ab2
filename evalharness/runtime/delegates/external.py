"""Delegates loaded from a shared library through TFLite's external-delegate entry points: any
library (``external``) and Coral's Edge TPU (``edgetpu``)."""

from __future__ import annotations

import ctypes.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalharness.core.errors import ConfigError, DelegateUnavailableError
from evalharness.runtime.delegates import (
    CPU_CHOICES,
    DelegatePlan,
    DelegateSettings,
    OnDevice,
    make_plan,
    parse_options,
    register,
)


def _load_external(cfg: DelegateSettings, path: str, options: dict[str, str]) -> DelegatePlan:
    return make_plan(cfg, "builtin_without_default_delegates", external_path=path, external_options=options)


@dataclass
class ExternalSettings(DelegateSettings):
    external_delegate_path: str = ""
    external_delegate_options: str = ""  # "k1:v1;k2:v2"


def _external_on_device(f: Mapping[str, Any]) -> list[str]:
    path = f["external_delegate_path"]
    if not path.startswith("/"):
        raise ConfigError(
            "delegate=external with runner=adb: external_delegate_path must be the library's path "
            f"ON THE PHONE (absolute, e.g. /data/local/tmp/libdelegate.so), not {path!r}"
        )
    out = [f"--external_delegate_path={path}"]
    if f["external_delegate_options"]:
        out.append(f"--external_delegate_options={f['external_delegate_options']}")
    return out


@register("external", ExternalSettings, on_device=OnDevice(_external_on_device, "External", ""))
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


@register("edgetpu", EdgeTpuSettings)
def _edgetpu(cfg: EdgeTpuSettings) -> DelegatePlan:
    """Coral Edge TPU through libedgetpu's external-delegate entry points."""
    lib = cfg.edgetpu_library
    found = lib if os.path.isfile(lib) else ctypes.util.find_library("edgetpu")
    if not found:
        raise DelegateUnavailableError(
            f"delegate=edgetpu needs the Coral runtime library {lib} (package libedgetpu1-std) and an "
            f"Edge TPU device, and a model compiled by edgetpu_compiler; {CPU_CHOICES}"
        )
    options = {"device": cfg.edgetpu_device} if cfg.edgetpu_device else {}
    return _load_external(cfg, found, options)
