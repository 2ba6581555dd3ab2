"""A dataset's samples as columns, made into :class:`LabeledSample` objects one at a time.

Why columns: a run keeps its sample list from the listing to the end, so whatever one sample costs
is paid 50,000 times at ILSVRC size. As one object per image (a slotted record, its id string, a
:class:`Member` with its own name string and digest, two list slots) that was ~0.25 KB of peak RSS
per image (docs/benchmarks.md, *A whole run at ILSVRC size*); as columns it is the id's UTF-8 bytes
in one buffer, its end offset, one index into the dataset's few distinct labels, and for a
container's member one index into its few shard paths, its name's bytes, offset, length and the
32 bytes of its digest in buffers of their own. Nothing per image is a Python object.

:class:`SampleList` is a ``Sequence[LabeledSample]``: what iterates it, indexes it or takes its
length (the loop, sharding, resume, calibration slices, the manifest) works unchanged, and each
sample it hands out is made when asked for. A slice, a shard's or a split's part and a read plan's
order are views: the same columns and a list of positions (nothing for a plain slice: a ``range``).
Samples are values (a frozen dataclass): compare them with ``==``, never by identity, since the
same position gives a new object each time it is read.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, overload

# (label text, occurrence or None: the text alone, class index or None: given by name)
Label = tuple[str, int | None, int | None]
_NO_MEMBER = 0xFFFFFFFF  # the shard number of a sample in its own file


@dataclass(frozen=True, slots=True)
class Member:
    """Where one sample's encoded image lies inside a container shard.

    ``offset``/``length``: bytes in the shard (tar, TFRecord) or data page / row (parquet);
    ``digest``: sha256 of the encoded bytes, taken when the shard was listed (the manifest hashes
    it), kept as 32 bytes rather than 64 hex characters."""

    shard: str  # absolute path of the shard file
    name: str  # the member as a user finds it: tar member name, record or row index
    offset: int
    length: int
    digest: bytes

    @property
    def sha256(self) -> str:
        """The digest in hex, as manifests and indexes write it."""
        return self.digest.hex()

    @property
    def where(self) -> str:
        """``shard:member``, how every message names the sample."""
        return f"{self.shard}:{self.name}"


@dataclass(frozen=True, slots=True)
class LabeledSample:
    """One labeled image, as a :class:`SampleList` hands it out (made when read, not kept)."""

    root: str  # absolute image root, one string shared by the samples of a dataset
    key: str  # path relative to the image root, posix separators: stable identity of the sample
    label: str  # ground-truth label TEXT, e.g. "tench, Tinca tinca"
    # rank among classes with the same text in the dataset's class list; None: the text alone (a csv,
    # a folder name), which must then name one class of the model's label list
    occurrence: int | None = None
    # the class index the ground truth gives (in its class list's numbering); None: given by name only
    index: int | None = None
    member: Member | None = None  # inside a container shard (dataset_reader.py); None: root/key

    @property
    def path(self) -> str:
        """The absolute image path (``shard:member`` of a sample inside a container)."""
        return os.path.join(self.root, self.key) if self.member is None else self.member.where


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a file name os.listdir decoded with surrogates


class _Blobs:
    """Many byte strings in one buffer, end to end, and where each ends."""

    __slots__ = ("data", "ends")

    def __init__(self) -> None:
        self.data = bytearray()
        self.ends = array("q")

    def __len__(self) -> int:
        return len(self.ends)

    def add(self, blob: bytes) -> None:
        self.data += blob
        self.ends.append(len(self.data))

    def raw(self, i: int) -> bytes:
        """Blob ``i`` (of strings: ordered as the strings are, UTF-8 keeps code point order)."""
        return bytes(self.data[self.ends[i - 1] if i else 0 : self.ends[i]])

    def text(self, i: int) -> str:
        return self.raw(i).decode("utf-8", "surrogatepass")


class SampleColumns:
    """The columns of one dataset's listing, appended sample by sample (:meth:`add`); read through a
    :class:`SampleList`. Label tuples and shard paths are kept once each, numbered; a folder's
    samples (no member) have no member columns at all."""

    def __init__(self, root: str) -> None:
        self.root = root
        # a sample under another root (a plug-in reader's): the roots numbered, one a sample from then
        self.roots = [root]
        self.root_of = array("I")
        self.keys = _Blobs()
        self.labels: list[Label] = []
        self._label_ids: dict[Label, int] = {}
        self.label_of = array("I")
        # members: none until one is added (then one row per sample, _NO_MEMBER for a file's)
        self.shards: list[str] = []
        self._shard_ids: dict[str, int] = {}
        self.shard_of = array("I")
        self.names = _Blobs()
        self.offsets = array("q")
        self.lengths = array("q")
        self.digests = _Blobs()

    def __len__(self) -> int:
        return len(self.label_of)

    def add(self, key: str, label: Label, member: Member | None = None, root: str | None = None) -> None:
        root = root or self.root
        if root != self.root or len(self.root_of):
            if not len(self.root_of):
                self.root_of.extend([0] * len(self))
            if root not in self.roots:
                self.roots.append(root)
            self.root_of.append(self.roots.index(root))
        self.keys.add(_utf8(key))
        label_id = self._label_ids.setdefault(label, len(self.labels))
        if label_id == len(self.labels):
            self.labels.append(label)
        self.label_of.append(label_id)
        if member is None:
            if len(self.shard_of):
                self._add_member(_NO_MEMBER, b"", 0, 0, b"")
            return
        while len(self.shard_of) < len(self.label_of) - 1:  # the files listed before the first member
            self._add_member(_NO_MEMBER, b"", 0, 0, b"")
        shard = self._shard_ids.setdefault(member.shard, len(self.shards))
        if shard == len(self.shards):
            self.shards.append(member.shard)
        self._add_member(shard, _utf8(member.name), member.offset, member.length, member.digest)

    def _add_member(self, shard: int, name: bytes, offset: int, length: int, digest: bytes) -> None:
        self.shard_of.append(shard)
        self.names.add(name)
        self.offsets.append(offset)
        self.lengths.append(length)
        self.digests.add(digest)

    def member(self, i: int) -> Member | None:
        if i >= len(self.shard_of) or self.shard_of[i] == _NO_MEMBER:
            return None
        shard = self.shards[self.shard_of[i]]
        return Member(shard, self.names.text(i), self.offsets[i], self.lengths[i], self.digests.raw(i))

    def sample(self, i: int) -> LabeledSample:
        text, occurrence, index = self.labels[self.label_of[i]]
        root = self.roots[self.root_of[i]] if len(self.root_of) else self.root
        return LabeledSample(root, self.keys.text(i), text, occurrence, index, self.member(i))


Positions = range | array  # type: ignore[type-arg]  # positions in the columns: range or array("q")


class SampleList(Sequence[LabeledSample]):
    """Samples in columns (:class:`SampleColumns`) at ``positions`` (default: all, in listing order)."""

    __slots__ = ("columns", "positions")

    def __init__(self, columns: SampleColumns, positions: Positions | None = None) -> None:
        self.columns = columns
        self.positions: Positions = range(len(columns)) if positions is None else positions

    @classmethod
    def of(cls, samples: Iterable[LabeledSample], root: str = "") -> SampleList:
        """A list of samples as columns (``root``: the root of them all, else each sample's own)."""
        columns: SampleColumns | None = None
        for s in samples:
            if columns is None:
                columns = SampleColumns(root or s.root)
            columns.add(s.key, (s.label, s.occurrence, s.index), s.member, root or s.root)
        return cls(columns if columns is not None else SampleColumns(root))

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, i: int) -> LabeledSample: ...
    @overload
    def __getitem__(self, i: slice) -> SampleList: ...
    def __getitem__(self, i: int | slice) -> LabeledSample | SampleList:
        if isinstance(i, slice):
            return SampleList(self.columns, self.positions[i])
        return self.columns.sample(self.positions[i])

    def __iter__(self) -> Iterator[LabeledSample]:
        sample = self.columns.sample
        return (sample(p) for p in self.positions)

    def __eq__(self, other: object) -> bool:
        """Sample by sample, as a list of them compares (a list of samples compares equal)."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable columns: unhashable, as a list

    def __repr__(self) -> str:
        return f"SampleList({len(self)} samples of {self.columns.root})"

    def key(self, i: int) -> str:
        """Sample ``i``'s id without making the sample."""
        return self.columns.keys.text(self.positions[i])

    def keys(self) -> Iterator[str]:
        text = self.columns.keys.text
        return (text(p) for p in self.positions)

    def picked(self, indices: Iterable[int]) -> SampleList:
        """The samples at ``indices`` of this list, in that order (a view of the same columns)."""
        positions = self.positions
        return SampleList(self.columns, array("q", (positions[i] for i in indices)))

    def sorted_by_key(self) -> SampleList:
        """The samples in key order, stably (ties keep this list's order); this list when it is."""
        raw = self.columns.keys.raw
        if all(raw(a) <= raw(b) for a, b in pairwise(self.positions)):
            return self
        return SampleList(self.columns, array("q", sorted(self.positions, key=raw)))

    def sorted_by(self, key: Callable[[LabeledSample], Any]) -> SampleList:
        """The samples sorted (stably) by ``key`` of each."""
        sample = self.columns.sample
        return SampleList(self.columns, array("q", sorted(self.positions, key=lambda p: key(sample(p)))))


def first_of_each_label(samples: Iterable[LabeledSample]) -> Iterator[LabeledSample]:
    """The first sample of each distinct label (text, occurrence, index), in list order: of a
    :class:`SampleList`, a dataset's few classes found without making every sample."""
    if isinstance(samples, SampleList):
        seen: set[int] = set()
        label_of, sample = samples.columns.label_of, samples.columns.sample
        for p in samples.positions:
            if label_of[p] not in seen:
                seen.add(label_of[p])
                yield sample(p)
        return
    labels: set[Label] = set()
    for s in samples:
        if (s.label, s.occurrence, s.index) not in labels:
            labels.add((s.label, s.occurrence, s.index))
            yield s


def samples_of(found: Sequence[LabeledSample]) -> SampleList:
    """``found`` as a :class:`SampleList` (itself when it is one)."""
    return found if isinstance(found, SampleList) else SampleList.of(found)


def pick(items: Sequence[Any], indices: Iterable[int]) -> Sequence[Any]:
    """The items at ``indices``: a view of a :class:`SampleList`, else a list."""
    if isinstance(items, SampleList):
        return items.picked(indices)
    return [items[i] for i in indices]
