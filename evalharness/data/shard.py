"""Fixing a task's sample list: ``num_images`` first, then ``dataset.shard``.

Every dataset task builds its sample list through :func:`select_samples`, so ``num_images`` and
sharding mean the same thing for every task. The list being sharded is the task's own sorted order
(ImageNet: file name; COCO: ascending image id) cut to ``num_images``. Schemes:

- ``interleaved`` (default): shard *i* of *n* takes positions i, i+n, i+2n, ... of that list, so
  every shard sees a similar mix of the dataset and shard sizes differ by at most one;
- ``contiguous``: shard *i* takes the i-th of *n* consecutive blocks (sizes differ by at most one,
  the larger blocks first, as ``numpy.array_split``).

A shard's metrics.json records the shard and the identity (count + manifest hash) of the whole
list it was cut from, so ``report merge`` can prove that the shards it joins cover it exactly once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalharness.core.errors import ConfigError
from evalharness.data.manifest import samples_identity

SCHEMES = ("interleaved", "contiguous")


@dataclass(frozen=True)
class Shard:
    index: int = 0
    count: int = 1
    scheme: str = "interleaved"

    @classmethod
    def from_config(cls, dataset: dict) -> Shard:
        raw = dataset.get("shard") or {}
        shard = cls(int(raw.get("index", 0)), int(raw.get("count", 1)), str(raw.get("scheme", "interleaved")))
        if shard.count < 1:
            raise ConfigError(f"dataset.shard.count={shard.count}: use 1 (no sharding) or more")
        if not 0 <= shard.index < shard.count:
            raise ConfigError(
                f"dataset.shard.index={shard.index} with dataset.shard.count={shard.count}: "
                f"use 0..{shard.count - 1}"
            )
        if shard.scheme not in SCHEMES:
            raise ConfigError(f"dataset.shard.scheme={shard.scheme!r}; valid: {', '.join(SCHEMES)}")
        return shard

    def take(self, items: Sequence[Any]) -> list:
        if self.scheme == "interleaved":
            return list(items[self.index :: self.count])
        size, extra = divmod(len(items), self.count)
        start = self.index * size + min(self.index, extra)
        return list(items[start : start + size + (1 if self.index < extra else 0)])


def select_samples(samples: Sequence[Any], num_images: int, shard: Shard, source: str) -> tuple[list, list]:
    """(this run's samples, the whole list they were cut from): first ``num_images``, then the shard.

    ``source`` names where the samples come from, for the error message.
    """
    if num_images < 0 or num_images > len(samples):
        raise ConfigError(
            f"task.num_images={num_images} but {source} has {len(samples)} images; use 0 for all"
        )
    full = list(samples[:num_images] if num_images else samples)
    selected = shard.take(full)
    if not selected:
        raise ConfigError(
            f"dataset.shard.index={shard.index} of {shard.count} selects no image of {len(full)}; "
            "use fewer shards"
        )
    return selected, full


def sharded_identity(
    selected: Sequence[Any], full: Sequence[Any], shard: Shard, entry: Callable[[Any], tuple[str, str]]
) -> dict:
    """Dataset provenance fields: this run's count + manifest hash, and the shard with the identity of
    the whole (unsharded) list. ``entry`` maps a sample to its (dataset-relative key, path)."""
    mine = samples_identity(selected, entry)
    whole = mine if shard.count == 1 else samples_identity(full, entry)
    return {
        **mine,
        "shard": {
            "index": shard.index,
            "count": shard.count,
            "scheme": shard.scheme,
            "full_count": whole["count"],
            "full_manifest_sha256": whole["manifest_sha256"],
        },
    }
