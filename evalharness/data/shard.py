"""Fixing a task's sample list: ``num_images`` first, then ``dataset.shard``.

Every dataset task builds its sample list through :func:`select_samples`, so ``num_images`` and
sharding mean the same thing for every task. The list being sharded is the task's own sorted order
(ImageNet: file name; COCO: ascending image id) cut to ``num_images``. Schemes:

- ``interleaved`` (default): shard *i* of *n* takes positions i, i+n, i+2n, ... of that list, so
  every shard sees a similar mix of the dataset and shard sizes differ by at most one;
- ``contiguous``: shard *i* takes the i-th of *n* consecutive blocks (sizes differ by at most one,
  the larger blocks first, as ``numpy.array_split``);
- ``files`` (a container: parquet, webdataset, TFRecord): shard *i* takes the samples of shard files
  i, i+n, ... of the container's sorted files, so each process reads whole files and no other.

A shard's metrics.json records the shard and the identity (count + manifest hash) of the whole
list it was cut from, so ``report merge`` can prove that the shards it joins cover it exactly once.

A :class:`Split` (derived by ``quant.max_drop`` or a calibration drawn from the dataset, never set
by hand) comes between the two: the list cut to ``num_images`` is split into a *search* part (what
a quantized variant is calibrated and searched on) and the *held-out* rest, and a run sees one
part only, so what it reports on never served to build the model.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, TypedDict, TypeVar

from evalharness.core.errors import ConfigError
from evalharness.data.manifest import SamplesIdentity, samples_identity
from evalharness.data.samples import pick

SCHEMES = ("interleaved", "contiguous", "files")
PARTS = ("search", "held_out")


T = TypeVar("T")  # a sample, whatever the dataset reader makes of one


class _Split(TypedDict):
    fraction: float
    scheme: str
    part: str


class SplitRecord(_Split, total=False):
    """``provenance.dataset.split``: the split a run's samples were cut by, and (``whole``) the
    count and manifest hash of the list it was cut from."""

    whole: dict[str, Any]


class ShardIdentity(TypedDict):
    """``provenance.dataset.shard``: which interleaved part of the list a run scored, and the
    identity of the whole (unsharded) list."""

    index: int
    count: int
    scheme: str
    full_count: int
    full_manifest_sha256: str


class _SplitPart(TypedDict, total=False):
    split: SplitRecord  # a run on one part of a split list


class ShardedIdentity(SamplesIdentity, _SplitPart):
    """The dataset provenance fields of :func:`sharded_identity`: this run's samples, its split and shard."""

    shard: ShardIdentity


@dataclass(frozen=True)
class Split:
    """The search part (``fraction`` of the list, spread as ``scheme`` says) and the held-out rest.

    ``interleaved``: position i is in the search part when ceil((i + 1) * fraction) moves past
    ceil(i * fraction), in exact arithmetic (fraction 0.5: every other image, starting with the
    first; 0.25: positions 0, 4, 8, ...); ``contiguous``: the first round(n * fraction) positions."""

    fraction: float = 0.5
    scheme: str = "interleaved"
    part: str = "held_out"

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> Split | None:
        if not raw:
            return None
        split = cls(float(raw["fraction"]), str(raw.get("scheme", "interleaved")), str(raw["part"]))
        if not 0 < split.fraction < 1 or split.scheme not in SCHEMES or split.part not in PARTS:
            raise ConfigError(
                f"quant.search.fraction={split.fraction} (scheme {split.scheme}, part {split.part}): a "
                f"split needs a fraction in (0, 1), a scheme of {', '.join(SCHEMES)} and a part of "
                f"{', '.join(PARTS)}; use quant.search.fraction=0.5"
            )
        return split

    def in_search(self, n: int) -> list[bool]:
        if self.scheme == "contiguous":
            cut = round(n * self.fraction)
            return [i < cut for i in range(n)]
        f = Fraction(repr(self.fraction))
        return [math.ceil((i + 1) * f) > math.ceil(i * f) for i in range(n)]

    def take(self, items: Sequence[T]) -> Sequence[T]:
        want = self.part == "search"
        flags = self.in_search(len(items))
        return pick(items, (i for i, searched in enumerate(flags) if searched == want))

    def record(self) -> SplitRecord:
        return {"fraction": self.fraction, "scheme": self.scheme, "part": self.part}


