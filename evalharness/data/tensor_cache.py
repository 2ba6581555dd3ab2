"""Preprocessed-tensor cache: decode a dataset once, reuse it across delegates and runtimes.

One directory per key (dataset manifest hash + preprocessing recipe + input shape/dtype + the
decoder's versions + layout, hashed): ``tensors.npy`` (a memory-mapped [N, ...] array),
``crc32.npy`` and ``filled.npy`` per sample, each sample's source identity (``source_sha256.npy``,
``source_state.npy``) and ``key.json``. Derived state follows :mod:`evalharness.core.derived`: a
damaged file (0 bytes, truncated, garbage, another shape) or a ``key.json`` for another key
rebuilds the whole cache, said once; a sample is served only if its tensor's CRC-32 matches and its
source file is the one it was made from, else that sample is rebuilt.

Source identity, by content: each sample records the sha256 of its file's bytes (taken before the
decode) and the file's (size, mtime_ns, inode, ctime_ns). A read whose stat equals the recorded one
is served (any write or replacement moves ctime_ns, which ``cp -p`` / ``rsync -t`` do not restore);
a stat that differs makes the file be hashed again: the same bytes (a copy, a touch) refresh the
stat and serve, other bytes (an image replaced in place, even by one of the same size) rebuild the
sample. Measured on the 50 val50 JPEGs (31 KiB mean, ``benchmarks/bench_source_identity.py``): a
stat ~2 us per image, a sha256 of the file ~32 us, decode + resize ~1.3 ms, a warm read 11 us; so a
warm read pays one stat, not a hash, and a cold build one hash (docs/performance.md).
One writer at a time: concurrent runs that share a cache should build it once first.

Input identity, kept: each sample also keeps the two identity hashes of its tensor
(``loop/input_identity.py``: exact bytes and real values) in ``identity.npy``, a row of the
hashing's key tag (method, the model's input quantisation and the layout: another model may read
the same tensor as other real values) and both digests, and ``identity_crc.npy``, the CRC-32 of
that row continued from the tensor's own CRC. A row is trusted only with the tensor it was made
from (a rebuilt tensor of other bytes has another CRC, so its old row fails), and is handed out
only for the very array the cache served (:meth:`CachedTask.remembered`): a warm run feeds the
cached tensor and need not hash it again (the hashing was 0.2 ms of CPU per MobileNet v2 sample,
the warm loop's largest cost after invoke; docs/benchmarks.md, *Performance V*). A row of another
key tag is computed again and replaces it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, TypedDict

import numpy as np
import numpy.typing as npt

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.checksum import crc32_array, crc32_bytes
from evalharness.core.derived import DAMAGE, Damaged, file_state, read_or_rebuild, say_rebuilt, why
from evalharness.data.ground_truth import Member

LAYOUT = 3  # part of the key: a cache written with another file layout is another cache
_NO_STATE = (-1, -1, -1, -1)
IDENTITY_ROW = 8 + 32 + 32  # a sample's kept input identity: key tag, exact digest, real-values digest
_SERVED_PURGE = 1024  # served arrays remembered before the dead ones are dropped

Mapped = np.memmap[Any, np.dtype[Any]]  # one .npy file of the cache, mapped
SourceIdentity = tuple[tuple[int, ...], np.ndarray]  # a sample's source: (its stat, its sha256)
Source = str | Member  # where a sample's bytes lie: its own file, or a member of a container shard


class TensorCacheStats(TypedDict):
    """``provenance.dataset.cache``: what the cache served this run, and what it rebuilt."""

    dir: str
    hits: int
    misses: int
    corrupt_rebuilt: int
    stale_rebuilt: int
    identity_rehashed: int  # kept input identity rows that failed their CRC: hashed again, not used
    rebuilt: list[str]


class CacheableTask(Protocol):
    """What the cache asks of the task it wraps (a ``tasks.live.Task`` that is ``cacheable``)."""

    samples: Sequence[Any]

    def sample_id(self, sample: Any) -> str: ...

    def sample_sources(self) -> Iterable[Source]: ...

    def bind(self, inputs: Any, outputs: Any) -> None: ...

    def cache_key(self) -> dict[str, Any]: ...

    def prepare(self, sample: Any) -> list[np.ndarray]: ...


def source_digest(path: str) -> np.ndarray:
    """sha256 of a file's bytes as 32 uint8 (how a sample's source is recorded)."""
    with open(path, "rb") as f:
        return np.frombuffer(hashlib.sha256(f.read()).digest(), np.uint8)


def decoder_identity() -> dict[str, str | None]:
    """The image decoder's versions, part of the key: another Pillow or libjpeg-turbo may decode a
    JPEG to other pixels (the exact resize is not: its two implementations give the same bits)."""
    import PIL
    from PIL import features

    return {"pillow": PIL.__version__, "libjpeg_turbo": features.version("libjpeg_turbo")}


def _member_digest(member: Member) -> np.ndarray:
    return np.frombuffer(member.digest, np.uint8)


def _digest_or_none(path: str) -> np.ndarray | None:
    try:
        return source_digest(path)
    except OSError:
        return None


class TensorCache:
    def __init__(
        self, root: str, key: Mapping[str, Any], count: int, shape: tuple[int, ...], dtype: str
    ) -> None:
        text = json.dumps(
            {**key, "count": count, "shape": list(shape), "dtype": dtype, "layout": LAYOUT}, sort_keys=True
        )
        self.dir = os.path.join(os.path.expanduser(root), hashlib.sha256(text.encode()).hexdigest()[:24])
        self.rebuilt: list[str] = []  # why the whole cache was rebuilt (said once, in stats())
        self.hits = self.misses = self.corrupt = self.stale = self.rehashed = 0
        specs: dict[str, tuple[npt.DTypeLike, tuple[int, ...]]] = {
            "tensors": (dtype, (count, *shape)),
            "crc32": (np.uint32, (count,)),
            "filled": (np.uint8, (count,)),
            "source_sha256": (np.uint8, (count, 32)),
            "source_state": (np.int64, (count, 4)),
            "identity": (np.uint8, (count, IDENTITY_ROW)),
            "identity_crc": (np.uint32, (count,)),
        }
        arrays = None
        if os.path.isdir(self.dir):
            arrays = read_or_rebuild(
                f"tensor cache {self.dir}", lambda: self._open(text, specs), self.rebuilt
            )
            if arrays is None:
                shutil.rmtree(self.dir)
        if arrays is None:
            os.makedirs(self.dir, exist_ok=True)
            arrays = {n: self._map(n, "w+", dt, sh) for n, (dt, sh) in specs.items()}
            atomic_write_text(os.path.join(self.dir, "key.json"), text)
        self.data, self.crc, self.filled = arrays["tensors"], arrays["crc32"], arrays["filled"]
        self.source_sha, self.source_state = arrays["source_sha256"], arrays["source_state"]
        self.identity, self.identity_crc = arrays["identity"], arrays["identity_crc"]
        self._arrays = arrays
        # plain ndarray views of the same mappings for reading: indexing a memmap makes a memmap
        # object each time, several times the cost of the read on a cached run's critical path
        self._tensors, self._crcs, self._filled, self._states, self._rows, self._row_crcs = (
            np.asarray(a)
            for a in (self.data, self.crc, self.filled, self.source_state, self.identity, self.identity_crc)
        )

    def _map(self, name: str, mode: str, dtype: npt.DTypeLike, shape: tuple[int, ...]) -> Mapped:
        return np.lib.format.open_memmap(
            os.path.join(self.dir, f"{name}.npy"), mode, dtype=dtype, shape=shape
        )

    def _open(
        self, text: str, specs: Mapping[str, tuple[npt.DTypeLike, tuple[int, ...]]]
    ) -> dict[str, Mapped]:
        """The existing cache's arrays, each verified to be this key's shape and dtype."""
        with open(os.path.join(self.dir, "key.json"), encoding="utf-8") as f:
            if f.read() != text:
                raise Damaged("key.json was written for another key")
        arrays: dict[str, Mapped] = {}
        for name, (dtype, shape) in specs.items():
            try:
                arr = self._map(name, "r+", dtype, shape)  # r+ reads shape and dtype from the file
            except FileNotFoundError:  # key.json is written last: a crash cannot leave this
                raise Damaged(f"{name}.npy is missing beside key.json") from None
            except DAMAGE as exc:
                raise Damaged(f"{name}.npy {why(exc)}") from exc
            if arr.shape != shape or arr.dtype != np.dtype(dtype) or not arr.flags.c_contiguous:
                found = f"{arr.dtype}{list(arr.shape)}" + (
                    "" if arr.flags.c_contiguous else " in Fortran order"
                )
                raise Damaged(f"{name}.npy holds {found}, not {np.dtype(dtype)}{list(shape)}")
            arrays[name] = arr
        return arrays

    def get(self, i: int, source: Source) -> np.ndarray | None:
        """Sample ``i``'s tensor if it was made from ``source``'s current bytes and is intact."""
        if not self._filled[i]:
            self.misses += 1
            return None
        if isinstance(source, Member):  # its digest, taken when its shard was listed: no stat, no read
            if not np.array_equal(_member_digest(source), self.source_sha[i]):
                self._stale(i, source.where)
                return None
        else:
            state = file_state(source)
            if state is None or tuple(self._states[i]) != state:
                digest = None if state is None else _digest_or_none(source)
                if digest is None or not np.array_equal(digest, self.source_sha[i]):
                    self._stale(i, source)
                    return None
                self.source_state[i] = state  # same bytes, new stat (a copy, a touch): verified, served
        # verified and served as one copy: a later write cannot change it
        arr: np.ndarray = self._tensors[i].copy()
        if crc32_array(arr) != int(self._crcs[i]):
            self.filled[i] = 0
            self.corrupt += 1
            self.misses += 1
            if self.corrupt == 1:  # said once, as a stale source is; the count is in stats()
                say_rebuilt(f"tensor cache {self.dir}", f"sample {i}'s tensor fails its CRC-32")
            return None
        self.hits += 1
        return arr

    def _stale(self, i: int, where: str) -> None:
        """Sample ``i``'s tensor was made from other bytes than its source holds now: rebuilt."""
        self.filled[i] = 0
        self.stale += 1
        self.misses += 1
        if self.stale == 1:  # said once; the count is in stats()
            say_rebuilt(f"tensor cache {self.dir}", f"{where} changed since its tensor was cached")

    def source_identity(self, source: Source) -> SourceIdentity | None:
        """(stat, sha256) of a sample's source, taken BEFORE it is decoded: a write during the decode
        leaves a stat that the next read sees differ, and a digest that then fails to match. None
        when it cannot be read (the task's own read then says why). A container's member: the
        digest taken when its shard was listed (the reader checks the bytes it decodes against it)."""
        if isinstance(source, Member):
            return _NO_STATE, _member_digest(source)
        digest = _digest_or_none(source)
        return None if digest is None else (file_state(source) or _NO_STATE, digest)

    def put(self, i: int, arr: np.ndarray, identity: SourceIdentity | None) -> None:
        if identity is None:
            return
        self.identity_crc[i], self.identity[i] = 0, 0  # no row kept for the new tensor (yet)
        self.data[i] = arr
        self.crc[i] = crc32_array(self.data[i])
        self.source_state[i], self.source_sha[i] = identity
        self.filled[i] = 1  # set last: a kill before this line leaves the sample unfilled

    def kept_identity(self, i: int) -> bytes | None:
        """Sample ``i``'s kept identity row (:data:`IDENTITY_ROW` bytes) if it was made from the
        tensor now cached (its CRC-32 continued from the tensor's), else None. For a served sample."""
        row: bytes = self._rows[i].tobytes()
        kept = int(self._row_crcs[i])
        if kept == 0 and not any(row):  # none kept: the tensor was never hashed since it was cached
            return None
        if crc32_bytes(row, int(self._crcs[i])) == kept:
            return row
        self.rehashed += 1  # damaged, or not of this tensor: hashed again, the count in stats()
        if self.rehashed == 1:
            say_rebuilt(f"tensor cache {self.dir}", f"sample {i}'s kept input identity fails its CRC")
        return None

    def keep_identity(self, i: int, row: bytes) -> None:
        """Keep ``row`` as the identity of sample ``i``'s cached tensor (the row first, its CRC last:
        a kill between them leaves a row that fails its CRC, computed again next time)."""
        self.identity[i] = np.frombuffer(row, np.uint8)
        self.identity_crc[i] = crc32_bytes(row, int(self.crc[i]))

    def flush(self) -> None:
        for array in self._arrays.values():
            array.flush()

    def stats(self) -> TensorCacheStats:
        return {
            "dir": self.dir,
            "hits": self.hits,
            "misses": self.misses,
            "corrupt_rebuilt": self.corrupt,
            "stale_rebuilt": self.stale,
            "identity_rehashed": self.rehashed,
            "rebuilt": self.rebuilt,
        }


