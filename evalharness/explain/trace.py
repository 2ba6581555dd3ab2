"""Per-op numeric trace: how far side B's tensors are from side A's, op by op.

Two errors per op, each on the changed images and on the control images:

- **local**: B's kernel for this one op, fed A's inputs (a single-op sub-model on B's path), against
  A's output. It isolates what the op itself does differently.
- **accumulated**: B's whole graph (every activation exposed as an output) against A's. It is the
  error as it builds up along the graph.

Values are compared dequantised (real values), so an int8 tensor and its float twin compare in
the same units. SNR is pooled over the group's images: 10·log10(Σa² / Σ(a−b)²) dB (∞ when equal).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np

from evalharness.core.tensors import TensorInfo
from evalharness.explain.rollup import own_share
from evalharness.explain.sides import Side
from evalharness.runtime.subgraph import ModelGraph


class Dequantizer:
    """Tensor index -> (scale, zero_point) of the tensors a side's models expose."""

    def __init__(self) -> None:
        self.params: dict[int, tuple[float, int]] = {}
        self.dtypes: dict[int, str] = {}
        self.infos: dict[int, TensorInfo] = {}  # as the interpreter reports them (runtime shapes)

    def learn(self, model: Any) -> None:
        for info in [*model.inputs, *model.outputs]:
            self.params.setdefault(info.index, (info.scale, info.zero_point))
            self.dtypes.setdefault(info.index, info.dtype)
            self.infos.setdefault(info.index, info)

    def quantize(self, index: int, real: np.ndarray) -> np.ndarray:
        """Real values as this side's tensor ``index`` holds them (its dtype, scale, zero point)."""
        dtype, (scale, zero_point) = np.dtype(self.dtypes[index]), self.params.get(index, (0.0, 0))
        if dtype.kind in "iu" and scale:
            info = np.iinfo(dtype)
            return np.clip(np.round(real / scale) + zero_point, info.min, info.max).astype(dtype)
        return real.astype(dtype)

    def __call__(self, index: int, value: np.ndarray) -> np.ndarray:
        scale, zero_point = self.params.get(index, (0.0, 0))
        if scale and value.dtype.kind in "iu":
            return (value.astype(np.float64) - zero_point) * scale
        return value.astype(np.float64)


def full_trace(side: Side, inputs: list[np.ndarray], deq: Dequantizer) -> list[dict[int, np.ndarray]]:
    """Every activation of every image on ``side``'s path (raw values, by tensor index)."""
    model = side.load("exposed", side.graph.write_exposed)
    deq.learn(model)
    feeds = [dict(zip(side.graph.inputs, [x], strict=True)) for x in inputs]
    return [{**feed, **out} for feed, out in zip(feeds, side.run_model(model, feeds), strict=True)]


def translate(
    a_acts: list[dict[int, np.ndarray]], tensor_map: dict[int, int], deq_a: Dequantizer, deq_b: Dequantizer
) -> list[dict[int, np.ndarray]]:
    """A's activations as B's tensors (B's indices; requantized where B's type or scale differs:
    a float model's tensors fed to its int8 variant)."""
    out = []
    for acts in a_acts:
        fed = {}
        for t, u in tensor_map.items():
            same = deq_a.dtypes.get(t) == deq_b.dtypes.get(u) and deq_a.params.get(t) == deq_b.params.get(u)
            fed[u] = acts[t] if same else deq_b.quantize(u, deq_a(t, acts[t]))
        out.append(fed)
    return out


def kernel_swap(
    side_a: Side, tensor_map: dict[int, int], deq_a: Dequantizer, deq_b: Dequantizer
) -> Callable[[int, list[dict[int, np.ndarray]]], list[dict[int, np.ndarray]]]:
    """``swap(op, values)``: op's outputs by A's kernel (A's single-op sub-model) fed B's tensors
    (``values``: B's tensor index -> value, per image), as B's tensors: each value requantized where
    the two sides' types or scales differ (a float op run inside an int8 path)."""

    def same(t: int, u: int) -> bool:
        return deq_a.dtypes.get(t) == deq_b.dtypes.get(u) and deq_a.params.get(t) == deq_b.params.get(u)

    def swap(j: int, values: list[dict[int, np.ndarray]]) -> list[dict[int, np.ndarray]]:
        graph = side_a.graph
        op = graph.ops[j]
        model = side_a.load(f"op{j}", lambda p: graph.write(p, j, j + 1, list(op.outputs)))
        deq_a.learn(model)
        feeds = []
        for v in values:
            feed = {}
            for info in model.inputs:
                t, u = info.index, tensor_map[info.index]
                feed[t] = v[u] if same(t, u) else deq_a.quantize(t, deq_b(u, v[u]))
            feeds.append(feed)
        outs = []
        for o in side_a.run_model(model, feeds):
            mapped = {}
            for t in op.outputs:
                u = tensor_map[t]
                mapped[u] = o[t] if same(t, u) else deq_b.quantize(u, deq_a(t, o[t]))
            outs.append(mapped)
        return outs

    return swap


