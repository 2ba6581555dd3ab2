"""TFLite's Inference Diff: random inputs, reference CPU run vs the configured delegate, per-output error.

Inputs follow the seed tool (``inference_profiler_stage.cc``): N(0.5, 1/3) rejection-sampled into
[0, 1), scaled to the input type's range (uint8 0..255, int8 -128..127, float -1..1), here from a
seeded generator so runs are reproducible. The same loop runs twice over the same inputs: first the
reference delegate (``task.reference_delegate``, TFLite builtin kernels, 1 thread, by default),
recording outputs, then the configured delegate, comparing. Unlike the seed, quantized outputs are
dequantized before comparing, so errors are in real units whatever the output type.

An average error hides the failures that matter, so named checks run per output: NaN/Inf in the
test output, a silent all-near-zero output where the reference is not, and cosine similarity to
the reference below ``min_cosine``. A tripped check fails the run (``fail_on_check``).
"""

from __future__ import annotations

import numpy as np

from evalharness.errors import ConfigError, ModelMismatchError
from evalharness.runtime.tensors import TensorInfo
from evalharness.tasks import TASKS
from evalharness.timing import summarize

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
    return values.astype(info.dtype).reshape(info.shape)  # static_cast: truncation toward zero


def output_error(ref: np.ndarray, test: np.ndarray) -> dict:
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


class _Recorder:
    """Reference pass: keep every output, dequantized."""

    def __init__(self, task: InferenceDiffTask) -> None:
        self.task = task

    def reset(self) -> None:
        self.task.reference_outputs = []

    def update(self, sample: int, outputs: list[np.ndarray]) -> dict:
        real = [info.dequantize(o) for info, o in zip(self.task.outputs, outputs, strict=True)]
        self.task.reference_outputs.append(real)
        return {"id": f"run{sample}"}

    def compute(self) -> dict:
        return {"num_scored": len(self.task.reference_outputs)}


class DiffEvaluator:
    """Test pass: compare each output with the reference pass's output for the same inputs."""

    def __init__(self, task: InferenceDiffTask) -> None:
        self.task = task
        self.reset()

    def reset(self) -> None:
        self.per_output: list[list[dict]] = [[] for _ in self.task.outputs]

    def update(self, sample: int, outputs: list[np.ndarray]) -> dict:
        ref = self.task.reference_outputs[sample]
        record = {"id": f"run{sample}", "outputs": []}
        for i, (info, out) in enumerate(zip(self.task.outputs, outputs, strict=True)):
            stats = output_error(ref[i], info.dequantize(out))
            self.per_output[i].append(stats)
            record["outputs"].append({k: stats[k] for k in ("avg", "max", "cosine", "nonfinite")})
        return record

    def compute(self) -> dict:
        t = self.task
        outputs, failed = [], []
        for info, runs in zip(t.outputs, self.per_output, strict=True):
            avg = np.array([r["avg"] for r in runs], dtype=np.float64)
            checks = {
                "nan_or_inf": sum(r["nonfinite"] for r in runs) > 0,
                "silent_zero": any(r["test_abs_max"] <= t.zero_tol < r["ref_abs_max"] for r in runs),
                "low_cosine": min((r["cosine"] for r in runs), default=1.0) < t.min_cosine,
            }
            failed += [f"{info.name}: {name}" for name, tripped in checks.items() if tripped]
            outputs.append(
                {
                    "name": info.name,
                    "avg_error": float(avg.mean()) if avg.size else None,
                    "std_dev": float(avg.std()) if avg.size else None,
                    "max_abs_error": max((r["max"] for r in runs), default=None),
                    "p99_abs_error": max((r["p99"] for r in runs), default=None),
                    "nonfinite": sum(r["nonfinite"] for r in runs),
                    "min_cosine": min((r["cosine"] for r in runs), default=None),
                    "checks": checks,
                }
            )
        return {
            "num_scored": len(self.per_output[0]) if self.per_output else 0,
            "outputs": outputs,
            "failed_checks": failed,
        }


