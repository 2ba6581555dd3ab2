"""The tensor cache serves a sample only if it was made from its source file's current bytes
(data/tensor_cache.py): a file replaced in place, even by one of the same size, is rebuilt; the same bytes
under a new stat (a touch, a copy back) are verified by content and served."""

from __future__ import annotations

import logging
import os

import numpy as np

from evalharness.data.tensor_cache import TensorCache

KEY = {"task": "t", "manifest": "m"}


def _cache(tmp_path) -> TensorCache:
    return TensorCache(str(tmp_path / "cache"), KEY, 2, (2,), "uint8")


def _put(cache, i, src, value) -> None:
    cache.put(i, np.full((2,), value, np.uint8), cache.source_identity(str(src)))
    cache.flush()


def test_a_same_size_replacement_in_place_is_not_served(tmp_path, caplog):
    src = tmp_path / "a.jpg"
    src.write_bytes(b"picture one")
    _put(_cache(tmp_path), 0, src, 1)
    src.write_bytes(b"picture two")  # same size, same inode, new bytes
    again = _cache(tmp_path)
    assert again.get(0, str(src)) is None
    assert again.stats()["stale_rebuilt"] == 1 and again.stats()["misses"] == 1
    assert sum("changed since its tensor was cached" in r.getMessage() for r in caplog.records) == 1


def test_a_same_size_replacement_with_the_old_mtime_is_not_served(tmp_path):
    src = tmp_path / "a.jpg"
    src.write_bytes(b"picture one")
    _put(_cache(tmp_path), 0, src, 1)
    st = os.stat(src)
    src.write_bytes(b"picture two")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as before (cp -p, rsync -t)
    assert _cache(tmp_path).get(0, str(src)) is None


def test_the_same_bytes_under_a_new_stat_are_verified_and_served(tmp_path, caplog):
    src = tmp_path / "a.jpg"
    src.write_bytes(b"picture one")
    _put(_cache(tmp_path), 0, src, 7)
    os.replace(src, tmp_path / "moved")
    (tmp_path / "a.jpg").write_bytes((tmp_path / "moved").read_bytes())  # a copy: new inode, same bytes
    again = _cache(tmp_path)
    assert (again.get(0, str(src)) == 7).all() and again.stats()["hits"] == 1
    assert (again.get(0, str(src)) == 7).all()  # the refreshed stat now serves without a hash
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_vanished_source_is_not_served(tmp_path):
    src = tmp_path / "a.jpg"
    src.write_bytes(b"picture one")
    _put(_cache(tmp_path), 0, src, 1)
    src.unlink()
    cache = _cache(tmp_path)
    assert cache.get(0, str(src)) is None and cache.source_identity(str(src)) is None
    cache.put(0, np.zeros((2,), np.uint8), None)  # unreadable source: nothing recorded
    assert not cache.filled[0]


def test_the_decoder_version_is_part_of_the_key(monkeypatch):
    import PIL

    from evalharness.data.tensor_cache import decoder_identity

    before = decoder_identity()
    monkeypatch.setattr(PIL, "__version__", "0.0-other")
    assert decoder_identity() != before and before["pillow"]


def test_a_container_member_is_served_by_its_listed_digest_and_not_when_it_differs(tmp_path, caplog):
    import hashlib

    from evalharness.data.ground_truth import Member

    def member(data: bytes) -> Member:
        return Member(str(tmp_path / "val.tar"), "a.png", 512, len(data), hashlib.sha256(data).digest())

    cache = _cache(tmp_path)
    cache.put(0, np.full((2,), 5, np.uint8), cache.source_identity(member(b"old bytes")))
    cache.flush()
    again = _cache(tmp_path)  # no shard file at all: a member is known by its digest, never stat'ed
    assert (again.get(0, member(b"old bytes")) == 5).all() and again.stats()["hits"] == 1
    with caplog.at_level(logging.WARNING):
        assert again.get(0, member(b"new bytes")) is None
    assert again.stats()["stale_rebuilt"] == 1 and "val.tar:a.png changed" in caplog.text
