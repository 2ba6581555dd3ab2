"""What every backend promises, so callers read attributes instead of probing with ``hasattr``.

A backend (``litert``'s interpreter, ``compiled``'s GPU accelerator, ``android``'s phone) subclasses
:class:`Model` and registers itself in :data:`BACKENDS` under the ``DelegatePlan.backend`` name it
serves. :class:`Coverage` is the one constructor of metrics.json's delegation-coverage block.
No runtime import here: the contract is readable without LiteRT installed.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from evalharness.core.errors import ModelMismatchError
from evalharness.core.registry import Registry
from evalharness.core.schema import freeze, thaw
from evalharness.core.tensors import TensorInfo
from evalharness.runtime.delegates import DelegatePlan
from evalharness.runtime.thermal import read_thermal

if TYPE_CHECKING:  # for the types only
    from evalharness.runtime.compile_cache import CacheProbe, CacheRecord
    from evalharness.runtime.runners import RunnerSettings


class DeviceLatency(TypedDict):
    """metrics.json ``latency_ms`` of a runner that times on its device (benchmark_model on a
    phone: ``runtime/android``), in ms."""

    init: float | None
    first_inference: float | None
    warmup: dict[str, Any]  # count, then the tool's statistics (mean, min, max, p50, ...)
    inference: dict[str, Any]


class _DeviceMemoryNote(TypedDict):
    note: str  # whose figures these are


class DeviceMemory(_DeviceMemoryNote, total=False):
    """metrics.json ``memory_mb`` of a runner that measures on its device (MB): the deltas from the
    tool's start and its periodic peak, each where the tool printed it."""

    init_delta: float | None
    overall_delta: float | None
    peak: float | None


class RuntimeInfo(TypedDict):
    """``provenance.runtime``: what ran the model."""

    name: str
    package: str
    version: str