@TASKS.register("inference_diff")
class InferenceDiffTask:
    name = "inference_diff"

    def __init__(self, task: dict, model: dict, dataset: dict) -> None:
        self.num_runs = int(task.get("num_runs", 50))
        if self.num_runs < 1:
            raise ConfigError(f"task.num_runs={self.num_runs} must be >= 1")
        self.seed = int(task.get("seed", 0))
        self.min_cosine = float(task.get("min_cosine", 0.95))
        self.zero_tol = float(task.get("zero_tol", 1e-6))
        self.fail_on_check = bool(task.get("fail_on_check", True))
        self.reference_delegate = dict(
            task.get("reference_delegate") or {"name": "reference", "num_threads": 1}
        )
        self.model_path = model["path"]
        self.samples = list(range(self.num_runs))
        self.reference_outputs: list[list[np.ndarray]] = []
        self.inputs: list[TensorInfo] = []
        self.outputs: list[TensorInfo] = []
        self.evaluator = DiffEvaluator(self)

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        if self.outputs and [o.shape for o in outputs] != [o.shape for o in self.outputs]:
            raise ModelMismatchError(f"{self.model_path}: test and reference runs disagree on output shapes")
        self.inputs, self.outputs = inputs, outputs  # the loop resets the evaluator after bind

    def reference_view(self) -> _ReferencePass:
        """The same samples and inputs with a recording evaluator: the loop's reference pass."""
        return _ReferencePass(self)

    def sample_id(self, sample: int) -> str:
        return f"run{sample}"

    def prepare(self, sample: int) -> list[np.ndarray]:
        """Run i's inputs: a generator seeded with (seed, i), so both passes get identical inputs."""
        rng = np.random.default_rng([self.seed, sample])
        return [seed_tool_inputs(rng, info) for info in self.inputs]

    def latency_metrics(self, reference_ms: list[float], test_ms: list[float]) -> dict:
        return {"reference_latency_us": _latency_us(reference_ms), "test_latency_us": _latency_us(test_ms)}

    def provenance(self) -> dict:
        return {
            "dataset": {
                "name": "random",
                "count": self.num_runs,
                "seed": self.seed,
                "distribution": "N(0.5, 1/3) in [0, 1) scaled to the input type's range",
            },
            "reference_delegate": self.reference_delegate,
        }

    def summary_lines(self, doc: dict) -> list[str]:
        metrics = doc["metrics"]
        ref, test = metrics.get("reference_latency_us", {}), metrics.get("test_latency_us", {})
        lines = [
            f"Num evaluation runs: {metrics['num_scored']}",
            f"Reference run latency: avg={ref.get('mean', 0):g}(us), std_dev={ref.get('std', 0):g}(us)",
            f"Test run latency: avg={test.get('mean', 0):g}(us), std_dev={test.get('std', 0):g}(us)",
        ]
        for i, out in enumerate(metrics["outputs"]):
            lines.append(f"OutputDiff[{i}]: avg_error={out['avg_error']:g}, std_dev={out['std_dev']:g}")
        return lines


def _latency_us(inference_ms: list[float]) -> dict:
    stats = summarize([ms * 1e3 for ms in inference_ms])
    return {k: stats[k] for k in ("count", "mean", "std")} if stats["count"] else {"count": 0}


class _ReferencePass:
    """The task as the loop sees it during the reference pass."""

    name = "reference"

    def __init__(self, task: InferenceDiffTask) -> None:
        self.task, self.samples, self.evaluator = task, task.samples, _Recorder(task)

    def bind(self, inputs: list[TensorInfo], outputs: list[TensorInfo]) -> None:
        self.task.inputs, self.task.outputs = inputs, outputs

    def sample_id(self, sample: int) -> str:
        return self.task.sample_id(sample)

    def prepare(self, sample: int) -> list[np.ndarray]:
        return self.task.prepare(sample)
