"""Where a number came from, for metrics.json's provenance: host, model, delegate (its plan and what it
really took), the task's data and evalharness itself."""

from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypedDict

from evalharness import __version__
from evalharness.core.checksum import sha256_file
from evalharness.core.documents import Assumed
from evalharness.core.errors import EvalHarnessError
from evalharness.run.hydra_access import job_overrides
from evalharness.settings.groups import RunSettings

if TYPE_CHECKING:
    from evalharness.core.tensors import TensorInfo, TensorInfoRecord
    from evalharness.loop.shape import LoopShape
    from evalharness.runtime import DelegatePlan
    from evalharness.runtime.compile_cache import CacheRecord
    from evalharness.runtime.contract import Model
    from evalharness.runtime.model_size import ModelSize


class HostInfo(TypedDict):
    """``provenance.host``: the machine that ran the loop."""

    hostname: str
    os: str
    machine: str
    cpu: str
    cpu_features: list[str]
    cpu_count: int | None
    python: str


class ModelFileInfo(TypedDict):
    """The file half of ``provenance.model``: where the model is, its hash, size and tensors."""

    path: str
    sha256: str
    bytes: int
    inputs: list[TensorInfoRecord]
    outputs: list[TensorInfoRecord]


class SizeNotMeasured(TypedDict):
    """``provenance.model.size`` of a file whose weights could not be read: its bytes and why."""

    bytes: int
    error: str


class ToolInfo(TypedDict):
    """``provenance.evalharness``: the tool and release that wrote the run."""

    name: str
    version: str


class DelegateBlock(TypedDict):
    """What ``provenance.delegate`` (and a reference pass's delegate) says of a delegate that ran."""

    name: str
    flags: dict[str, Any]  # the delegate's own settings, keyed by its flags
    op_resolver: str
    coverage: dict[str, Any]  # Coverage.as_dict(): its keys plus the backend's extra figures
    cache: list[CacheRecord]


class LibraryRecord(TypedDict):
    """``provenance.delegate.library``: an external delegate's shared library and its options."""

    path: str
    sha256: str
    options: dict[str, str]


# CPU features that change which kernels run (and so latency, sometimes results).
_CPU_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vnni",
    "avx_vnni",
    "amx_int8",
    "asimd",
    "asimddp",
    "i8mm",
    "sve",
    "fphp",
)


def _cpuinfo() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key in ("model name", "Model", "Hardware") and model in ("", platform.machine()):
                    model = value.strip()
                elif key in ("flags", "Features"):
                    flags.update(value.split())
    except OSError:
        pass
    return model, sorted(f for f in _CPU_FLAGS if f in flags)


