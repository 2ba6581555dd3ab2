"""Hugging Face ``datasets`` parquet (``ILSVRC/imagenet-1k``'s release): an image struct column
``{bytes, path}`` and an integer label column, class names in the file's own ``huggingface`` schema
metadata (the ``ClassLabel`` feature's ``names``).

Sample ids are ``image.path`` (the original file name) where the writer kept it, else
``<shard>:<row>``. The file is read a page at a time by :mod:`evalharness.data.parquet.file`, with
no pyarrow: a member is (the offset of the data page holding its image, its row in that page); the
listing hashes each page's images and drops the page; a worker decodes the page holding its sample,
which is kept while the run's read plan has reads of it (:meth:`ParquetReader.read_member`), so
memory is one page, never the dataset.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

from evalharness.core.errors import DataError
from evalharness.core.untrusted import parse_json
from evalharness.data.container import NO_LABEL, ContainerReader, Listed, class_index
from evalharness.data.ground_truth import LabeledSample, Member
from evalharness.data.parquet.file import ParquetFile
from evalharness.data.parquet.footer import Chunk
from evalharness.data.parquet.values import BYTE_ARRAY, INT32, INT64

FILES_KEPT = 16  # footers kept parsed: a worker reads a few shards at a time


def _features(metadata: dict[str, str], shard: str) -> dict[str, Any]:
    """The ``datasets`` features of a parquet file's metadata ({} when the file has none), read by
    the one reader of untrusted JSON (limits, shape): metadata that is not JSON is an error."""
    raw = metadata.get("huggingface")
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
        self._files: OrderedDict[str, tuple[ParquetFile, str, str, dict[str, Any]]] = OrderedDict()
        self._pages: dict[tuple[str, int], list[Any]] = {}  # decoded pages kept (one, but at a switch)
        self._rows: dict[tuple[tuple[str, int], int], bytes] = {}  # rows copied out of a dropped page
        self._expected: dict[tuple[str, int], set[int]] = {}  # the read plan: rows still to read
        self._lock = threading.Lock()
        self._decoding = threading.Lock()

    def _file(self, shard: str) -> tuple[ParquetFile, str, str, dict[str, Any]]:
        """(the shard's footer, image column, label column, features), checked once and kept."""
        with self._lock:
            kept = self._files.get(shard)
        if kept is not None:
            return kept
        pf = ParquetFile(shard)
        features = _features(pf.metadata, shard)
        image = _typed(features, "Image") or "image"
        label = _typed(features, "ClassLabel") or "label"
        columns = ", ".join(pf.top)[:200]
        if "bytes" not in pf.top.get(image, []) or pf.leaves[(image, "bytes")].physical != BYTE_ARRAY:
            raise DataError(
                f"{shard}: no image column (a struct with bytes and path, as the datasets library "
                f"writes; columns: {columns}); give the parquet of an image dataset"
            )
        labelled = self.request.labelled  # else the images alone: a label column is not read
        if labelled and (pf.top.get(label) != [] or pf.leaves[(label,)].physical not in (INT32, INT64)):
            raise DataError(f"{shard}: no integer label column {label!r} (columns: {columns})")
        for path in ((image, "bytes"), (image, "path"), *([(label,)] if labelled else [])):
            if path in pf.leaves and pf.leaves[path].max_rep:
                raise DataError(
                    f"{shard}: column {'.'.join(path)} is repeated; give one image and label a row"
                )
        found = (pf, image, label, features)
        with self._lock:
            self._files[shard] = found
            while len(self._files) > FILES_KEPT:
                self._files.popitem(last=False)
        return found

    def own_names(self, shards: list[str]) -> tuple[list[str], str] | None:
        """The ClassLabel names every shard's metadata holds. Each shard's labels are indices into
        its own list, so shards whose lists differ (or one without a list) cannot be read through
        one of them: that is one error naming both shards, never the first shard's list for all."""
        first = self._names(shards[0])
        for shard in shards[1:]:
            names = self._names(shard)
            if names != first:
                differ = _difference(first, names)
                raise DataError(
                    f"{shards[0]} and {shard} have different class names in their huggingface features "
                    f"metadata ({differ}); give the shards of one dataset, or re-write them with one "
                    "ClassLabel"
                )
        if first is None:
            return None
        label = self._file(shards[0])[2]
        return first, f"{shards[0]} (huggingface features metadata, {label}.names)"

    def _names(self, shard: str) -> list[str] | None:
        _, _, label, features = self._file(shard)
        names = (features.get(label) or {}).get("names")
        if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            return names
        return None

    def list_shard(self, shard: str) -> Iterator[Listed]:
        pf, image, label, _ = self._file(shard)
        base, row = os.path.basename(shard), 0
        labelled = self.request.labelled
        for group in pf.groups:
            labels = _column(pf, group.get((label,))) if labelled else []
            paths = _column(pf, group.get((image, "path")))
            chunk = group[(image, "bytes")]
            first = row
            for page in pf.pages(chunk):
                for i, blob in enumerate(page.values):
                    at = row - first
                    if at >= len(labels) and labelled:
                        raise DataError(f"{shard}: parquet damaged at row {row} (more images than labels)")
                    path = paths[at] if at < len(paths) else None
                    name = (
                        os.path.basename(bytes(path).decode("utf-8", "replace")) if path else f"{base}:{row}"
                    )
                    found = Member(shard, f"row {row}", page.offset, i, hashlib.sha256(blob or b"").digest())
                    if not blob:
                        raise DataError(f"{found.where}: image has no bytes; embed the images in the parquet")
                    yield name, class_index(labels[at], found.where) if labelled else NO_LABEL, found
                    row += 1
            if labelled and row - first != len(labels):
                raise DataError(
                    f"{shard}: parquet damaged at row {row} ({len(labels)} labels in the row group)"
                )

    def read_plan(self, samples: Sequence[LabeledSample]) -> Sequence[LabeledSample]:
        """As stored; and which rows of which page the run will read, so that a page is kept exactly
        as long as reads of it remain (:meth:`read_member`)."""
        ordered = super().read_plan(samples)
        expected: dict[tuple[str, int], set[int]] = {}
        for s in ordered:
            if s.member is not None:
                expected.setdefault((s.member.shard, s.member.offset), set()).add(s.member.length)
        with self._lock:
            self._expected = expected
        return ordered

    def read_member(self, member: Member) -> bytes:
        """The image at (page, row). The page holding it is decoded once and kept while the run's
        plan still has reads of it. When the next page is needed, the few rows of the old one still
        to be read (workers a step behind) are copied out and the old page goes before the new one
        is decoded: memory is one page (~100 images as ``datasets`` writes them), never two. Reads
        outside a plan (explain, thumbnails) keep the last page only."""
        key, row = (member.shard, member.offset), member.length
        with self._lock:
            found = self._take(key, row)
        if found is not None:
            return found
        with self._decoding:  # two workers wanting the next page decode it once
            with self._lock:
                found = self._take(key, row)
                if found is None:
                    self._make_room(key)
            if found is not None:
                return found
            values = self._file(member.shard)[0].page_at(member.offset)
            with self._lock:
                self._pages[key] = values
                found = self._take(key, row)
        return found if found is not None else b""

    def _take(self, key: tuple[str, int], row: int) -> bytes | None:
        """The row's bytes from what is kept (None: its page is not), counted as read (the lock held)."""
        kept = self._rows.pop((key, row), None)
        if kept is None:
            values = self._pages.get(key)
            if values is None:
                return None
            blob = values[row] if 0 <= row < len(values) else None
            kept = bytes(blob) if blob is not None else b""
        waiting = self._expected.get(key)
        if waiting is not None:
            waiting.discard(row)
            if not waiting:  # the plan reads nothing more of this page
                del self._expected[key]
                self._pages.pop(key, None)
        return kept

    def _make_room(self, key: tuple[str, int]) -> None:
        """Drop every kept page but ``key``'s, copying out the rows of them the plan still reads."""
        for other in [k for k in self._pages if k != key]:
            values = self._pages.pop(other)
            for row in self._expected.get(other, ()):
                if 0 <= row < len(values) and values[row] is not None:
                    self._rows[(other, row)] = bytes(values[row])


def _difference(first: list[str] | None, other: list[str] | None) -> str:
    if first is None or other is None:
        return "one has no class names"
    if len(first) != len(other):
        return f"{len(first)} and {len(other)} names"
    index = next(i for i, (a, b) in enumerate(zip(first, other, strict=True)) if a != b)
    return f"class {index} is {first[index]!r} and {other[index]!r}"


def _column(pf: ParquetFile, chunk: Chunk | None) -> list[Any]:
    """Every value of a (small) column chunk: labels, paths; [] for a column the file lacks."""
    return [] if chunk is None else [v for page in pf.pages(chunk) for v in page.values]
