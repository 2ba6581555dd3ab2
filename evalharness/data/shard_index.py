"""The index of a container shard (each sample's id, class index and member), kept between runs.

Listing a shard reads and hashes every image in it; the index saves that on the next run. It is
derived state (:mod:`evalharness.core.derived`): keyed on what it came from — the reader, the
shard's path and its :func:`~evalharness.core.derived.file_state` (size, mtime_ns, inode, ctime_ns:
any write to the shard or replacement of it changes it) — and read whole and verified, or rebuilt
and said once. Workers still check every image's sha256 when they read it, so an index can never
serve other bytes than those it was built from.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from evalharness.core.atomic_io import atomic_write_text
from evalharness.core.derived import Damaged, read_json_object, read_or_rebuild
from evalharness.data.ground_truth import Member

VERSION = 2  # 2: a parquet member is (data page offset, row in the page); columns
Listed = tuple[str, int, Member]
COLUMNS = ("ids", "classes", "members", "offsets", "lengths", "sha256")


def _path(index_dir: str, reader: str, shard: str, state: tuple[int, ...]) -> str:
    key = hashlib.sha256(json.dumps([VERSION, reader, shard, list(state)]).encode()).hexdigest()
    return os.path.join(os.path.expanduser(index_dir), f"{reader}-{key[:32]}.json")


def _read(path: str, reader: str, shard: str, state: tuple[int, ...]) -> tuple[list[Listed], Counter[str]]:
    doc = read_json_object(path)
    if [doc.get("version"), doc.get("reader"), doc.get("shard"), doc.get("state")] != [
        VERSION, reader, shard, list(state),
    ]:  # fmt: skip
        raise Damaged("written for another shard, state or version")
    columns = [doc[name] for name in COLUMNS]  # one list a field: no list object per entry
    if not all(isinstance(c, list) and len(c) == len(columns[0]) for c in columns):
        raise Damaged("its columns are not lists of one length")
    out: list[Listed] = []
    for key, index, name, offset, length, digest in zip(*columns, strict=True):
        if not (isinstance(key, str) and isinstance(name, str) and isinstance(digest, str)):
            raise Damaged("an entry is not (id, index, member, offset, length, sha256)")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (index, offset, length)):
            raise Damaged("an entry is not (id, index, member, offset, length, sha256)")
        try:
            raw = bytes.fromhex(digest)
        except ValueError:
            raise Damaged("a sha256 that is not hex") from None
        if len(raw) != 32:
            raise Damaged("a sha256 that is not 32 bytes")
        # the member's name is one string with the id where they are equal (tar members)
        out.append((key, index, Member(shard, key if name == key else name, offset, length, raw)))
    unscored = doc["unscored"]
    if not isinstance(unscored, dict) or not all(isinstance(v, int) for v in unscored.values()):
        raise Damaged("unscored is not a count by reason")
    return out, Counter(unscored)


def _columns(listed: list[Listed]) -> list[list[Any]]:
    """The listing as :data:`COLUMNS`, one list a field."""
    rows = [(key, index, m.name, m.offset, m.length, m.sha256) for key, index, m in listed]
    return [[row[j] for row in rows] for j in range(len(COLUMNS))]


def indexed(
    index_dir: str | None,
    reader: str,
    shard: str,
    state: tuple[int, ...] | None,
    unscored: Counter[str],
    listing: Callable[[], Iterator[Listed]],
    rebuilt: list[str],
) -> tuple[Iterator[Listed] | list[Listed], bool]:
    """(the shard's listing, whether it came from a kept index). ``state``: the shard's
    :func:`~evalharness.core.derived.file_state` taken before it is read (None: not stat'ed).
    Without ``index_dir`` the shard is listed as it is read; otherwise a verified index serves it,
    else it is listed and kept."""
    if index_dir is None or state is None:
        return listing(), False
    path = _path(index_dir, reader, shard, state)
    found = read_or_rebuild(f"container index {path}", lambda: _read(path, reader, shard, state), rebuilt)
    if found is not None:
        unscored.update(found[1])
        return found[0], True
    before = Counter(unscored)
    listed = list(listing())
    doc: dict[str, Any] = {
        "version": VERSION,
        "reader": reader,
        "shard": shard,
        "state": list(state),
        "unscored": dict(unscored - before),
        **dict(zip(COLUMNS, _columns(listed), strict=True)),
    }
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write_text(path, json.dumps(doc))
    except OSError as exc:  # a read-only cache costs the next run a listing, never this run
        rebuilt.append(f"container index {path}: not written ({exc.strerror or exc})")
    return listed, False
