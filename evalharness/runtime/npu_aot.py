"""``delegate.npu_compile=aot``: compile ahead of time with ``ai_edge_litert.aot``, cached.

The compiled model (the .tflite with the vendor's bytecode inside) is cached under
``<paths.cache_dir>/npu/<key>/`` like quantization variants (:mod:`evalharness.core.variant_cache`):
the key hashes the source model's sha256, the vendor, the plug-in options, the compiler plug-in's
sha256 and the openvino and ai-edge-litert versions, so a sweep compiles once and a new plug-in or
OpenVINO rebuilds. A cached file whose sha256 no longer matches its record is rebuilt.

AOT targets an Intel SoC (``LNL``: Lunar Lake's NPU4000; the graph backend decides the device the
bytecode runs on, so ``device=cpu`` compiles here). Qualcomm's and MediaTek's AOT back-ends need the
SDKs their ``ai-edge-litert-sdk-*`` packages download at install time; they are not offered.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from evalharness.core.checksum import sha256_file
from evalharness.core.errors import DelegateUnavailableError
from evalharness.core.variant_cache import cached_model

AOT_SOC = "LNL"


def _plugin_flags(flags: Mapping[str, Any]) -> dict[str, str]:
    """The apply_plugin tool's ``intel_openvino_*`` flags for these delegate settings."""
    from evalharness.runtime.delegates import parse_options

    out = {"intel_openvino_graph_backends": flags["device"]}
    if flags["performance_mode"]:
        out["intel_openvino_performance_mode"] = flags["performance_mode"]
    config = parse_options(flags["openvino_config"])
    if config:
        out["intel_openvino_configs_map"] = ",".join(f"{k}={v}" for k, v in config.items())
    return out


def _compile(model_path: str, flags: Mapping[str, Any], out_dir: str) -> bytes:
    import openvino  # noqa: F401 - puts libopenvino where the plug-in's loader finds it
    from ai_edge_litert.aot import aot_compile
    from ai_edge_litert.aot.vendors.intel_openvino import target

    result = aot_compile.aot_compile(
        model_path,
        output_dir=out_dir,
        target=target.Target(target.SocModel(AOT_SOC)),
        keep_going=True,
        **_plugin_flags(flags),
    )
    if result.failed_backends or not result.models_with_backend:
        reason = result.failed_backends[0][1] if result.failed_backends else "no compiled model"
        detail = reason
        if "See " in reason:  # the tool's log file: its first ERROR line says what failed
            log_path = reason.split("See ", 1)[1].split(" for details", 1)[0]
            if os.path.isfile(log_path):
                with open(log_path, encoding="utf-8", errors="replace") as f:
                    errors = [line.strip() for line in f if "ERROR" in line or "Exception" in line]
                detail = errors[0] if errors else reason
        raise DelegateUnavailableError(
            f"delegate=npu npu_compile=aot: ai_edge_litert.aot could not compile "
            f"{os.path.basename(model_path)} for IntelOpenVINO_{AOT_SOC} device={flags['device']}: {detail}"
        )
    _, model = result.models_with_backend[0]
    if not model.in_memory:
        model.load()
    compiled: bytes = model.model_bytes  # ai_edge_litert.aot's model (untyped)
    return compiled


def aot_compiled(
    model_path: str,
    flags: Mapping[str, Any],
    plugin_sha256: str | None,
    openvino_version: str,
    cache_dir: str,
) -> dict[str, Any]:
    """Path of the AOT-compiled model under ``cache_dir`` (built or reused) and its cache record."""
    import importlib.metadata

    key = {
        "source_sha256": sha256_file(model_path),
        "vendor": flags["npu_vendor"],
        "target": AOT_SOC,
        "options": _plugin_flags(flags),
        "compiler_plugin_sha256": plugin_sha256,
        "openvino": openvino_version,
        "ai_edge_litert": importlib.metadata.version("ai-edge-litert"),
    }

    def build(folder: str) -> tuple[bytes, dict[str, Any]]:
        data = _compile(model_path, flags, folder)
        for name in os.listdir(folder):  # the tool's own output file: the cache writes ours atomically
            if name.endswith(".tflite") and name != "model.tflite":
                os.remove(os.path.join(folder, name))
        return data, {}

    return cached_model(cache_dir, "npu", key, build, record_name="compiled.json")


def compiled_graph(path: str) -> tuple[int, dict[str, int]]:
    """(dispatch partitions, ops left outside them by type) of an AOT-compiled model's graph."""
    import collections

    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(
        model_path=path, experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    )  # not allocated: DISPATCH_OP resolves only through the dispatch delegate
    ops = collections.Counter(o["op_name"] for o in interpreter._get_ops_details())
    return ops.pop("DISPATCH_OP", 0), dict(sorted(ops.items()))