@dataclass(frozen=True)
class Shard:
    index: int = 0
    count: int = 1
    scheme: str = "interleaved"
    split: Split | None = None  # applied before the shard: see Split

    @classmethod
    def from_config(cls, dataset: Mapping[str, Any]) -> Shard:
        raw = dataset.get("shard") or {}
        shard = cls(
            int(raw.get("index", 0)),
            int(raw.get("count", 1)),
            str(raw.get("scheme", "interleaved")),
            Split.from_config(dataset.get("split")),
        )
        if shard.count < 1:
            raise ConfigError(f"dataset.shard.count={shard.count}: use 1 (no sharding) or more")
        if not 0 <= shard.index < shard.count:
            raise ConfigError(
                f"dataset.shard.index={shard.index} with dataset.shard.count={shard.count}: "
                f"use 0..{shard.count - 1}"
            )
        if shard.scheme not in SCHEMES:
            raise ConfigError(f"dataset.shard.scheme={shard.scheme!r}; use one of {', '.join(SCHEMES)}")
        return shard

    def take(self, items: Sequence[T], group: Callable[[T], str | None] | None = None) -> Sequence[T]:
        """This shard's part of ``items`` (of a :class:`~evalharness.data.samples.SampleList`: a view
        of its columns, no copy of the samples); ``group``: the file a sample is read from (scheme files)."""
        if self.scheme == "files":
            return self._whole_files(items, group)
        if self.scheme == "interleaved":
            return items[self.index :: self.count]
        size, extra = divmod(len(items), self.count)
        start = self.index * size + min(self.index, extra)
        return items[start : start + size + (1 if self.index < extra else 0)]

    def _whole_files(self, items: Sequence[T], group: Callable[[T], str | None] | None) -> Sequence[T]:
        found = {group(item) for item in items} if group is not None else set()
        files = sorted(f for f in found if f is not None)
        if not files:
            raise ConfigError(
                "dataset.shard.scheme=files splits a container's shard files (parquet, webdataset, "
                "tfrecord); for a folder use scheme=interleaved or contiguous"
            )
        if len(files) < self.count:
            raise ConfigError(
                f"dataset.shard.scheme=files: {len(files)} shard file(s) cannot make "
                f"dataset.shard.count={self.count} shards; use at most {len(files)} or scheme=interleaved"
            )
        mine = set(files[self.index :: self.count])
        assert group is not None
        return pick(items, (i for i, item in enumerate(items) if group(item) in mine))


def select_samples(
    samples: Sequence[T],
    num_images: int,
    shard: Shard,
    source: str,
    group: Callable[[T], str | None] | None = None,
) -> tuple[Sequence[T], Sequence[T]]:
    """(this run's samples, the whole list they were cut from): first ``num_images``, then the split's
    part (when the run has a split), then the shard.

    ``source`` names where the samples come from, for the error message; ``group``: the file each
    sample is read from (``dataset.shard.scheme=files``).
    """
    if num_images < 0 or num_images > len(samples):
        raise ConfigError(
            f"task.num_images={num_images} but {source} has {len(samples)} images; use 0 for all"
        )
    full = listed(samples, num_images)
    if shard.split is not None:
        full = shard.split.take(full)
        if not full:
            raise ConfigError(
                f"the {shard.split.part} part of a split at fraction {shard.split.fraction} of "
                f"{source} is empty; use more images (task.num_images) or another quant.search.fraction"
            )
    selected = shard.take(full, group)
    if not selected:
        raise ConfigError(
            f"dataset.shard.index={shard.index} of {shard.count} selects no image of {len(full)}; "
            "use fewer shards"
        )
    return selected, full


def listed(samples: Sequence[T], num_images: int) -> Sequence[T]:
    """The list a run's samples are cut from: the first ``num_images`` (0: all), before any split
    (a slice: of a sample list, a view)."""
    return samples[:num_images] if num_images else samples


def sharded_identity(
    selected: Sequence[Any],
    full: Sequence[Any],
    shard: Shard,
    entry: Callable[[Any], tuple[str, Any]],
    before_split: Sequence[Any] | None = None,
    content: bool = False,
) -> ShardedIdentity:
    """Dataset provenance fields: this run's count + manifest hash, and the shard with the identity of
    the whole (unsharded) list. ``entry`` maps a sample to its (dataset-relative key, path);
    ``content``: hash the samples' content (a container's stored sha256s), not relative path + size.

    ``before_split``: the list a split was cut from (:func:`listed`); its identity is recorded as
    ``split.whole``, so a report can prove that a run on the held-out part scored a subset of
    another run's images, the same files (``report diff`` then pairs the two on the shared images)."""
    mine = samples_identity(selected, entry, content)
    whole = mine if shard.count == 1 else samples_identity(full, entry, content)
    part: ShardIdentity = {
        "index": shard.index,
        "count": shard.count,
        "scheme": shard.scheme,
        "full_count": whole["count"],
        "full_manifest_sha256": whole["manifest_sha256"],
    }
    if shard.split is None:  # the fields one by one: mypy wants an optional key in a ** item
        return {
            "count": mine["count"],
            "manifest_sha256": mine["manifest_sha256"],
            "manifest_kind": mine["manifest_kind"],
            "shard": part,
        }
    split = shard.split.record()
    if before_split is not None:
        identity = samples_identity(before_split, entry, content)
        split["whole"] = {"count": identity["count"], "manifest_sha256": identity["manifest_sha256"]}
    return {**mine, "split": split, "shard": part}
