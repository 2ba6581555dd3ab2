"""The index of a container shard (each sample's id, class index and member), kept between runs.

Listing a shard reads and hashes every image in it; the index saves that on the next run. It is
derived state (:mod:`evalharness.core.derived`): keyed on what it came from — the reader, the
shard's path and its :func:`~evalharness.core.derived.file_state` (size, mtime_ns, inode, ctime_ns:
any write to the shard or replacement of it changes it) — and read whole and verified, or rebuilt
and said once. A member of a shard unchanged since it was listed is served without a second sha256
(``dataset_reader.DatasetReader.open``), so the index's digests and offsets are what the run's
content manifest and its reads rest on: the index carries a sha256 of its own columns
(``columns_sha256``), and one that no longer hashes to it (edited, or damaged to the same size) is
rebuilt, never used.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from evalharness.core.atomic_io import atomic_write_chunks
from evalharness.core.derived import Damaged, read_json_object, read_or_rebuild
from evalharness.data.ground_truth import Member

VERSION = 3  # 2: a parquet member is (data page offset, row in the page); columns. 3: columns_sha256
Listed = tuple[str, int, Member]
COLUMNS = ("ids", "classes", "members", "offsets", "lengths", "sha256")
_HEX = re.compile("[0-9a-fA-F]*")


def _path(index_dir: str, reader: str, shard: str, state: tuple[int, ...]) -> str:
    key = hashlib.sha256(json.dumps([VERSION, reader, shard, list(state)]).encode()).hexdigest()
    return os.path.join(os.path.expanduser(index_dir), f"{reader}-{key[:32]}.json")


def _read(
    path: str, reader: str, shard: str, state: tuple[int, ...]
) -> tuple[Iterator[Listed], Counter[str]]:
    """The kept index, verified whole first (damage is found before any entry is used), then its
    entries made one at a time as the listing is consumed: no list of every member."""
    doc = read_json_object(path)
    if [doc.get("version"), doc.get("reader"), doc.get("shard"), doc.get("state")] != [
        VERSION, reader, shard, list(state),
    ]:  # fmt: skip
        raise Damaged("written for another shard, state or version")
    columns = [doc[name] for name in COLUMNS]  # one list a field: no list object per entry
    if not all(isinstance(c, list) and len(c) == len(columns[0]) for c in columns):
        raise Damaged("its columns are not lists of one length")
    digest = hashlib.sha256()
    for name, column in zip(COLUMNS, columns, strict=True):  # the text the writer hashed, made again
        digest.update(f', "{name}": {json.dumps(column)}'.encode())
    if doc.get("columns_sha256") != digest.hexdigest():
        raise Damaged("its columns do not hash to the columns_sha256 it was written with")
    for key, index, name, offset, length, digest in zip(*columns, strict=True):
        if not (isinstance(key, str) and isinstance(name, str) and isinstance(digest, str)):
            raise Damaged("an entry is not (id, index, member, offset, length, sha256)")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (index, offset, length)):
            raise Damaged("an entry is not (id, index, member, offset, length, sha256)")
        if len(digest) != 64 or not _HEX.fullmatch(digest):
            raise Damaged("a sha256 that is not 32 bytes of hex")
    unscored = doc["unscored"]
    if not isinstance(unscored, dict) or not all(isinstance(v, int) for v in unscored.values()):
        raise Damaged("unscored is not a count by reason")
    return _entries(shard, columns), Counter(unscored)


def _entries(shard: str, columns: list[list[Any]]) -> Iterator[Listed]:
    for key, index, name, offset, length, digest in zip(*columns, strict=True):
        # the member's name is one string with the id where they are equal (tar members)
        yield key, index, Member(shard, key if name == key else name, offset, length, bytes.fromhex(digest))


def _kept(path: str, head: dict[str, Any], listing: Iterator[Listed], rebuilt: list[str]) -> Iterator[Listed]:
    """``listing`` passed on entry by entry, its index kept in columns (each id and name as UTF-8 in
    one buffer, numbers in arrays, digests end to end) and written once it is read to the end: a
    50,000-member shard costs its columns while listed, not a list of every member and its JSON."""
    ids, names = bytearray(), bytearray()
    ends, numbers, digests = array("q"), array("q"), bytearray()
    for key, index, m in listing:
        ids += json.dumps(key).encode() + b", "
        names += json.dumps(m.name).encode() + b", "
        ends.extend((len(ids), len(names)))
        numbers.extend((index, m.offset, m.length))
        digests += m.digest
        yield key, index, m
    count = len(numbers) // 3

    def column(name: str, items: Iterator[str]) -> Iterator[str]:
        yield f', "{name}": ['
        yield ", ".join(items)
        yield "]"

    def texts(data: bytearray, which: int) -> Iterator[str]:
        start = 0
        for i in range(count):
            end = ends[2 * i + which]
            yield data[start : end - 2].decode()
            start = end

    digest = hashlib.sha256()

    def hashed(parts: Iterator[str]) -> Iterator[str]:  # the columns' text, hashed as it is written
        for part in parts:
            digest.update(part.encode())
            yield part

    columns = itertools.chain(
        column("ids", texts(ids, 0)),
        column("classes", (str(numbers[3 * i]) for i in range(count))),
        column("members", texts(names, 1)),
        column("offsets", (str(numbers[3 * i + 1]) for i in range(count))),
        column("lengths", (str(numbers[3 * i + 2]) for i in range(count))),
        column("sha256", (f'"{digests[32 * i : 32 * i + 32].hex()}"' for i in range(count))),
    )
    def tail() -> Iterator[str]:  # once every column is written and hashed
        yield f', "columns_sha256": "{digest.hexdigest()}"}}'

    chunks = itertools.chain([json.dumps(head)[:-1]], hashed(columns), tail())
    try:
        atomic_write_chunks(path, chunks)
    except OSError as exc:  # a read-only cache costs the next run a listing, never this run
        rebuilt.append(f"container index {path}: not written ({exc.strerror or exc})")


def indexed(
    index_dir: str | None,
    reader: str,
    shard: str,
    state: tuple[int, ...] | None,
    unscored: Counter[str],
    listing: Callable[[], Iterator[Listed]],
    rebuilt: list[str],
) -> tuple[Iterator[Listed], bool]:
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
    before = Counter(unscored)  # what the listing leaves unscored is known once it has run
    doc: dict[str, Any] = {"version": VERSION, "reader": reader, "shard": shard, "state": list(state)}
    return _kept(path, doc, _unscored_last(listing(), doc, unscored, before), rebuilt), False


def _unscored_last(
    listing: Iterator[Listed], doc: dict[str, Any], unscored: Counter[str], before: Counter[str]
) -> Iterator[Listed]:
    """``listing``, then ``doc["unscored"]`` set to what it counted (before the index is written)."""
    yield from listing
    doc["unscored"] = dict(unscored - before)
