"""Delegates of phones and Apple devices: ``nnapi`` and ``hexagon`` run on an Android phone through
benchmark_model (``runner=adb``) and nowhere on a host; ``coreml`` is not in the LiteRT wheel."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalharness.runtime.delegates import (
    CPU_CHOICES,
    DelegateSettings,
    OnDevice,
    device_choice,
    register,
    unavailable,
)

NNAPI_PREFERENCES = ("", "fast_single_answer", "sustained_speed", "low_power", "undefined")
NNAPI_PRIORITIES = ("", "default", "low", "medium", "high")
NNAPI_DEPRECATED_FROM_SDK = 35  # Android 15


@dataclass
class NnapiSettings(DelegateSettings):
    use_nnapi: bool = False
    nnapi_accelerator_name: str = ""
    nnapi_execution_preference: str = ""
    nnapi_execution_priority: str = ""
    disable_nnapi_cpu: bool = True
    nnapi_allow_fp16: bool = False
    max_delegated_partitions: int = 0  # 0 = no limit


def _nnapi_flags(f: Mapping[str, Any]) -> list[str]:
    device_choice("nnapi_execution_preference", f["nnapi_execution_preference"], NNAPI_PREFERENCES)
    device_choice("nnapi_execution_priority", f["nnapi_execution_priority"], NNAPI_PRIORITIES)
    out = ["--use_nnapi=true"]
    for key in ("nnapi_accelerator_name", "nnapi_execution_preference", "nnapi_execution_priority"):
        out += [f"--{key}={f[key]}"] if f[key] else []
    out += [
        f"--disable_nnapi_cpu={str(f['disable_nnapi_cpu']).lower()}",
        f"--nnapi_allow_fp16={str(f['nnapi_allow_fp16']).lower()}",
    ]
    if f["max_delegated_partitions"]:
        out.append(f"--max_delegated_partitions={f['max_delegated_partitions']}")
    return out


def _nnapi_warning(device: Mapping[str, Any]) -> str | None:
    sdk = int(device.get("sdk") or 0)
    if sdk >= NNAPI_DEPRECATED_FROM_SDK:
        return f"NNAPI is deprecated from Android 15 (this device: SDK {sdk}); results may not last"
    return None


register("nnapi", NnapiSettings, on_device=OnDevice(_nnapi_flags, "NNAPI", "nnapi", True, _nnapi_warning))(
    unavailable("NNAPI is Android-only (this host: {host}): run on the device (runner=adb) or " + CPU_CHOICES)
)


@dataclass
class HexagonSettings(DelegateSettings):
    use_hexagon: bool = False
    hexagon_lib_path: str = "/data/local/tmp"


def _hexagon_flags(f: Mapping[str, Any]) -> list[str]:
    return ["--use_hexagon=true", f"--hexagon_lib_path={f['hexagon_lib_path']}"]


def _hexagon_warning(device: Mapping[str, Any]) -> str:
    return (
        f"the Hexagon delegate supports only Hexagon 680-690 DSPs (this SoC: {device.get('soc_model')} / "
        f"{device.get('board_platform')})"
    )


_HEXAGON_ON_DEVICE = OnDevice(_hexagon_flags, "Hexagon", "hexagon", False, _hexagon_warning)
register("hexagon", HexagonSettings, on_device=_HEXAGON_ON_DEVICE)(
    unavailable(
        "the Hexagon delegate needs an Android device with a Hexagon 680-690 DSP and "
        "libhexagon_interface.so (this host: {host}): run on the device (runner=adb) or " + CPU_CHOICES
    )
)


@dataclass
class CoremlSettings(DelegateSettings):
    use_coreml: bool = False
    coreml_version: int = 0


register("coreml", CoremlSettings)(
    unavailable(
        "the Core ML delegate runs only on Apple devices and is not part of the ai-edge-litert wheel "
        "(this host: {host}); build it and use delegate=external, or " + CPU_CHOICES
    )
)
