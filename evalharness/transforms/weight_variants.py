"""``quant.weights``: the pruned or clustered float model a variant starts from, cached, and the check
that a quantization after it kept what it made.

The edited model (:mod:`evalharness.runtime.weight_edit`) is cached like a quantized variant
(:func:`evalharness.core.variant_cache.cached_model`, under ``<paths.cache_dir>/weights/<key>/``), the
key being the source model's sha256, the ``quant.weights`` settings and :data:`EDIT_VERSION`. A
quantization recipe then applies to the edited model (``quant=prune+int8``, the guide's order).

Quantizing must not undo the edit. Symmetric int8 weights map 0.0 to 0, so zeros survive; but
per-channel scales map one shared float value to a different integer in each channel, so a clustered
tensor would hold up to ``clusters x channels`` values. A clustered variant is therefore quantized
with per-tensor weight scales (:func:`tensorwise`: every op config's weight granularity set to
``TENSORWISE``), and :func:`check_kept` reads the quantized weights back: every edited tensor must
hold at least its zeros and at most its distinct values; the result is recorded, and a tensor that
fails is said, never passed over.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any, TypedDict

from evalharness.core.checksum import sha256_file
from evalharness.core.variant_cache import cached_model
from evalharness.settings.groups import WeightsSchema
from evalharness.transforms.variant import CachedFile

EDIT_VERSION = 1  # bump when runtime/weight_edit.py edits differently
log = logging.getLogger("evalharness")


def weight_variant(source: str, weights: WeightsSchema, cache_dir: str) -> CachedFile:
    """The edited model in the cache; its provenance is ``provenance.model.quant.weights``."""
    from evalharness.runtime.weight_edit import edit_model

    settings = dataclasses.asdict(weights)  # the settings as JSON: in the key and the record
    source_sha = sha256_file(source)
    key = {"source_sha256": source_sha, "weights": settings, "edit_version": EDIT_VERSION}

    def build(folder: str) -> tuple[bytes, dict[str, Any]]:
        data, record = edit_model(source, weights)
        return data, {"edit": record}

    record = cached_model(cache_dir, "weights", key, build, record_name="variant.json")
    edit = record["edit"]
    log.info(
        "quant.weights: %s on %d weight tensors, %d left as they are (listed in "
        "provenance.model.quant.weights.left_dense); %s",
        weights.method,
        len(edit["tensors"]),
        len(edit["left_dense"]),
        edit["note"],
    )
    provenance = {
        **settings,
        "note": edit["note"],
        "source": {"path": os.path.abspath(source), "sha256": source_sha, "bytes": os.path.getsize(source)},
        "variant_sha256": record["sha256"],
        "variant_bytes": record["bytes"],
        "tensors": edit["tensors"],
        "left_dense": edit["left_dense"],
        "cache": {
            "status": record["cache"],
            "dir": record["dir"],
            "build_s": record["build_s"],
            "rebuilt": record["rebuilt"],
        },
    }
    return CachedFile(provenance, record["path"], record["dir"], key)


def tensorwise(recipe: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``recipe`` with per-tensor weight scales: equal floats stay equal integers (clustering kept)."""
    out = []
    for entry in recipe:
        config = dict(entry.get("op_config") or {})
        if isinstance(config.get("weight_tensor_config"), dict):
            config["weight_tensor_config"] = {**config["weight_tensor_config"], "granularity": "TENSORWISE"}
        out.append({**entry, "op_config": config} if config else dict(entry))
    return out


class BrokenTensor(TypedDict):
    """An edited tensor that quantization changed: [before, after] of its zeros and distinct values."""

    name: str
    zeros: list[int]
    unique: list[int]


class KeptCheck(TypedDict):
    """``weights.after_quantization``: did the quantized model keep each edited tensor's zeros and
    distinct values (``held``), and which tensors did not (``broken``)."""

    checked: int
    of: int
    held: bool
    broken: list[BrokenTensor]
    unique_max: int | None


def check_kept(quantized: str, edited: dict[str, Any]) -> KeptCheck:
    """Read the quantized model's weights back: each edited tensor (by name) keeps at least its zeros
    and at most its distinct values. ``held`` false names the tensors that did not."""
    from evalharness.runtime.model_size import tensor_figures
    from evalharness.runtime.weights import real_values, weight_tensors

    buf, weights = weight_tensors(quantized)
    after = {w.name: tensor_figures(real_values(buf, w)) for w in weights}
    broken: list[BrokenTensor] = []
    checked = 0
    for t in edited["tensors"]:
        got = after.get(t["name"])
        if got is None:
            continue
        checked += 1
        if got["zeros"] < t["zeros"] or got["unique"] > t["unique"]:
            broken.append(
                {
                    "name": t["name"],
                    "zeros": [t["zeros"], got["zeros"]],
                    "unique": [t["unique"], got["unique"]],
                }
            )
    for b in broken:
        log.warning(
            "quantization changed the edited weights of %s (zeros, unique: before, after): %s", b["name"], b
        )
    return {
        "checked": checked,
        "of": len(edited["tensors"]),
        "held": not broken and checked > 0,
        "broken": broken,
        "unique_max": max(
            (after[t["name"]]["unique"] for t in edited["tensors"] if t["name"] in after), default=None
        ),
    }