def local_outputs(
    side: Side, a_fed: list[dict[int, np.ndarray]], deq: Dequantizer
) -> list[list[dict[int, np.ndarray]]]:
    """Per op, B's output of that op alone fed A's tensors (``translate``d; one entry per image)."""
    per_op = []
    for op in side.graph.ops:
        model = side.load(
            f"op{op.index}",
            lambda p, i=op.index: side.graph.write(p, i, i + 1, list(side.graph.ops[i].outputs)),
        )
        deq.learn(model)
        per_op.append(side.run_model(model, a_fed))
    return per_op


class ErrorStats(TypedDict):
    """How far B's values are from A's over a set of (a, b) pairs (None: no pair to measure)."""

    max_abs: float | None
    mean_abs: float | None
    cosine: float | None
    snr_db: float | None
    nonfinite: int | None


NO_PAIRS: ErrorStats = {"max_abs": None, "mean_abs": None, "cosine": None, "snr_db": None, "nonfinite": None}


def error_stats(pairs: list[tuple[np.ndarray, np.ndarray]]) -> ErrorStats:
    """max / mean absolute error, mean cosine similarity and pooled SNR (dB) of (a, b) pairs, and
    how many of B's values are not finite (a delegate's NaN / inf outputs: every error then reads
    infinite, never a quiet number)."""
    if not pairs:
        return NO_PAIRS.copy()
    nonfinite = sum(int(np.size(b) - np.count_nonzero(np.isfinite(b))) for _, b in pairs)
    if nonfinite:
        return {
            "max_abs": math.inf,
            "mean_abs": math.inf,
            "cosine": None,
            "snr_db": -math.inf,
            "nonfinite": nonfinite,
        }
    diffs = [np.abs(a - b) for a, b in pairs]
    signal = sum(float(np.sum(a * a)) for a, _ in pairs)
    noise = sum(float(np.sum(d * d)) for d in diffs)
    cosines = []
    for a, b in pairs:
        na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
        cosines.append(
            1.0 if na == nb == 0 else (float(np.dot(a.ravel(), b.ravel())) / (na * nb) if na and nb else 0.0)
        )
    snr = math.inf if noise == 0 else (-math.inf if signal == 0 else 10 * math.log10(signal / noise))
    return {
        "max_abs": float(max(float(d.max()) for d in diffs)),
        "mean_abs": float(np.mean([float(d.mean()) for d in diffs])),
        "cosine": float(np.mean(cosines)),
        "snr_db": snr,
        "nonfinite": 0,
    }


def op_errors(
    graph: ModelGraph,
    tensor_map: dict[int, int],
    a_acts: list[dict[int, np.ndarray]],
    b_acts: list[dict[int, np.ndarray]],
    b_local: list[list[dict[int, np.ndarray]]],
    groups: dict[str, list[int]],
    deq_a: Dequantizer,
    deq_b: Dequantizer,
) -> list[dict[str, Any]]:
    """One row per op: its identity and, per group of images, local and accumulated errors of its
    first output."""
    rows = []
    for op in graph.ops:
        t = op.outputs[0]
        u = tensor_map[t]
        row = {"index": op.index, "type": op.type, "name": op.name, "tensor": graph.tensor_name(t)}
        for group, images in groups.items():
            ref = [deq_a(t, a_acts[i][t]) for i in images]
            local = error_stats(
                [(r, deq_b(u, b_local[op.index][i][u])) for r, i in zip(ref, images, strict=True)]
            )
            accumulated = error_stats([(r, deq_b(u, b_acts[i][u])) for r, i in zip(ref, images, strict=True)])
            row[group] = {
                "local": local,
                "accumulated": accumulated,
                "split": own_share(local["snr_db"], accumulated["snr_db"]),
            }
        rows.append(row)
    return rows
