"""TFLite's Inference Diff, live half: random inputs, a reference pass, per-run output errors.

Inputs follow the seed tool (``inference_profiler_stage.cc``): N(0.5, 1/3) rejection-sampled into
[0, 1), scaled to the input type's range (uint8 0..255, int8 -128..127, float -1..1), here from a
seeded generator so runs are reproducible. The same loop runs twice over the same inputs: first the
reference delegate (``task.reference_delegate``, TFLite builtin kernels, 1 thread, by default),
recording outputs, then the configured delegate, comparing. Unlike the seed, quantized outputs are
dequantized before comparing, so errors are in real units whatever the output type. The checks on
the errors are the definition's (:mod:`evalharness.tasks.inference_diff.definition`).

Decoded answers are compared too (:mod:`evalharness.stats.decoded`): with the model preset's
``decoder`` (a detector: the same decoders ``task=coco`` uses) boxes, else for one score vector
(a classifier) classes; any other model records "no decoder: raw tensors only".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict, cast

import numpy as np

from evalharness.core.documents import JSONMap, OutputError
from evalharness.core.errors import ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.decoders.base import build_decoder
from evalharness.stats.decoded import compare_boxes, compare_classes
from evalharness.stats.latency import summarize
from evalharness.tasks.definition import Scorer
from evalharness.tasks.inference_diff.definition import InferenceDiffDefinition, InferenceDiffSettings
from evalharness.tasks.live import RecordEvaluator, ReferencePass, Task


class _LatencyCount(TypedDict):
    count: int


class LatencyUs(_LatencyCount, total=False):
    """One pass's invoke latency in µs: count, mean and std (count 0 alone: nothing timed)."""

    mean: float
    std: float


class DiffLatencies(TypedDict):
    """The metrics inference_diff makes from the loop's timing (:meth:`InferenceDiffTask.extra_metrics`)."""

    reference_latency_us: LatencyUs
    test_latency_us: LatencyUs


_RANGES = {"uint8": (0.0, 255.0), "int8": (-128.0, 127.0), "float32": (-1.0, 1.0)}


def seed_tool_inputs(rng: np.random.Generator, info: TensorInfo) -> np.ndarray:
    """One random input tensor distributed as the seed tool's GenerateRandomGaussianData."""
    if info.dtype not in _RANGES:
        raise ModelMismatchError(
            f"input {info.name!r} has type {info.dtype}; inference_diff supports {list(_RANGES)}"
        )
    n = int(np.prod(info.shape))
    out = np.empty(0)
    while out.size < n:
        draw = rng.normal(0.5, 1.0 / 3.0, size=max(2 * (n - out.size), 16))
        out = np.concatenate([out, draw[(draw >= 0) & (draw < 1)]])
    lo, hi = _RANGES[info.dtype]
    values = np.float32(lo) + np.float32(hi - lo) * out[:n].astype(np.float32)
    tensor: np.ndarray = values.astype(info.dtype).reshape(info.shape)
    return tensor  # static_cast: truncation toward zero


def is_score_vector(outputs: list[TensorInfo]) -> bool:
    """One output holding one vector of two or more scores ([1, C] or [C]): a classifier's."""
    if len(outputs) != 1 or not outputs[0].shape:
        return False
    shape = tuple(outputs[0].shape)
    return shape[-1] >= 2 and int(np.prod(shape)) == shape[-1]


def output_error(ref: np.ndarray, test: np.ndarray) -> OutputError:
    """Error figures of one output of one run (dequantized float arrays of equal shape)."""
    ref, test = ref.astype(np.float64).ravel(), test.astype(np.float64).ravel()
    err = np.abs(test - ref)
    finite = np.isfinite(err)
    norm = np.linalg.norm(ref) * np.linalg.norm(test)
    cosine = (
        float(np.dot(ref, test) / norm) if norm > 0 else (1.0 if not ref.any() and not test.any() else 0.0)
    )
    return {
        "avg": float(err[finite].mean()) if finite.any() else float("nan"),
        "max": float(err[finite].max()) if finite.any() else float("nan"),
        "p99": float(np.percentile(err[finite], 99)) if finite.any() else float("nan"),
        "nonfinite": int((~np.isfinite(test)).sum()),
        "cosine": cosine,
        "test_abs_max": float(np.abs(test[np.isfinite(test)]).max()) if np.isfinite(test).any() else 0.0,
        "ref_abs_max": float(np.abs(ref).max()),
    }


class _Recorder(RecordEvaluator):
    """Reference pass: keep every output, dequantized."""

    def __init__(self, task: InferenceDiffTask) -> None:
        self.task = task
        super().__init__(Scorer)

    def reset(self) -> None:
        self.task.reference_outputs = []
        self.task.reference_boxes = []

    def update(self, sample: int, outputs: list[np.ndarray]) -> dict[str, Any]:
        real = [info.dequantize(o) for info, o in zip(self.task.outputs, outputs, strict=True)]
        self.task.reference_outputs.append(real)
        if self.task.decoder is not None:
            self.task.reference_boxes.append(self.task.decoder.decode(outputs).rows())
        return {"id": f"run{sample}"}


