"""LiteRT's NPU accelerator backend: a vendor compiler plug-in + dispatch library (Intel OpenVINO).

The graph goes through LiteRT's real NPU path: the partitioner hands ops to the vendor compiler
plug-in, which compiles each partition to vendor bytecode; the dispatch delegate runs that bytecode
on the device named in its header. With ``device=cpu`` the device is OpenVINO's CPU plugin (the
NPU code path on a CPU backend, as lavapipe is for the GPU path).

What ran is read from the compiler's and dispatcher's own log lines, never from
``is_fully_accelerated()`` alone: when the plug-in fails to apply, LiteRT quietly runs the whole
model on XNNPACK and still reports it fully accelerated (ai_edge_litert's benchmark tool prints
"Fully accelerated: True" then). That is an error here unless ``allow_cpu_fallback`` (coverage 0).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import time
from collections.abc import Mapping
from typing import Any, TypedDict

import numpy as np

from evalharness.core.errors import DelegateUnavailableError, EvalHarnessError
from evalharness.core.paths import default_cache_dir
from evalharness.runtime.compiled import CompiledBuffersModel
from evalharness.runtime.contract import BACKENDS, Coverage
from evalharness.runtime.delegates import DelegatePlan, parse_options
from evalharness.runtime.litert import captured_native_stderr, check_flatbuffer

log = logging.getLogger(__name__)

_PARTITIONED = re.compile(
    r"Partitioned subgraph<\d+>, selected (\d+) ops, from a total of (\d+) ops\. "
    r"resulted in (\d+) partitions"
)
_APPLIED = re.compile(r"(\d+) compiler plugins were applied successfully(?:: (.*))?$")
_DISPATCH_DEVICE = re.compile(r"Dispatch: using device '([^']+)'")
_COMPILE_DEVICE = re.compile(r"Using Intel OpenVINO device: (\S+)")
_FAILURE_MARKERS = ("Check '", "Exception from", "Custom allocation", "Cannot load library", "ERROR:")
_NPU_HINT = (
    "device=npu needs an Intel Core Ultra NPU, its Linux driver (intel-npu-driver) and the NPU compiler "
    "that ai-edge-litert-sdk-intel fetches at install time; on this host use device=cpu"
)


def vendor_dirs(vendor: str) -> tuple[str, str]:
    """(compiler plug-in dir, dispatch library dir) of ``vendor`` inside the installed ai_edge_litert."""
    import ai_edge_litert

    base = os.path.join(os.path.dirname(ai_edge_litert.__file__), "vendors", vendor)
    return os.path.join(base, "compiler"), os.path.join(base, "dispatch")


@functools.cache
def _sha256_of_dir(path: str) -> str | None:
    libs = sorted(f for f in os.listdir(path) if f.endswith(".so")) if os.path.isdir(path) else []
    if not libs:
        return None
    digest = hashlib.sha256()
    for name in libs:
        with open(os.path.join(path, name), "rb") as f:
            digest.update(f.read())
    return digest.hexdigest()


class NpuLog(TypedDict):
    """What LiteRT and the compiler plug-in logged of an NPU load (``None`` where they said nothing)."""

    ops_selected: int | None
    ops_total: int | None
    partitions: int | None
    plugins_applied: int | None
    plugin: str | None
    compile_device: str | None
    dispatch_device: str | None
    failure: str | None  # the first native error line


def parse_npu_log(lines: list[str]) -> NpuLog:
    """Partition counts, whether a plug-in applied and the devices, as LiteRT and the plug-in logged
    them (``None`` where they said nothing); ``failure``: the first native error line."""
    info: NpuLog = {
        "ops_selected": None,
        "ops_total": None,
        "partitions": None,
        "plugins_applied": None,
        "plugin": None,
        "compile_device": None,
        "dispatch_device": None,
        "failure": None,
    }
    for line in lines:
        if m := _PARTITIONED.search(line):
            selected, total, partitions = (int(value) for value in m.groups())
            info["ops_selected"] = (info["ops_selected"] or 0) + selected
            info["ops_total"] = (info["ops_total"] or 0) + total
            info["partitions"] = (info["partitions"] or 0) + partitions
        elif m := _APPLIED.search(line):
            info["plugins_applied"], info["plugin"] = int(m.group(1)), m.group(2)
        elif m := _DISPATCH_DEVICE.search(line):
            info["dispatch_device"] = m.group(1)
        elif m := _COMPILE_DEVICE.search(line):
            info["compile_device"] = info["compile_device"] or m.group(1)
        if info["failure"] is None and any(k in line for k in _FAILURE_MARKERS) and "Plugin errs" not in line:
            info["failure"] = line.split("] ", 1)[-1].removeprefix("ERROR:").strip()
    return info


def _took(npu: Mapping[str, Any]) -> str:
    if npu["ops_selected"] is None:
        return ""
    return f" (the plug-in took {npu['ops_selected']} of {npu['ops_total']} ops)"


class OpenVinoInfo(TypedDict):
    """The openvino wheel and the device as it names it (``provenance.delegate.npu.openvino``)."""

    version: str
    device: str
    device_name: str | None
    default_inference_precision: str | None
    available: list[str]


def openvino_info(device: str) -> OpenVinoInfo:
    """The openvino wheel's version and the device as OpenVINO names it (imported here: it also puts
    libopenvino where the Intel plug-ins' loader finds it)."""
    import openvino

    core = openvino.Core()
    upper = device.upper()
    available = list(core.available_devices)
    found = upper in available
    return {
        "version": openvino.__version__,
        "device": upper,
        "device_name": core.get_property(upper, "FULL_DEVICE_NAME") if found else None,
        # the dispatch library imports the compiled blob with the device's defaults: on a CPU with
        # AVX512_BF16 or AMX that is bf16, whatever INFERENCE_PRECISION_HINT the compile was given
        "default_inference_precision": (
            core.get_property(upper, "INFERENCE_PRECISION_HINT").get_type_name() if found else None
        ),
        "available": available,
    }