@dataclass(frozen=True, eq=False)  # eq: Mapping's, so a Coverage equals its metrics.json dict
class Coverage(Mapping[str, Any]):
    """How much of the graph the delegate really took; ``None`` where the backend cannot tell.

    Readable like the metrics.json dict (``coverage["ops_total"]``, ``.get``) for code that
    reports it; :meth:`as_dict` is that dict. ``extra``: backend-specific top-level keys (adb's
    ``applied``, ``nnapi_accelerators``).
    """

    ops_total: int
    ops_delegated: int | None
    partitions: int | None
    fully_accelerated: bool
    ops_on_cpu_by_type: dict[str, int] | None
    unsupported_ops: list[str]
    adapter: str | None
    software_renderer: bool | None
    source: str
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:  # deep-frozen, like every validated value
        for name in ("ops_on_cpu_by_type", "unsupported_ops", "extra"):
            object.__setattr__(self, name, freeze(getattr(self, name)))

    @property
    def fraction(self) -> float | None:
        if self.ops_delegated is None:
            return None
        return round(self.ops_delegated / self.ops_total, 6) if self.ops_total else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The ``provenance.delegate.coverage`` block of metrics.json (a fresh, mutable copy)."""
        return {
            "ops_total": self.ops_total,
            "ops_delegated": self.ops_delegated,
            "partitions": self.partitions,
            "fraction": self.fraction,
            "fully_accelerated": self.fully_accelerated,
            "ops_on_cpu_by_type": thaw(self.ops_on_cpu_by_type),
            "unsupported_ops": thaw(self.unsupported_ops),
            "device": {"adapter": self.adapter, "software_renderer": self.software_renderer},
            **thaw(self.extra),
            "source": self.source,
        }

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.as_dict())


class Model(abc.ABC):
    """A loaded model as the run loop and the run record see it, whatever runs it.

    ``batch_size`` 0: the loop calls set_inputs / invoke / get_outputs per sample; > 0: it hands
    that many prepared samples at a time to :meth:`run_batch`. ``reported_latency`` / ``memory``:
    a runner's own figures (they replace host timing and RSS); ``device``: the phone it ran on.
    ``caches``: the compile caches the load used (``runtime.cache``): init figures say cold or warm.
    """

    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    coverage: Coverage
    native_log: list[str]
    timed_region: str = "invoke() only"
    batch_size: int = 0
    reported_latency: DeviceLatency | None = None
    memory: DeviceMemory | None = None
    device: dict[str, Any] | None = None
    caches: tuple[CacheProbe, ...] = ()  # runtime.cache.CacheProbe per compile cache, created before the load
    # what ran an op (op profile): (taken by the delegate or accelerator, left on the CPU)
    placement: tuple[str, str] = ("delegate", "CPU")
    # thermal snapshots around a runner's own latency run ({"before", "after"}; runner=adb), else None:
    # the loop's own snapshots bracket the timed invokes
    latency_thermal: dict[str, Any] | None = None

    def thermal(self) -> dict[str, Any]:
        """The thermal state of the machine that runs the model (``runtime/thermal.py``); never raises."""
        return read_thermal()

    def lane_threads(self) -> int | None:
        """The host CPU threads one instance of this model takes, where more instances can be loaded
        and invoked side by side in this process (``loop/lanes.py``); None where they cannot (a
        device, an accelerator, a runner) or the runtime chooses the thread count."""
        return None

    def op_placements(self) -> list[str] | None:
        """What ran each op of the original graph, where the loaded graph tells; None where the
        backend reports counts only (the op profile then asks each op's own sub-model)."""
        return None

    def partition_nodes(self) -> list[list[int]] | None:
        """Per delegate partition, in run order, the original ops it replaced (ascending); None where
        the backend does not tell (the runtime profile then maps partitions by node order alone)."""
        return None

    def cache_record(self) -> list[CacheRecord]:
        """``provenance.delegate.cache``: each cache's location, size and cold/warm state, sized now."""
        return [probe.record() for probe in self.caches]

    @classmethod
    @abc.abstractmethod
    def load(cls, model_path: str, plan: DelegatePlan, runtime: str, runner: RunnerSettings | None) -> Model:
        """Build from ``load_model``'s arguments (each backend takes the ones it reads)."""

    @abc.abstractmethod
    def runtime_info(self) -> RuntimeInfo:
        """``provenance.runtime``: ``{"name", "package", "version"}`` of what ran the model."""

    def set_batch(self, size: int) -> str:
        """Take ``size`` samples per invoke (``loop.batch_size``); returns how, for the record.
        ``inputs``/``outputs`` keep describing one sample. A backend that cannot says so (exit 2)."""
        raise ModelMismatchError(
            f"loop.batch_size={size}: the {type(self).__name__} backend runs one sample per invoke; "
            "use loop.batch_size=1"
        )

    @abc.abstractmethod
    def set_inputs(self, tensors: list[np.ndarray]) -> None: ...

    @abc.abstractmethod
    def invoke(self) -> None: ...

    @abc.abstractmethod
    def get_outputs(self) -> list[np.ndarray]: ...

    def run_batch(self, batch: list[list[np.ndarray]]) -> list[tuple[list[np.ndarray], float | None]]:
        """(outputs, latency ms) per sample, for backends with ``batch_size`` > 0."""
        raise NotImplementedError(f"{type(self).__name__} runs one sample at a time (batch_size=0)")


BACKENDS: Registry[type[Model]] = Registry(
    "backend",
    base=Model,
    lazy={
        "interpreter": "evalharness.runtime.litert:InterpreterModel",
        "compiled_gpu": "evalharness.runtime.compiled:CompiledGpuModel",
        "compiled_cpu": "evalharness.runtime.compiled:CompiledCpuModel",
        "compiled_npu": "evalharness.runtime.npu_backend:CompiledNpuModel",
        "adb": "evalharness.runtime.android.backend:AdbModel",
        # source models (runtime/source_formats.py): picked by the model file's format, not the plan
        "onnxruntime": "evalharness.runtime.onnx_backend:OnnxModel",
        "torch_export": "evalharness.runtime.torch_backend:TorchExportModel",
    },
)
