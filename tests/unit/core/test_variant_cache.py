"""Derived model files are built once per key, reused, and rebuilt when damaged or keyed otherwise."""

from __future__ import annotations

import json

from evalharness.core.variant_cache import cached_model


def _builder(calls: list, data: bytes = b"model bytes"):
    def build(folder: str):
        calls.append(folder)
        return data, {"extra": 1}

    return build


def test_built_once_then_a_hit(tmp_path):
    calls: list = []
    first = cached_model(str(tmp_path), "kind", {"k": 1}, _builder(calls))
    again = cached_model(str(tmp_path), "kind", {"k": 1}, _builder(calls))
    assert (first["cache"], again["cache"], len(calls)) == ("built", "hit", 1)
    assert first["path"] == again["path"] and first["path"].startswith(str(tmp_path / "kind"))
    assert again["extra"] == 1 and again["bytes"] == len(b"model bytes")
    assert json.loads((tmp_path / "kind").joinpath(first["dir"], "record.json").read_text())["sha256"]


def test_another_key_is_another_folder(tmp_path):
    calls: list = []
    a = cached_model(str(tmp_path), "kind", {"k": 1}, _builder(calls))
    b = cached_model(str(tmp_path), "kind", {"k": 2}, _builder(calls))
    assert a["dir"] != b["dir"] and len(calls) == 2


def test_a_damaged_file_is_rebuilt_never_used(tmp_path):
    calls: list = []
    first = cached_model(str(tmp_path), "kind", {"k": 1}, _builder(calls))
    with open(first["path"], "r+b") as f:
        f.write(b"junk")
    again = cached_model(str(tmp_path), "kind", {"k": 1}, _builder(calls))
    assert again["cache"] == "built" and len(calls) == 2
    with open(again["path"], "rb") as f:
        assert f.read() == b"model bytes"
