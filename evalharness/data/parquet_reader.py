"""Hugging Face ``datasets`` parquet (``ILSVRC/imagenet-1k``'s release): an image struct column
``{bytes, path}`` and an integer label column, class names in the file's own ``huggingface`` schema
metadata (the ``ClassLabel`` feature's ``names``).

Sample ids are ``image.path`` (the original file name) where the writer kept it, else
``<shard>:<row>``. Rows are read a row group at a time through pyarrow (the ``parquet`` extra): the
listing hashes each image's bytes and drops the group; a worker reads the group holding its sample,
and the last few groups stay cached (:data:`GROUPS_KEPT`), so memory is a few row groups, never the
dataset.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from evalharness.core.errors import ConfigError, DataError
from evalharness.core.untrusted import parse_json
from evalharness.data.container import ContainerReader, Listed, class_index
from evalharness.data.ground_truth import Member

GROUPS_KEPT = 4  # row groups cached for the workers (HF writes ~100 images a group: ~10 MB each)


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(
            "dataset.format=parquet needs pyarrow; pip install 'evalharness[parquet]'"
        ) from None
    return pq


def _pyarrow_pool() -> Any:
    import pyarrow as pa

    return pa.default_memory_pool()


def _features(schema: Any, shard: str) -> dict[str, Any]:
    """The ``datasets`` features of a parquet schema's metadata ({} when the file has none), read
    by the one reader of untrusted JSON (limits, shape): metadata that is not JSON is an error."""
    raw = (schema.metadata or {}).get(b"huggingface")
    if not raw:
        return {}
    doc = parse_json(raw, f"{shard} (huggingface schema metadata)", dict, fix="re-write the parquet")
    info = doc.get("info")
    features = info.get("features") if isinstance(info, dict) else None
    return features if isinstance(features, dict) else {}


def _typed(features: dict[str, Any], kind: str) -> str | None:
    return next((k for k, v in features.items() if isinstance(v, dict) and v.get("_type") == kind), None)


class ParquetReader(ContainerReader):
    name = "parquet"

    def __init__(self, request: Any) -> None:
        super().__init__(request)
        self._columns: dict[str, tuple[str, str]] = {}  # shard -> (image column, label column)
        self._groups: OrderedDict[tuple[str, int], Any] = OrderedDict()
        self._lock = threading.Lock()

    def _schema(self, shard: str) -> tuple[Any, str, str, dict[str, Any]]:
        pq = _pyarrow()
        try:
            schema = pq.read_schema(shard)
        except (OSError, ValueError) as exc:
            raise DataError(f"{shard}: not a readable parquet file ({_first_line(exc)})") from None
        features = _features(schema, shard)
        image = _typed(features, "Image") or "image"
        label = _typed(features, "ClassLabel") or "label"
        names = schema.names
        if image not in names or not _image_struct(schema.field(image).type):
            raise DataError(
                f"{shard}: no image column (a struct with bytes and path, as the datasets library "
                f"writes; columns: {', '.join(names)[:200]}); give the parquet of an image dataset"
            )
        if label not in names:
            raise DataError(f"{shard}: no label column {label!r} (columns: {', '.join(names)[:200]})")
        self._columns[shard] = (image, label)
        return schema, image, label, features

    def own_names(self, shards: list[str]) -> tuple[list[str], str] | None:
        _, _, label, features = self._schema(shards[0])
        names = (features.get(label) or {}).get("names")
        if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            return names, f"{shards[0]} (huggingface features metadata, {label}.names)"
        return None

    def list_shard(self, shard: str) -> Iterator[Listed]:
        if shard not in self._columns:
            self._schema(shard)
        image, label = self._columns[shard]
        base, row = os.path.basename(shard), 0
        try:
            pf = _pyarrow().ParquetFile(shard, pre_buffer=False)
            for group in range(pf.num_row_groups):
                table = pf.read_row_group(group, columns=[image, label])
                images, labels = table.column(image).combine_chunks(), table.column(label).to_pylist()
                blobs, paths = images.field("bytes"), images.field("path")
                for i, value in enumerate(labels):
                    path = paths[i].as_py() if images[i].is_valid else None
                    name = os.path.basename(path) if path else f"{base}:{row}"
                    # hashed from Arrow's buffer, no copy: listing holds one row group, never the images
                    blob = blobs[i].as_buffer() if images[i].is_valid and blobs[i].is_valid else None
                    digest = hashlib.sha256(memoryview(blob) if blob is not None else b"").hexdigest()
                    found = Member(shard, f"row {row}", group, i, digest)
                    if blob is None or blob.size == 0:
                        raise DataError(f"{found.where}: image has no bytes; embed the images in the parquet")
                    yield name, class_index(value, found.where), found
                    row += 1
                del table, images, blobs, paths
        except (OSError, ValueError) as exc:  # pyarrow's errors on a damaged file are both
            raise DataError(f"{shard}: parquet damaged at row {row} ({_first_line(exc)})") from None
        _pyarrow_pool().release_unused()  # the allocator keeps freed row groups otherwise

    def read_member(self, member: Member) -> bytes:
        key = (member.shard, member.offset)
        with self._lock:
            column = self._groups.get(key)
            if column is not None:
                self._groups.move_to_end(key)
        if column is None:
            if member.shard not in self._columns:  # listed from a kept index: the schema not yet read
                self._schema(member.shard)
            image, _ = self._columns[member.shard]
            pf = _pyarrow().ParquetFile(member.shard, pre_buffer=False)
            table = pf.read_row_group(member.offset, columns=[image])
            column = table.column(image).combine_chunks().field("bytes")
            with self._lock:
                self._groups[key] = column
                evicted = len(self._groups) > GROUPS_KEPT
                while len(self._groups) > GROUPS_KEPT:
                    self._groups.popitem(last=False)
            if evicted:  # give the evicted group's memory back (the allocator keeps it otherwise)
                _pyarrow_pool().release_unused()
        data = column[member.length].as_py()
        return data if isinstance(data, bytes) else b""


def _image_struct(kind: Any) -> bool:
    try:
        return kind.get_field_index("bytes") >= 0
    except AttributeError:  # not a struct
        return False


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]
