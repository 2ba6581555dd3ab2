"""Derived model files cached under ``paths.cache_dir``: quantized variants (``quant/``) and
ahead-of-time compiled models (``npu/``) are built once per key and reused.

The key is a JSON object of everything the file depends on (the source model's sha256, the recipe or
compiler options, tool versions); the folder is named by its hash. A folder whose record was written
for another key, or whose file no longer has the recorded sha256, is rebuilt, never used; a record
that cannot be read, has the wrong shape (0 bytes, garbage, ``[]``) or is not the one written (it
carries the sha256 of its own fields: a field removed or retyped) is damage, rebuilt and said once
(:mod:`evalharness.core.derived`); a record written before that digest is rebuilt once. The file and
its record are written atomically, the record last, so an interrupted build is a miss.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from typing import Any

from evalharness.core.atomic_io import atomic_write_bytes, atomic_write_text
from evalharness.core.checksum import sha256_file
from evalharness.core.derived import Damaged, read_json_object, read_or_rebuild
from evalharness.core.documents import JSONMap

ARTIFACT = "model.tflite"
RECORD = "record.json"


def cached_record(
    folder: str, key_text: str, record_name: str = RECORD, rebuilt: list[str] | None = None
) -> JSONMap | None:
    """A cache folder's JSON record if it was built for ``key_text`` and its artifact is intact
    (present, same sha256 as recorded); None means rebuild (damage said once, its line appended
    to ``rebuilt``)."""

    def read() -> JSONMap:
        record = read_json_object(os.path.join(folder, record_name))
        if record.get("record_sha256") != _self_digest(record):
            raise Damaged(f"{record_name} is not the record this cache wrote (its record_sha256 differs)")
        if record.get("key") != key_text:
            raise Damaged(f"{record_name} was written for another key")
        artifact = os.path.join(folder, ARTIFACT)
        if not os.path.isfile(artifact):
            raise Damaged(f"{ARTIFACT} is missing beside its {record_name}")
        if sha256_file(artifact) != record.get("sha256"):
            raise Damaged(f"{ARTIFACT} does not match the sha256 in {record_name}")
        return record

    return read_or_rebuild(f"cached model {folder}", read, rebuilt)


def _self_digest(record: dict[str, Any]) -> str:
    """sha256 of a record's own fields (``record_sha256`` aside): a record with a field removed,
    retyped or edited is not the one written, so nothing reads a field it lacks."""
    rest = {k: v for k, v in record.items() if k != "record_sha256"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


Build = Callable[[str], tuple[bytes, dict[str, Any]]]


def cached_model(
    cache_dir: str, kind: str, key: dict[str, Any], build: Build, record_name: str = RECORD
) -> JSONMap:
    """The model file for ``key`` under ``<cache_dir>/<kind>/<hash>/``, built by ``build(folder)``
    (-> file bytes, extra record fields) when missing or damaged. Returns the record with ``path``,
    ``dir``, ``cache`` (``hit`` or ``built``) and ``rebuilt`` (why a damaged entry was not used, the
    line said once; empty for a hit or a first build); ``build_s`` is the build's wall time."""
    key_text = json.dumps(key, sort_keys=True)
    digest = hashlib.sha256(key_text.encode()).hexdigest()[:24]
    folder = os.path.join(os.path.expanduser(cache_dir), kind, digest)
    path = os.path.join(folder, ARTIFACT)
    rebuilt: list[str] = []
    record = cached_record(folder, key_text, record_name, rebuilt)
    if record is not None:
        return {**record, "path": path, "dir": folder, "cache": "hit", "rebuilt": rebuilt}
    started = time.perf_counter()
    os.makedirs(folder, exist_ok=True)
    data, extra = build(folder)
    atomic_write_bytes(path, data)
    record = {
        "key": key_text,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        **extra,
        "build_s": round(time.perf_counter() - started, 3),
    }
    record["record_sha256"] = _self_digest(record)
    atomic_write_text(os.path.join(folder, record_name), json.dumps(record, indent=1))
    return {**record, "path": path, "dir": folder, "cache": "built", "rebuilt": rebuilt}