class DiffEvaluator(RecordEvaluator):
    """Test pass: compare each output with the reference pass's output for the same inputs."""

    def __init__(self, task: InferenceDiffTask) -> None:
        self.task = task
        super().__init__(
            lambda: task.own_definition.scorer([info.name for info in task.outputs], task.decoded_kind)
        )

    def record(self, sample: int, outputs: list[np.ndarray]) -> dict[str, Any]:
        task = self.task
        ref = task.reference_outputs[sample]
        real = [info.dequantize(out) for info, out in zip(task.outputs, outputs, strict=True)]
        errors = [output_error(r, t) for r, t in zip(ref, real, strict=True)]
        record: dict[str, Any] = {"id": f"run{sample}", "outputs": errors}
        if task.decoded_kind == "classifier":
            record["decoded"] = compare_classes(ref[0], real[0])
        elif task.decoded_kind == "detector" and task.decoder is not None:
            test = task.decoder.decode(outputs).rows()
            record["decoded"] = compare_boxes(task.reference_boxes[sample], test, task.decoded_min_score)
        return record


class InferenceDiffTask(Task):
    name = "inference_diff"
    typed_inputs = True

    def __init__(self, task: InferenceDiffSettings, model: Any, dataset: Any, split: Any = None) -> None:
        self.settings = task
        self.num_runs, self.seed = task.num_runs, task.seed
        self.reference_delegate = self.definition.rules().reference_delegate
        self.model_path = model.path
        self.decoder_config = dict(model.decoder or {})
        self.decoder: Any = None  # the bound output decoder (decoders/), when the model has one
        self.decoded_kind: str | None = None
        self.reference_boxes: list[list[Any]] = []
        self.samples = list(range(self.num_runs))
        self.reference_outputs: list[list[np.ndarray]] = []
        self.inputs: list[TensorInfo] = []
        self.outputs: list[TensorInfo] = []

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        if self.outputs and [o.shape for o in outputs] != [o.shape for o in self.outputs]:
            raise ModelMismatchError(f"{self.model_path}: test and reference runs disagree on output shapes")
        self.inputs, self.outputs = inputs, outputs  # the loop resets the evaluator after bind
        self.bind_decoder()
        self.evaluator = DiffEvaluator(self)

    def bind_decoder(self) -> None:
        """How the outputs decode: the preset's detector decoder, a classifier's score vector, or none."""
        if self.decoder_config.get("name"):
            params = {k: v for k, v in self.decoder_config.items() if k != "name"}
            self.decoder = build_decoder(self.decoder_config["name"], params)
            hw = tuple(self.inputs[0].shape[1:3]) if len(self.inputs[0].shape) == 4 else (1, 1)
            self.decoder.bind(self.outputs, hw, self.model_path)
            self.decoded_kind = "detector"
        else:
            self.decoder, self.decoded_kind = None, "classifier" if is_score_vector(self.outputs) else None

    @property
    def own_definition(self) -> InferenceDiffDefinition:
        """The definition as this task's own class (its scorer's and settings' signatures)."""
        return cast(InferenceDiffDefinition, self.definition)

    @property
    def decoded_min_score(self) -> float:
        return self.own_definition.decoded_min_score()

    def reference_pass(self) -> _ReferencePass:
        """The same samples and inputs with a recording evaluator: the loop's reference pass."""
        return _ReferencePass(self)

    def sample_id(self, sample: int) -> str:
        return f"run{sample}"

    def prepare(self, sample: int) -> list[np.ndarray]:
        """Run i's inputs: a generator seeded with (seed, i), so both passes get identical inputs."""
        rng = np.random.default_rng([self.seed, sample])
        return [seed_tool_inputs(rng, info) for info in self.inputs]

    def extra_metrics(self, reference_ms: Sequence[float] | None, test_ms: Sequence[float]) -> DiffLatencies:
        return {
            "reference_latency_us": _latency_us(reference_ms or []),
            "test_latency_us": _latency_us(test_ms),
        }

    def provenance(self) -> JSONMap:
        return {
            "dataset": {
                "name": "random",
                "count": self.num_runs,
                "seed": self.seed,
                "distribution": "N(0.5, 1/3) in [0, 1) scaled to the input type's range",
            },
            "reference_delegate": self.reference_delegate,
        }


def _latency_us(inference_ms: Sequence[float]) -> LatencyUs:
    stats = summarize([ms * 1e3 for ms in inference_ms])
    if not stats["count"]:
        return {"count": 0}
    return {"count": stats["count"], "mean": stats["mean"], "std": stats["std"]}


class _ReferencePass(ReferencePass):
    """The task as the loop sees it during the reference pass."""

    def __init__(self, task: InferenceDiffTask) -> None:
        self.task, self.samples, self.evaluator = task, task.samples, _Recorder(task)
        self.delegate = task.reference_delegate

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        self.task.inputs, self.task.outputs = inputs, outputs
        self.task.bind_decoder()

    def sample_id(self, sample: int) -> str:
        return self.task.sample_id(sample)

    def prepare(self, sample: int) -> list[np.ndarray]:
        return self.task.prepare(sample)
