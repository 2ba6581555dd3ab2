"""One rule for every store of derived state (core/derived.py): a damaged entry of any store is
rebuilt and said once, never used and never an internal error. Generated: each file of each store x
each kind of damage. No assets: the stores are driven directly."""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from evalharness.core.variant_cache import cached_model
from evalharness.data.tensor_cache import TensorCache
from evalharness.runtime.compile_cache import CacheProbe

KEY = {"task": "t", "manifest": "m", "preprocessing": {"resize": "bilinear"}}
SHAPE, DTYPE, COUNT = (2, 3), "uint8", 3
NPY_FILES = ("tensors", "crc32", "filled", "source_sha256", "source_state")


def _damage(path, how: str) -> None:
    """Write one kind of damage over ``path``."""
    data = Path(path).read_bytes() if os.path.exists(path) else b""
    damaged = {
        "empty": b"",  # a crash before the first write
        "truncated": data[: max(len(data) // 2, 1)],
        "garbage": os.urandom(max(len(data), 64)),
        "list": b"[]",
        "object": b"{}",
        "string": b'"text"',
        "number": b"7",
        "binary": b"\xff\xfe\x00{",  # not UTF-8
    }[how]
    with open(path, "wb") as f:
        f.write(damaged)


def _sources(tmp_path) -> list[str]:
    paths = []
    for i in range(COUNT):
        p = tmp_path / f"img{i}.jpg"
        p.write_bytes(bytes([i]) * 50)
        paths.append(str(p))
    return paths


def _filled(root, sources) -> TensorCache:
    cache = TensorCache(str(root), KEY, COUNT, SHAPE, DTYPE)
    for i, src in enumerate(sources):
        cache.put(i, np.full(SHAPE, i + 1, np.uint8), cache.source_identity(src))
    cache.flush()
    return cache


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage", "list"])
@pytest.mark.parametrize("name", NPY_FILES)
def test_a_damaged_tensor_cache_file_rebuilds_the_cache(tmp_path, caplog, name, how):
    sources = _sources(tmp_path)
    first = _filled(tmp_path / "cache", sources)
    _damage(os.path.join(first.dir, f"{name}.npy"), how)
    again = TensorCache(str(tmp_path / "cache"), KEY, COUNT, SHAPE, DTYPE)
    assert [again.get(i, s) for i, s in enumerate(sources)] == [None] * COUNT  # nothing served
    assert len(again.stats()["rebuilt"]) == 1 and f"{name}.npy" in again.stats()["rebuilt"][0]
    assert len(_warnings(caplog)) == 1 and "rebuilt, not used" in _warnings(caplog)[0]
    again.put(0, np.full(SHAPE, 9, np.uint8), again.source_identity(sources[0]))
    assert (again.get(0, sources[0]) == 9).all()


def test_an_npy_file_of_another_shape_is_damage(tmp_path, caplog):
    sources = _sources(tmp_path)
    first = _filled(tmp_path / "cache", sources)
    np.save(os.path.join(first.dir, "crc32.npy"), np.zeros(COUNT + 1, np.uint32))  # a valid .npy, wrong shape
    again = TensorCache(str(tmp_path / "cache"), KEY, COUNT, SHAPE, DTYPE)
    assert again.get(0, sources[0]) is None
    assert "crc32.npy holds uint32[4]" in again.stats()["rebuilt"][0]


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage", "list", "object", "string", "binary"])
def test_a_damaged_key_file_rebuilds_the_cache(tmp_path, caplog, how):
    sources = _sources(tmp_path)
    first = _filled(tmp_path / "cache", sources)
    _damage(os.path.join(first.dir, "key.json"), how)
    again = TensorCache(str(tmp_path / "cache"), KEY, COUNT, SHAPE, DTYPE)
    assert again.get(1, sources[1]) is None and len(again.stats()["rebuilt"]) == 1
    assert len(_warnings(caplog)) == 1


def test_a_build_cut_short_by_a_crash_is_a_plain_miss(tmp_path, caplog):
    sources = _sources(tmp_path)
    first = _filled(tmp_path / "cache", sources)
    os.unlink(os.path.join(first.dir, "key.json"))  # written last: arrays without it are a cut build
    again = TensorCache(str(tmp_path / "cache"), KEY, COUNT, SHAPE, DTYPE)
    assert again.get(0, sources[0]) is None and again.stats()["rebuilt"] == [] and not _warnings(caplog)


def test_an_array_missing_beside_its_key_is_damage(tmp_path, caplog):
    sources = _sources(tmp_path)
    first = _filled(tmp_path / "cache", sources)
    os.unlink(os.path.join(first.dir, "filled.npy"))
    again = TensorCache(str(tmp_path / "cache"), KEY, COUNT, SHAPE, DTYPE)
    assert again.get(0, sources[0]) is None and "filled.npy is missing" in again.stats()["rebuilt"][0]
    assert len(_warnings(caplog)) == 1


def _build(calls: list, data: bytes = b"model bytes"):
    def build(folder: str):
        calls.append(folder)
        return data, {"extra": 1}

    return build


@pytest.mark.parametrize(
    "how", ["empty", "truncated", "garbage", "list", "object", "string", "number", "binary"]
)
@pytest.mark.parametrize("record_name", ["variant.json", "compiled.json"])
def test_a_damaged_variant_record_is_rebuilt(tmp_path, caplog, record_name, how):
    calls: list = []
    first = cached_model(str(tmp_path), "quant", {"k": 1}, _build(calls), record_name=record_name)
    _damage(os.path.join(first["dir"], record_name), how)
    again = cached_model(str(tmp_path), "quant", {"k": 1}, _build(calls), record_name=record_name)
    assert again["cache"] == "built" and len(calls) == 2
    assert len(_warnings(caplog)) == 1 and again["rebuilt"] == _warnings(caplog)  # said once, recorded
    assert (
        cached_model(str(tmp_path), "quant", {"k": 1}, _build(calls), record_name=record_name)["cache"]
        == "hit"
    )


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage"])
def test_a_damaged_variant_model_is_rebuilt(tmp_path, caplog, how):
    calls: list = []
    first = cached_model(str(tmp_path), "quant", {"k": 1}, _build(calls))
    _damage(first["path"], how)
    again = cached_model(str(tmp_path), "quant", {"k": 1}, _build(calls))
    assert again["cache"] == "built" and len(calls) == 2 and len(_warnings(caplog)) == 1
    assert Path(again["path"]).read_bytes() == b"model bytes"


def test_a_variant_record_for_another_key_is_rebuilt(tmp_path, caplog):
    calls: list = []
    first = cached_model(str(tmp_path), "quant", {"k": 1}, _build(calls))
    record = Path(first["dir"], "record.json")
    doc = {k: v for k, v in json.loads(record.read_text()).items() if k != "record_sha256"}
    doc["key"] = "another"  # a whole record, but for another key (a hash collision, a copied folder)
    doc["record_sha256"] = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
    record.write_text(json.dumps(doc))
    assert cached_model(str(tmp_path), "quant", {"k": 1}, _build(calls))["cache"] == "built"
    assert "another key" in _warnings(caplog)[0]


def _probe(path) -> CacheProbe:
    return CacheProbe("xnnpack_weight_cache", "cpu", str(path), "delegate.compile_cache_dir")


@pytest.mark.parametrize("how", ["truncated", "garbage"])
def test_a_compile_cache_file_the_runtime_rewrites_is_rebuilt_not_warm(tmp_path, caplog, how):
    cache = tmp_path / "xnnpack_weights.bin"
    cache.write_bytes(b"w" * 4096)
    _damage(cache, how)  # what the load finds
    probe = _probe(cache)
    cache.write_bytes(b"w" * 4096)  # the runtime rejects it and writes it again, same size
    assert probe.record()["state"] == "rebuilt" and probe.record()["state"] == "rebuilt"
    assert len(_warnings(caplog)) == 1 and str(cache) in _warnings(caplog)[0]


def test_compile_cache_states_cold_warm_partial(tmp_path, caplog):
    cache = tmp_path / "xnnpack_weights.bin"
    cold = _probe(cache)
    cache.write_bytes(b"w" * 4096)
    assert cold.record()["state"] == "cold"
    assert _probe(cache).record()["state"] == "warm"  # read, not written
    cache.write_bytes(b"")
    assert _probe(cache).record()["state"] == "cold"  # 0 bytes found: nothing to be warm with
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a").write_bytes(b"x")
    shared = CacheProbe("other", "gpu", str(folder), "test")
    (folder / "b").write_bytes(b"y")
    assert shared.record()["state"] == "partial" and not _warnings(caplog)


def test_what_a_damaged_file_quotes_is_escaped(tmp_path, caplog):
    sources = _sources(tmp_path)
    first = _filled(tmp_path / "cache", sources)
    header = b"\x93NUMPY\x01\x00\x20\x00{'descr': '\x1b[31mred\x07', 'fortran_order': False}\n"
    Path(first.dir, "tensors.npy").write_bytes(header + b"\0" * 64)
    again = TensorCache(str(tmp_path / "cache"), KEY, COUNT, SHAPE, DTYPE)
    (line,) = again.stats()["rebuilt"]
    assert line.isprintable() and "\x1b" not in line and "tensors.npy" in line


@pytest.mark.parametrize("name", NPY_FILES)
def test_random_damage_to_an_npy_header_is_always_a_rebuild(tmp_path, name):
    """Bytes of the .npy header overwritten at random (seeded): every outcome is a rebuild or a
    verified read, never an exception."""
    rng = np.random.default_rng(41)
    sources = _sources(tmp_path)
    first = _filled(tmp_path / "cache", sources)
    path = Path(first.dir, f"{name}.npy")
    original = path.read_bytes()
    for _ in range(25):
        data = bytearray(original)
        for pos in rng.integers(0, 128, size=rng.integers(1, 4)):
            data[pos] = rng.integers(0, 256)
        path.write_bytes(bytes(data))
        again = TensorCache(str(tmp_path / "cache"), KEY, COUNT, SHAPE, DTYPE)
        for i, src in enumerate(sources):
            served = again.get(i, src)
            assert served is None or (served == i + 1).all()
        first = _filled(tmp_path / "cache", sources)  # whole again for the next round
        path, original = Path(first.dir, f"{name}.npy"), Path(first.dir, f"{name}.npy").read_bytes()


@pytest.mark.parametrize(
    "edit",
    [
        lambda r: r.pop("build_s"),
        lambda r: r.pop("recipe_ops"),
        lambda r: r.update(bytes="many"),
        lambda r: r.update(recipe_ops=None),
        lambda r: r.pop("record_sha256"),
    ],
    ids=["no build_s", "no extra field", "bytes retyped", "extra field nulled", "no self digest"],
)
def test_a_variant_record_missing_or_retyping_a_field_is_rebuilt(tmp_path, caplog, edit):
    calls: list = []

    def build(folder):
        calls.append(folder)
        return b"model bytes", {"recipe_ops": ["op"]}

    first = cached_model(str(tmp_path), "quant", {"k": 1}, build)
    record = Path(first["dir"], "record.json")
    doc = json.loads(record.read_text())
    edit(doc)
    record.write_text(json.dumps(doc))
    again = cached_model(str(tmp_path), "quant", {"k": 1}, build)
    assert again["cache"] == "built" and again["recipe_ops"] == ["op"] and isinstance(again["build_s"], float)
    assert len(calls) == 2 and "record_sha256" in _warnings(caplog)[0]