@BACKENDS.register("compiled_npu")
class CompiledNpuModel(CompiledBuffersModel):
    """A model JIT-compiled by a vendor compiler plug-in and run by its dispatch library."""

    accelerator = "LiteRT's NPU accelerator"
    placement = ("NPU partition", "CPU (XNNPACK)")

    def __init__(self, model_path: str, plan: DelegatePlan) -> None:
        check_flatbuffer(model_path)
        self.plan = plan
        flags = plan.flags
        self.openvino = openvino_info(flags["device"])
        from ai_edge_litert.environment import Environment
        from ai_edge_litert.options import (
            IntelOpenVinoGraphBackend,
            IntelOpenVinoOptions,
            IntelOpenVinoPerformanceMode,
        )

        compiler_dir, dispatch_dir = vendor_dirs(flags["npu_vendor"])
        env = Environment.create(compiler_plugin_path=compiler_dir, dispatch_library_path=dispatch_dir)
        mode = flags["performance_mode"]
        options = self._options(
            "NPU",
            intel_openvino_options=IntelOpenVinoOptions(
                graph_backend=IntelOpenVinoGraphBackend[flags["device"].upper()],
                performance_mode=IntelOpenVinoPerformanceMode[mode.upper()] if mode else None,
                configs_map=parse_options(flags["openvino_config"]),
            ),
        )
        self.libraries = {
            "compiler_plugin_sha256": _sha256_of_dir(compiler_dir),
            "dispatch_library_sha256": _sha256_of_dir(dispatch_dir),
        }
        self.aot: dict[str, Any] | None = None  # the ahead-of-time build's record (npu_compile=aot)
        if flags["npu_compile"] == "aot":
            self._load_aot(model_path, options, env)
        else:
            start = time.perf_counter()
            self._compile(model_path, options, environment=env)
            self.compile_ms = round((time.perf_counter() - start) * 1000, 3)
            self.npu = parse_npu_log(self.native_log)
        self._environment = env
        self.coverage = self._coverage(model_path, sum(self.ops_by_type.values()))
        self._probe(model_path)

    def _load_aot(self, model_path: str, options: Any, env: Any) -> None:
        """Compile ahead of time (cached), then load the compiled model: the plug-in does not run
        at load, so the partition counts come from the compiled graph (DISPATCH_OP nodes)."""
        from evalharness.runtime.npu_aot import AOT_SOC, aot_compiled, compiled_graph

        self.aot = aot_compiled(
            model_path,
            self.plan.flags,
            self.libraries["compiler_plugin_sha256"],
            self.openvino["version"],
            self.plan.variant_dir or default_cache_dir(),
        )
        self.compile_ms = round(self.aot["build_s"] * 1000, 3) if self.aot["cache"] == "built" else 0.0
        self._compile(self.aot["path"], options, environment=env, source_path=model_path)
        partitions, left = compiled_graph(self.aot["path"])
        total = sum(self.ops_by_type.values())
        self.npu = {
            **parse_npu_log(self.native_log),
            "ops_selected": total - sum(left.values()),
            "ops_total": total,
            "partitions": partitions,
            "plugins_applied": int(partitions > 0),
            "plugin": f"ai_edge_litert.aot IntelOpenVINO_{AOT_SOC}",
            "compile_device": self.plan.flags["device"].upper(),
        }

    def _why(self, model_path: str) -> str:
        """What stopped the plug-in, in OpenVINO's / LiteRT's own first line, plus the fix if known."""
        if self.plan.flags["device"] == "npu" and "NPU" not in self.openvino["available"]:
            available = ", ".join(self.openvino["available"]) or "none"
            return f"OpenVINO has no NPU device on this host (available: {available}); {_NPU_HINT}"
        return parse_npu_log(self.native_log)["failure"] or "see the native log in the console"

    def _load_error(self, model_path: str, exc: RuntimeError) -> EvalHarnessError:
        text = " ".join(str(exc).split())
        npu = parse_npu_log(self.native_log)
        took = _took(npu)
        if "not accelerated" in text and self.plan.require_full_delegation:
            return DelegateUnavailableError(
                f"delegate=npu with require_full_delegation=true: the plug-in took {npu['ops_selected']} "
                f"of {npu['ops_total']} ops of {os.path.basename(model_path)}"
            )
        return DelegateUnavailableError(
            f"delegate=npu could not compile/allocate {os.path.basename(model_path)}{took}: "
            f"{self._why(model_path)} [{text[:160]}]"
        )

    def _coverage(self, model_path: str, ops_total: int) -> Coverage:
        npu = self.npu
        applied = bool(npu["plugins_applied"])
        if not applied and not self.plan.flags["allow_cpu_fallback"]:
            raise DelegateUnavailableError(
                f"delegate=npu: the {self.plan.flags['npu_vendor']} compiler plug-in did not apply to "
                f"{os.path.basename(model_path)}{_took(npu)}, so every op would run on the CPU (XNNPACK): "
                f"{self._why(model_path)}; delegate.allow_cpu_fallback=true records it as coverage 0"
            )
        if not applied:
            log.warning(
                "delegate=npu: the compiler plug-in did not apply (%s); the whole model runs on "
                "the CPU (XNNPACK) and is recorded as coverage 0",
                self._why(model_path),
            )
        delegated = npu["ops_selected"] if applied else 0
        if applied and npu["ops_total"] != ops_total:
            delegated = None  # the partitioner counted a different graph: unknown, not a guess
        if self.plan.require_full_delegation and delegated != ops_total:
            raise DelegateUnavailableError(
                f"delegate=npu with require_full_delegation=true: the plug-in took {delegated} "
                f"of {ops_total} ops of {os.path.basename(model_path)}"
            )
        full = applied and delegated == ops_total and npu["dispatch_device"] is not None
        return Coverage(
            ops_total=ops_total,
            ops_delegated=delegated,
            partitions=npu["partitions"] if applied else 0,
            fully_accelerated=full,
            ops_on_cpu_by_type={} if full else (None if applied else dict(sorted(self.ops_by_type.items()))),
            unsupported_ops=[],
            adapter=npu["dispatch_device"] if applied else "CPU (XNNPACK fallback)",
            software_renderer=None,
            source="the compiler plug-in's partition report and the dispatch delegate's device line",
            extra={
                "npu": {
                    "vendor": self.plan.flags["npu_vendor"],
                    "plugin_applied": applied,
                    "plugin": npu["plugin"],
                    "compile_device": npu["compile_device"],
                    "dispatch_device": npu["dispatch_device"],
                    "runtime_says_fully_accelerated": bool(self._model.is_fully_accelerated()),
                    "compile": self.plan.flags["npu_compile"],
                    "compile_ms": self.compile_ms,
                    "aot": self.aot and {k: self.aot[k] for k in ("cache", "sha256", "path")},
                    "openvino": {k: v for k, v in self.openvino.items() if k != "available"},
                    **self.libraries,
                }
            },
        )

    def _probe(self, model_path: str) -> None:
        """One invoke on zeros at load: the dispatcher's allocation failures (SSD's "Custom allocation
        is too small") surface here as one error instead of mid-run."""
        self.set_inputs([np.zeros(t.shape, t.dtype) for t in self.inputs])
        failure = None
        with captured_native_stderr(self.native_log):
            try:
                self.invoke()
            except RuntimeError as exc:
                failure = exc
        if failure is not None:
            raise self._load_error(model_path, failure)
