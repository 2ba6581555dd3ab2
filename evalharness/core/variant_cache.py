"""Derived model files cached under ``paths.cache_dir``: quantized variants (``quant/``) and
ahead-of-time compiled models (``npu/``) are built once per key and reused.

The key is a JSON object of everything the file depends on (the source model's sha256, the recipe or
compiler options, tool versions); the folder is named by its hash. A folder whose record was written
for another key, or whose file no longer has the recorded sha256, is rebuilt, never used. The file
and its record are written atomically, the record last, so an interrupted build is a miss.
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

ARTIFACT = "model.tflite"
RECORD = "record.json"


def cached_record(folder: str, key_text: str, record_name: str = RECORD) -> dict[str, Any] | None:
    """A cache folder's JSON record if it was built for ``key_text`` and its artifact is intact
    (present, same sha256 as recorded); None means rebuild."""
    try:
        with open(os.path.join(folder, record_name), encoding="utf-8") as f:
            record: dict[str, Any] = json.load(f)
    except (OSError, ValueError):
        return None
    path = os.path.join(folder, ARTIFACT)
    if record.get("key") != key_text or not os.path.isfile(path) or sha256_file(path) != record.get("sha256"):
        return None
    return record


Build = Callable[[str], tuple[bytes, dict[str, Any]]]


def cached_model(
    cache_dir: str, kind: str, key: dict[str, Any], build: Build, record_name: str = RECORD
) -> dict[str, Any]:
    """The model file for ``key`` under ``<cache_dir>/<kind>/<hash>/``, built by ``build(folder)``
    (-> file bytes, extra record fields) when missing or damaged. Returns the record with ``path``,
    ``dir`` and ``cache`` (``hit`` or ``built``); ``build_s`` is the build's wall time."""
    key_text = json.dumps(key, sort_keys=True)
    digest = hashlib.sha256(key_text.encode()).hexdigest()[:24]
    folder = os.path.join(os.path.expanduser(cache_dir), kind, digest)
    path = os.path.join(folder, ARTIFACT)
    record = cached_record(folder, key_text, record_name)
    if record is not None:
        return {**record, "path": path, "dir": folder, "cache": "hit"}
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
    atomic_write_text(os.path.join(folder, record_name), json.dumps(record, indent=1))
    return {**record, "path": path, "dir": folder, "cache": "built"}
