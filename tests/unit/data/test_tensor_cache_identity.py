"""The tensor cache keeps each cached tensor's input identity hashes (data/tensor_cache.py): a warm run
fed the very tensor the cache served reads them instead of hashing again, with the values hashing
gives; another model's quantisation, a tensor other than the served one, or a damaged row is hashed."""

from __future__ import annotations

import os

import numpy as np
import pytest

from evalharness.core.tensors import TensorInfo
from evalharness.data.tensor_cache import CachedTask
from evalharness.loop import input_identity
from evalharness.loop.input_identity import InputIdentity

SHAPE = (1, 4, 4, 3)
INFO = TensorInfo("x", 0, SHAPE, "uint8", 0.0078125, 128)


class _Task:
    """Two samples, each a file whose first byte fills its tensor."""

    def __init__(self, folder) -> None:
        self.samples = []
        for k in range(2):
            path = folder / f"s{k}.jpg"
            if not path.exists():  # a later run's task finds the files as the test left them
                path.write_bytes(bytes([10 + k]) * 8)
            self.samples.append(str(path))
        self.prepared = 0

    def sample_id(self, sample):
        return sample

    def sample_sources(self):
        return list(self.samples)

    def bind(self, inputs, outputs) -> None:
        pass

    def cache_key(self):
        return {"task": "t"}

    def prepare(self, sample):
        self.prepared += 1
        with open(sample, "rb") as f:
            return [np.full(SHAPE, f.read(1)[0], np.uint8)]


def _cached(tmp_path) -> CachedTask:
    task = CachedTask(_Task(tmp_path), str(tmp_path / "cache"))  # type: ignore[arg-type]
    task.bind([INFO], [])
    return task


def _no_hashing(monkeypatch) -> None:
    def refused(*args, **kwargs):
        raise AssertionError("hashed again")

    monkeypatch.setattr(input_identity, "tensors_digest", refused)
    monkeypatch.setattr(input_identity, "real_digest", refused)


def test_a_warm_run_reads_the_kept_hashes_and_they_are_the_computed_ones(tmp_path, monkeypatch):
    cold = _cached(tmp_path)
    plain = InputIdentity([INFO], "nhwc")
    expected = {s: plain.of(cold._task.prepare(s)) for s in cold.samples}
    hashed = InputIdentity([INFO], "nhwc", cold)
    assert {s: hashed.of(cold.prepare(s), s) for s in cold.samples} == expected
    warm = _cached(tmp_path)
    _no_hashing(monkeypatch)
    assert {s: InputIdentity([INFO], "nhwc", warm).of(warm.prepare(s), s) for s in warm.samples} == expected
    assert warm._task.prepared == 0 and not warm._served  # served from the cache, forgotten once read


def test_another_quantisation_a_copy_or_a_damaged_row_is_hashed_again(tmp_path):
    cold = _cached(tmp_path)
    sample = cold.samples[0]
    InputIdentity([INFO], "nhwc", cold).of(cold.prepare(sample), sample)
    other = TensorInfo("x", 0, SHAPE, "uint8", 0.5, 3)  # another model reading the same cached tensor
    warm = _cached(tmp_path)
    fed = warm.prepare(sample)
    assert warm.remembered(sample, fed, InputIdentity([other], "nhwc").tag) is None
    assert warm.remembered(sample, [fed[0].copy()], InputIdentity([INFO], "nhwc").tag) is None
    assert InputIdentity([other], "nhwc", warm).of(fed, sample) == InputIdentity([other], "nhwc").of(fed)
    again = _cached(tmp_path)  # the other model's row replaced the first one's
    assert again.remembered(sample, again.prepare(sample), InputIdentity([other], "nhwc").tag) is not None
    assert again.cache is not None
    again.cache.identity[0, 20] ^= 1  # a damaged digest: its row fails its CRC
    again.cache.flush()
    damaged = _cached(tmp_path)
    assert damaged.remembered(sample, damaged.prepare(sample), InputIdentity([other], "nhwc").tag) is None
    assert damaged.cache is not None and damaged.cache.stats()["identity_rehashed"] == 1  # said, counted


@pytest.mark.parametrize("changed", [True, False])
def test_a_rebuilt_tensor_keeps_no_row_of_other_bytes(tmp_path, changed):
    cold = _cached(tmp_path)
    sample = cold.samples[0]
    InputIdentity([INFO], "nhwc", cold).of(cold.prepare(sample), sample)
    with open(sample, "r+b") as f:  # the source rewritten: its tensor is rebuilt (other or same bytes)
        f.write(bytes([99 if changed else 10]))
    os.utime(sample, ns=(1, 1))  # a new stat even within the file system's clock tick
    warm = _cached(tmp_path)
    fed = warm.prepare(sample)
    kept = warm.remembered(sample, fed, InputIdentity([INFO], "nhwc").tag)
    assert (kept is None) == changed and warm._task.prepared == changed
    assert warm.cache is not None and warm.cache.stats()["identity_rehashed"] == 0  # rebuilt: no row kept