def host_info() -> HostInfo:
    cpu, features = _cpuinfo()
    return {
        "hostname": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu": cpu,
        "cpu_features": features,
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def model_info(path: str, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> ModelFileInfo:
    return {
        "path": os.path.abspath(path),
        "sha256": sha256_file(path),
        "bytes": os.path.getsize(path),
        "inputs": [t.as_dict() for t in inputs],
        "outputs": [t.as_dict() for t in outputs],
    }


def size_record(path: str, sha256: str, cache_dir: str) -> ModelSize | SizeNotMeasured:
    """``provenance.model.size``: on-disk, gzip (level 6, the guide's) and zstd bytes, weight sparsity and
    unique values (runtime/model_size.py, cached by the file's sha256); a file whose weights cannot be
    read says why."""
    from evalharness.runtime.model_size import cached_size

    try:
        return cached_size(path, sha256, cache_dir)
    except (EvalHarnessError, OSError, ValueError, IndexError) as exc:  # a flatbuffer it cannot walk
        return {
            "bytes": os.path.getsize(path),
            "error": f"not measured: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
        }


def tool_info() -> ToolInfo:
    return {"name": "evalharness", "version": __version__}


def delegate_record(plan: DelegatePlan, model: Model) -> DelegateBlock:
    """What metrics.json says about a delegate that ran: its plan and what it really took."""
    return {
        "name": plan.name,
        "flags": plan.flags,
        "op_resolver": plan.op_resolver,
        "coverage": model.coverage.as_dict(),
        "cache": model.cache_record(),  # schema 3: cold/warm compile caches (runtime/compile_cache.py)
    }


def library_record(plan: DelegatePlan) -> LibraryRecord | None:
    if not plan.external_path:
        return None
    return {
        "path": plan.external_path,
        "sha256": sha256_file(plan.external_path),
        "options": plan.external_options,
    }


def model_assumptions(
    settings: RunSettings, runtime: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """What the run took for granted about the model: the backend a source model's format picked, and
    the preprocessing of a file given by path whose metadata holds no normalization (its preset's
    default, which may be wrong for it)."""
    from evalharness.runtime.source_formats import source_format

    found: list[dict[str, Any]] = []
    if (fmt := source_format(settings.model.path)) is not None:  # said once: the file picked the backend
        found.append(
            {
                "what": "backend",
                "assumed": f"{fmt.runtime} {(runtime or {}).get('version', '')} on the CPU".replace(
                    "  ", " "
                ),
                "why": f"model.path names {fmt.noun} ({'/'.join(fmt.suffixes)})",
                "fix": "model.path=<the converted .tflite> to run it on LiteRT",
            }
        )
    sources = settings.model_sources
    preset = all(preprocess_source(sources, key) == "preset" for key in ("mean", "std"))
    if sources.get("path") != "command line" or not preset:
        return found
    pre = settings.model.preprocess
    return [
        *found,
        {
            "what": "model.preprocess",
            "assumed": f"mean {pre.mean}, std {pre.std}, {pre.crop} crop",
            "why": "the model file carries no normalization metadata",
            "fix": "model.preprocess=efficientnet|torchvision|tflite_tool|... (see evalharness --help)",
        },
    ]


def preprocess_source(sources: Mapping[str, Any], key: str) -> str:
    """Where ``model.preprocess.<key>`` came from (runs made before per-key sources: the group's)."""
    return str(sources.get(f"preprocess.{key}", sources.get("preprocess", "preset")))


def fed_input(
    settings: RunSettings, preprocessing: Mapping[str, Any] | None
) -> tuple[dict[str, Any] | None, list[Assumed]]:
    """(``preprocessing.fed``, the ``Assumed:`` line of an ``integer_input=auto`` that quantized) of
    an image task's recorded recipe; (None, []) for a task that records none."""
    from evalharness.data.fed_input import auto_assumption, fed_record, recorded_spec

    recorded = recorded_spec(preprocessing) if preprocessing else None
    if recorded is None:
        return None, []
    spec, inp = recorded
    requested = settings.model.preprocess.integer_input
    sources = {k: preprocess_source(settings.model_sources, k) for k in ("mean", "std", "integer_input")}
    if settings.quant.integer_input and requested == settings.quant.integer_input:  # an integer variant's
        sources["integer_input"] = f"quant.integer_input (quant={settings.quant.name})"
    assumed = auto_assumption(spec, inp, requested)
    return fed_record(spec, inp, requested, sources), [assumed] if assumed else []


def run_provenance(
    settings: RunSettings,
    task_provenance: dict[str, Any],
    model: Model,
    quant: dict[str, Any],
    loop_shape: LoopShape | None = None,
) -> dict[str, Any]:
    """``provenance`` of metrics.json: what ran (model, runtime, delegate and what it took, host,
    device), on what (the task's dataset/labels/preprocessing, and what its input was fed) and with
    which config."""
    info = model_info(settings.model.path, model.inputs, model.outputs)
    fed, fed_assumed = fed_input(settings, task_provenance.get("preprocessing"))
    if fed is not None:
        recipe = task_provenance["preprocessing"]
        task_provenance = {**task_provenance, "preprocessing": {**recipe, "fed": fed}}
    return {
        "model": {
            "name": settings.model.name,
            "settings_source": settings.model_sources,
            **info,
            "size": size_record(settings.model.path, info["sha256"], settings.paths.cache_dir),
            "quant": quant,
        },
        "runtime": model.runtime_info(),
        "delegate": {
            **delegate_record(settings.delegate_plan, model),
            "library": library_record(settings.delegate_plan),
            "native_log": model.native_log,
        },
        **task_provenance,
        "assumptions": [
            *model_assumptions(settings, model.runtime_info()),
            *fed_assumed,
            *task_provenance.get("assumptions", []),
        ],
        "host": host_info(),
        **({"device": model.device} if model.device is not None else {}),  # runner=adb: the phone
        "thread_budget": {**settings.thread_budget, "loop": loop_shape.record() if loop_shape else None},
        "evalharness": tool_info(),
        "config": settings.config(),
        "overrides": job_overrides(),
    }
