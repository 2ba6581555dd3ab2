"""Pruning and clustering of a float ``.tflite``'s weights, post-training, without TensorFlow.

TFLite's model-optimisation guide names pruning (weights set to exactly zero: the file keeps its
size and speed but compresses better) and clustering (each layer's weights replaced by a few shared
values, the centroids: it compresses better too). The toolkit does both *during training*; here they
are applied to a trained model's weights as they are, so the accuracy cost is the untuned one, and
every record says so.

- prune: the smallest-magnitude weights set to zero, exactly ``round(sparsity * n)`` of them per
  tensor (``per_tensor``) or over all edited tensors together (``global``: one threshold); or the
  structured 2:4 pattern (two zeros in every four consecutive input-channel weights, the last axis).
- cluster: 1-D k-means (Lloyd) on each tensor's values, ``clusters`` centroids, started evenly spaced
  between min and max (``linear``) or by k-means++ (seeded); ``per_channel``: centroids per output
  channel. Every weight becomes its centroid, so a tensor holds at most ``clusters`` values (per
  channel: per channel).

Which tensors: float32 weights, or int8/uint8 weights of an already quantized model
(:mod:`evalharness.runtime.weights`: edited on their real values and written back on the tensor's
own scale, so a pruned weight is its zero point exactly; a clustered one is its centroid rounded to
that grid, at most ``clusters`` values per channel), of at least ``min_elements`` values; the first
convolution and the classifier (the last weight tensor) stay dense unless ``keep_first`` /
``keep_last`` are false, as the toolkit's guide advises. The bytes are rewritten in
place (:func:`evalharness.runtime.weights.replace_values`): same size, same flatbuffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalharness.core.errors import ConfigError
from evalharness.runtime.model_size import tensor_figures
from evalharness.runtime.weights import WeightTensor, real_values, store_real_values, weight_tensors

__all__ = ["cluster_values", "edit_model", "prune_2_4", "prune_global", "prune_values", "select"]

POST_TRAINING = "post-training: weights edited as trained, no fine-tuning (not the toolkit's trained results)"


def prune_values(values: np.ndarray, sparsity: float) -> np.ndarray:
    """``values`` with the ``round(sparsity * n)`` smallest magnitudes set to exactly zero."""
    flat = np.array(values, dtype=np.float32).ravel()
    k = int(round(sparsity * flat.size))
    if k > 0:
        flat[np.argpartition(np.abs(flat), k - 1)[:k]] = 0.0
    return flat.reshape(np.shape(values))


def prune_global(tensors: list[np.ndarray], sparsity: float) -> list[np.ndarray]:
    """One magnitude threshold over all ``tensors``: ``round(sparsity * total)`` zeros in all."""
    sizes = [t.size for t in tensors]
    pruned = prune_values(np.concatenate([np.ravel(t) for t in tensors]), sparsity)
    parts = np.split(pruned, np.cumsum(sizes)[:-1])
    return [p.reshape(t.shape) for p, t in zip(parts, tensors, strict=True)]


def prune_2_4(values: np.ndarray) -> np.ndarray:
    """2:4 structured sparsity: in every 4 consecutive weights along the last axis (input channels),
    the 2 of smallest magnitude set to zero. The last axis must be a multiple of 4."""
    groups = np.array(values, dtype=np.float32).reshape(-1, 4)
    smallest = np.argsort(np.abs(groups), axis=1, kind="stable")[:, :2]
    np.put_along_axis(groups, smallest, 0.0, axis=1)
    return groups.reshape(np.shape(values))


def _kmeans_1d(x: np.ndarray, n: int, init: str, rng: np.random.Generator, iters: int = 50) -> np.ndarray:
    """Each value of ``x`` replaced by its centroid (1-D Lloyd iterations; at most ``n`` values)."""
    if np.unique(x).size <= n:
        return x.astype(np.float32)
    if init == "linear":
        centroids = np.linspace(x.min(), x.max(), n)
    else:  # k-means++: each next centre drawn with probability proportional to squared distance
        sample = x if x.size <= 20000 else rng.choice(x, 20000, replace=False)
        centroids = np.array([rng.choice(sample)])
        for _ in range(n - 1):
            d2 = np.min((sample[:, None] - centroids[None, :]) ** 2, axis=1)
            pick = rng.choice(sample, p=d2 / d2.sum()) if d2.sum() > 0 else rng.choice(sample)
            centroids = np.append(centroids, pick)
    centroids = np.sort(centroids.astype(np.float64))
    xs = np.sort(x)
    prefix = np.concatenate([[0.0], np.cumsum(xs)])
    cuts = None
    for _ in range(iters):  # on the sorted values each cluster is a run: counts and sums from cuts
        new = np.searchsorted(xs, (centroids[1:] + centroids[:-1]) / 2, side="right")
        if cuts is not None and np.array_equal(new, cuts):
            break
        cuts = new
        edges = np.concatenate([[0], cuts, [xs.size]])
        counts = np.diff(edges)
        sums = prefix[edges[1:]] - prefix[edges[:-1]]
        centroids = np.sort(np.where(counts > 0, sums / np.maximum(counts, 1), centroids))
    assign = np.searchsorted((centroids[1:] + centroids[:-1]) / 2, x)
    return centroids.astype(np.float32)[assign]


def cluster_values(
    values: np.ndarray,
    clusters: int,
    init: str = "linear",
    per_channel: bool = False,
    axis: int = 0,
    seed: int = 0,
) -> np.ndarray:
    """``values`` with each weight replaced by one of ``clusters`` centroids (per tensor, or per
    slice along ``axis`` when ``per_channel``)."""
    rng = np.random.default_rng(seed)
    x = np.asarray(values, dtype=np.float64)
    if not per_channel:
        return _kmeans_1d(x.ravel(), clusters, init, rng).reshape(x.shape)
    moved = np.moveaxis(x, axis, 0)
    out = np.stack([_kmeans_1d(c.ravel(), clusters, init, rng).reshape(c.shape) for c in moved])
    return np.moveaxis(out, 0, axis)


def select(weights: list[WeightTensor], s: Any) -> tuple[list[WeightTensor], list[dict[str, Any]]]:
    """(tensors to edit, tensors left as they are with the reason) for the settings ``s``."""
    first_conv = next((w.index for w in weights if w.op == "CONV_2D"), None)
    last = weights[-1].index if weights else None
    chosen, skipped = [], []
    for w in weights:
        why = None
        if w.dtype not in ("float32", "int8", "uint8") or (w.dtype != "float32" and not w.scale):
            why = f"{w.dtype} weights (edit the float model, quantize after: quant=prune+int8)"
        elif w.elements < s.min_elements:
            why = f"small: {w.elements} values < min_elements {s.min_elements}"
        elif s.keep_first and w.index == first_conv:
            why = "the first convolution (keep_first)"
        elif s.keep_last and w.index == last:
            why = "the classifier, the last weight tensor (keep_last)"
        elif (
            s.method == "prune" and s.structure == "2:4" and (w.op == "DEPTHWISE_CONV_2D" or w.shape[-1] % 4)
        ):
            why = "2:4 needs input channels on the last axis in multiples of 4"
        elif s.only is not None and w.op_index not in s.only:
            why = "not in quant.weights.only"
        if why:
            skipped.append({**w.describe(), "why": why})
        else:
            chosen.append(w)
    return chosen, skipped


def _edited(buf: bytearray, chosen: list[WeightTensor], s: Any) -> list[np.ndarray]:
    values = [real_values(buf, w).astype(np.float32) for w in chosen]
    if s.method == "cluster":
        return [
            cluster_values(v, s.clusters, s.init, s.per_channel, w.channel_axis, s.seed + i)
            for i, (v, w) in enumerate(zip(values, chosen, strict=True))
        ]
    if s.structure == "2:4":
        return [prune_2_4(v) for v in values]
    if s.scope == "global":
        return prune_global(values, s.sparsity)
    return [prune_values(v, s.sparsity) for v in values]


def edit_model(path: str, s: Any) -> tuple[bytes, dict[str, Any]]:
    """(the edited model's bytes, what was done: settings, every tensor edited with its figures
    after, every tensor left alone with why). ``s``: the ``quant.weights`` settings."""
    raw, weights = weight_tensors(path)
    buf = bytearray(raw)
    chosen, skipped = select(weights, s)
    if not chosen:
        raise ConfigError(
            f"quant.weights.method={s.method}: no weight tensor of {path} qualifies ({len(skipped)} left "
            "alone); give the float model or lower quant.weights.min_elements"
        )
    tensors = []
    for w, v in zip(chosen, _edited(buf, chosen, s), strict=True):
        tensors.append({**w.describe(), "dtype": w.dtype, **tensor_figures(store_real_values(buf, w, v))})
    return bytes(buf), {"tensors": tensors, "left_dense": skipped, "note": POST_TRAINING}
