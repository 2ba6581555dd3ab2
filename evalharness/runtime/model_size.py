"""A model's size as TFLite's model-optimisation guide measures it: bytes on disk, compressed bytes
(deflate at zlib's default level 6, what the guide's ``get_gzipped_model_size`` writes through
``zipfile.ZIP_DEFLATED``; and zstd), and what makes weights compress: the share of
exact zeros (sparsity, after pruning) and the number of distinct values per weight tensor (after
clustering), overall and per tensor (:mod:`evalharness.runtime.weights` finds the tensors).

zstd comes from the ``zstandard`` package (extra ``[size]``; Python 3.11 has no ``compression.zstd``):
without it ``zstd_bytes`` is null and ``zstd`` says why. Compressing an 18 MB model takes about a
second, so a run reads the figures from a cache entry keyed by the file's sha256 and the method
(:func:`cached_size`); an entry that does not verify is rebuilt and said (:mod:`evalharness.core.derived`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from typing import TypedDict

import numpy as np

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.derived import Damaged, read_json_object, read_or_rebuild
from evalharness.runtime.weights import WeightDescription, real_values, weight_tensors

__all__ = [
    "GZIP_LEVEL",
    "ZSTD_LEVEL",
    "ModelSize",
    "TensorFigures",
    "cached_size",
    "model_size",
    "tensor_figures",
]

ZSTD_LEVEL = 19  # a download's size: level 3 leaves a clustered Lite0 40 % bigger; ~5 s on 18 MB, cached
METHOD = 2  # bump when the figures are computed differently (the cache key says it); 2: gzip level 6
# zlib's default, the guide's; level 9 took 7x as long on a pruned or clustered Lite0 for <= 7 % fewer bytes
GZIP_LEVEL = 6


class TensorFigures(TypedDict):
    """What makes one weight tensor compress: its elements, exact zeros and distinct values."""

    elements: int
    zeros: int
    sparsity: float
    unique: int


class TensorSize(WeightDescription, TensorFigures):
    """``provenance.model.size.tensors[]``: one weight tensor, where it is and its figures."""

    dtype: str


class WeightFigures(TypedDict):
    """``provenance.model.size.weights``: the figures over every weight tensor."""

    tensors: int
    elements: int
    zeros: int
    sparsity: float | None
    unique_max: int | None
    unique_median: float | None
    what: str


class _SizeKeys(TypedDict):
    bytes: int
    gzip_bytes: int  # deflate at GZIP_LEVEL (runs before METHOD 2 wrote gzip9_bytes: level 9)
    zstd_bytes: int | None
    zstd: str  # the zstandard release and level, or why not measured
    weights: WeightFigures
    tensors: list[TensorSize]


class ModelSize(_SizeKeys, total=False):
    """``provenance.model.size``: the figures of one model file (``cache``: read from the cache
    entry (``hit``), ``built`` or why it was rebuilt; absent from :func:`model_size`'s own answer)."""

    cache: str


def _zstd(data: bytes) -> tuple[int | None, str]:
    try:
        import zstandard
    except ImportError:
        return None, "not measured: pip install 'evalharness[size]' (zstandard)"
    size = len(zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data))
    return size, f"zstandard {zstandard.__version__} level {ZSTD_LEVEL}"


def tensor_figures(values: np.ndarray) -> TensorFigures:
    """Elements, exact zeros, sparsity and distinct values of one tensor's real values."""
    flat = np.ravel(values)
    zeros = int(np.count_nonzero(flat == 0))
    return {
        "elements": int(flat.size),
        "zeros": zeros,
        "sparsity": zeros / flat.size if flat.size else 0.0,
        "unique": int(np.unique(flat).size),
    }


def model_size(path: str) -> ModelSize:
    """The figures of the model at ``path`` (no cache)."""
    buf, weights = weight_tensors(path)
    zstd_bytes, zstd = _zstd(buf)
    tensors: list[TensorSize] = [
        {**w.describe(), "dtype": w.dtype, **tensor_figures(real_values(buf, w))} for w in weights
    ]
    elements = sum(t["elements"] for t in tensors)
    zeros = sum(t["zeros"] for t in tensors)
    unique = [t["unique"] for t in tensors]
    return {
        "bytes": len(buf),
        "gzip_bytes": len(gzip.compress(buf, compresslevel=GZIP_LEVEL, mtime=0)),
        "zstd_bytes": zstd_bytes,
        "zstd": zstd,
        "weights": {
            "tensors": len(tensors),
            "elements": elements,
            "zeros": zeros,
            "sparsity": zeros / elements if elements else None,
            "unique_max": max(unique) if unique else None,
            "unique_median": float(np.median(unique)) if unique else None,
            "what": "weight tensors (kernels of conv, depthwise conv, transposed conv, fully connected); "
            "quantized ones dequantized per channel",
        },
        "tensors": tensors,
    }


def cached_size(path: str, sha256: str, cache_dir: str) -> ModelSize:
    """:func:`model_size`, read from ``<cache_dir>/model_size/<sha256>-<method>.json`` when that
    entry was written for this file and method; ``cache`` says hit, built or why an entry was rebuilt."""
    key = {"sha256": sha256, "method": METHOD, "zstd": _zstd(b"")[1]}
    # one entry per file and method (zstd present or not), so two environments never rebuild each other's
    method = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    entry = os.path.join(os.path.expanduser(cache_dir), "model_size", f"{sha256}-{method}.json")
    rebuilt: list[str] = []

    def read() -> ModelSize:
        record = read_json_object(entry)
        if record.get("key") != key or not isinstance(record.get("size"), dict):
            raise Damaged("written for another file or method")
        if record.get("digest") != _digest(record["size"]):
            raise Damaged("its figures are not the ones written (digest differs)")
        copy: ModelSize = record["size"].copy()  # a dict (checked above), its keys as written
        return copy

    size = read_or_rebuild(f"model size cache {entry}", read, rebuilt)
    if size is not None:
        return {**size, "cache": "hit"}
    size = model_size(path)
    os.makedirs(os.path.dirname(entry), exist_ok=True)
    atomic_write_text(entry, json.dumps({"key": key, "size": size, "digest": _digest(size)}))
    return {**size, "cache": "rebuilt: " + rebuilt[0] if rebuilt else "built"}


def _digest(size: ModelSize) -> str:
    return hashlib.sha256(json.dumps(size, sort_keys=True).encode()).hexdigest()