class CachedTask:
    """Wraps a task whose ``prepare`` yields one input tensor per sample from a dataset of images
    (``sample_sources()`` lists each sample's file or container member, in sample order)."""

    def __init__(self, task: CacheableTask, root: str) -> None:
        self._task, self._root = task, root
        self.cache: TensorCache | None = None  # made by bind(), once the model's input is known
        self._index = {task.sample_id(s): i for i, s in enumerate(task.samples)}
        self._sources = list(task.sample_sources())
        # sample index -> (the array served for it, its kept identity row or None), until the loop
        # hashes it (remembered / remember); weak: an array never hashed is not held here
        self._served: dict[int, tuple[weakref.ref[np.ndarray], bytes | None]] = {}
        self._serving = threading.Lock()  # preparing threads, lanes and the loop serve and unserve at once

    def __getattr__(self, name: str) -> Any:
        return getattr(self._task, name)

    def bind(self, inputs: Sequence[Any], outputs: Sequence[Any]) -> None:
        self._task.bind(inputs, outputs)
        (info,) = inputs
        key = {**self._task.cache_key(), "decoder": decoder_identity()}
        self.cache = TensorCache(self._root, key, len(self._index), info.shape, info.dtype)

    def prepare(self, sample: Any) -> list[np.ndarray]:
        assert self.cache is not None, "bind() comes before prepare()"
        i = self._index[self._task.sample_id(sample)]
        source = self._sources[i]
        arr = self.cache.get(i, source)
        if arr is not None:
            self._serve(i, arr, self.cache.kept_identity(i))
            return [arr]
        identity = self.cache.source_identity(source)
        (arr,) = self._task.prepare(sample)
        self.cache.put(i, arr, identity)
        if identity is not None:  # cached now: its identity is kept once the loop has hashed it
            self._serve(i, arr, None)
        return [arr]

    def _serve(self, i: int, arr: np.ndarray, row: bytes | None) -> None:
        with self._serving:  # another thread's insert would break the purge's iteration
            if len(self._served) >= _SERVED_PURGE:  # samples prepared and never hashed (a calibration's)
                self._served = {k: v for k, v in self._served.items() if v[0]() is not None}
            self._served[i] = (weakref.ref(arr), row)

    def _unserve(self, i: int) -> None:
        with self._serving:  # a purge on another thread iterates the map
            self._served.pop(i, None)

    def _served_as(self, sample: Any, tensors: list[np.ndarray]) -> tuple[int, bytes | None] | None:
        """(index, kept row) of ``sample`` if ``tensors`` is exactly the array the cache served for it."""
        i = self._index.get(self._task.sample_id(sample))
        served = None if i is None else self._served.get(i)
        if i is None or served is None or len(tensors) != 1 or served[0]() is not tensors[0]:
            return None
        return i, served[1]

    def remembered(self, sample: Any, tensors: list[np.ndarray], tag: bytes) -> bytes | None:
        """The identity row kept for ``sample`` under the key ``tag`` (its first bytes) when
        ``tensors`` is the very array served from the cache for it (verified there with the tensor),
        else None."""
        found = self._served_as(sample, tensors)
        if found is None or found[1] is None or not found[1].startswith(tag):
            return None
        self._unserve(found[0])
        return found[1]

    def remember(self, sample: Any, tensors: list[np.ndarray], row: bytes) -> None:
        """Keep ``row``, the identity the loop computed for ``tensors``, when they are the array the
        cache holds for ``sample``."""
        found = self._served_as(sample, tensors)
        if found is not None:
            self._unserve(found[0])
            assert self.cache is not None
            self.cache.keep_identity(found[0], row)
