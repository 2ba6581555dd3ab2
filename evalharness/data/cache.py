"""Preprocessed-tensor cache: decode a dataset once, reuse it across delegates and runtimes.

One directory per key (dataset manifest hash + preprocessing recipe + input shape/dtype, hashed):
``tensors.npy`` (a memory-mapped [N, ...] array), ``crc32.npy`` and ``filled.npy`` per sample, and
``key.json``. A sample is served only if its stored CRC-32 matches its bytes; a mismatch (a torn
write, disk corruption) or a key that does not match ``key.json`` rebuilds that sample or the whole
cache — the cache is never used wrongly. One writer at a time: concurrent runs that share a cache
should build it once first.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import numpy as np

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.checksum import crc32_array


class TensorCache:
    def __init__(self, root: str, key: dict, count: int, shape: tuple[int, ...], dtype: str) -> None:
        text = json.dumps({**key, "count": count, "shape": list(shape), "dtype": dtype}, sort_keys=True)
        self.dir = os.path.join(os.path.expanduser(root), hashlib.sha256(text.encode()).hexdigest()[:24])
        key_path = os.path.join(self.dir, "key.json")
        if os.path.isdir(self.dir):
            try:
                with open(key_path, encoding="utf-8") as f:
                    valid = f.read() == text
            except OSError:
                valid = False
            if not valid:
                shutil.rmtree(self.dir)
        fresh = not os.path.isdir(self.dir)
        os.makedirs(self.dir, exist_ok=True)
        mode = "w+" if fresh else "r+"
        path = os.path.join(self.dir, "{}.npy").format
        self.data = np.lib.format.open_memmap(path("tensors"), mode, dtype=dtype, shape=(count, *shape))
        self.crc = np.lib.format.open_memmap(path("crc32"), mode, dtype=np.uint32, shape=(count,))
        self.filled = np.lib.format.open_memmap(path("filled"), mode, dtype=np.uint8, shape=(count,))
        if fresh:
            atomic_write_text(key_path, text)
        # plain ndarray views of the same mappings for reading: indexing a memmap makes a memmap
        # object each time, several times the cost of the read on a cached run's critical path
        self._tensors, self._crcs, self._filled = (np.asarray(a) for a in (self.data, self.crc, self.filled))
        self.hits = self.misses = self.corrupt = 0

    def get(self, i: int) -> np.ndarray | None:
        if not self._filled[i]:
            self.misses += 1
            return None
        arr = self._tensors[i].copy()  # verified and served as one copy: a later write cannot change it
        if crc32_array(arr) != int(self._crcs[i]):
            self.filled[i] = 0
            self.corrupt += 1
            self.misses += 1
            return None
        self.hits += 1
        return arr

    def put(self, i: int, arr: np.ndarray) -> None:
        self.data[i] = arr
        self.crc[i] = crc32_array(self.data[i])
        self.filled[i] = 1  # set last: a kill before this line leaves the sample unfilled

    def flush(self) -> None:
        for array in (self.data, self.crc, self.filled):
            array.flush()

    def stats(self) -> dict:
        return {"dir": self.dir, "hits": self.hits, "misses": self.misses, "corrupt_rebuilt": self.corrupt}


class CachedTask:
    """Wraps a task whose ``prepare`` yields one input tensor per sample from a file dataset."""

    def __init__(self, task, root: str) -> None:
        self._task, self._root = task, root
        self.cache: TensorCache | None = None  # made by bind(), once the model's input is known
        self._index = {task.sample_id(s): i for i, s in enumerate(task.samples)}

    def __getattr__(self, name):
        return getattr(self._task, name)

    def bind(self, inputs, outputs) -> None:
        self._task.bind(inputs, outputs)
        (info,) = inputs
        self.cache = TensorCache(self._root, self._task.cache_key(), len(self._index), info.shape, info.dtype)

    def prepare(self, sample) -> list[np.ndarray]:
        assert self.cache is not None, "bind() comes before prepare()"
        i = self._index[self._task.sample_id(sample)]
        arr = self.cache.get(i)
        if arr is None:
            (arr,) = self._task.prepare(sample)
            self.cache.put(i, arr)
        return [arr]
