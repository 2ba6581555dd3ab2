"""A parquet file's footer read and checked, with no pyarrow: the schema's leaf columns, each top-level
field's children, the key-value metadata and each row group's column chunks.

The footer is untrusted: its length is bounded (:data:`MAX_FOOTER`), its Thrift values are counted
(:mod:`evalharness.data.parquet.thrift`), every chunk must lie inside the file, and every field has
the type it is read as; anything else is one :class:`DataError` naming the shard.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from evalharness.core.errors import DataError
from evalharness.data.parquet.thrift import Malformed, Struct, read_struct

MAGIC = b"PAR1"
MAX_FOOTER = 64 << 20  # a 50,000-image file's footer is ~100 KB
MAX_NESTING = 16  # schema depth (an image dataset's is 2)
_REQUIRED_FOOTER = {2: "schema", 3: "num_rows", 4: "row_groups"}  # FileMetaData's (parquet.thrift)


@dataclass(frozen=True)
class Leaf:
    """A primitive column: its dotted path, physical type and highest definition/repetition level."""

    path: tuple[str, ...]
    physical: int
    max_def: int
    max_rep: int


@dataclass(frozen=True)
class Chunk:
    """One column's bytes in one row group."""

    leaf: Leaf
    start: int  # the first page (the dictionary page, where there is one)
    end: int
    codec: int
    num_values: int


Leaves = dict[tuple[str, ...], Leaf]
Group = dict[tuple[str, ...], Chunk]


def read_footer(path: str) -> tuple[Leaves, dict[str, list[str]], dict[str, str], list[Group]]:
    """(leaf columns by path, each top-level field's child names, key-value metadata, each row
    group's chunks by path) of the parquet file at ``path``."""
    size = os.path.getsize(path)
    tail = pread(path, max(0, size - 8), 8)
    if size < 12 or tail[4:] != MAGIC or pread(path, 0, 4) != MAGIC:
        why = "an encrypted footer, which this reader does not open" if tail[4:] == b"PARE" else "no PAR1"
        raise DataError(f"{path}: not a readable parquet file ({why})")
    length = int.from_bytes(tail[:4], "little")
    if not 0 < length <= min(size - 12, MAX_FOOTER):
        raise DataError(f"{path}: not a readable parquet file (footer length {length})")
    try:
        meta, _ = read_struct(pread(path, size - 8 - length, length))
        if missing := [name for key, name in _REQUIRED_FOOTER.items() if key not in meta]:
            raise ValueError(f"no {', no '.join(missing)}")  # not a file of no columns and no rows
        leaves, top = _schema(meta[2])
        metadata = {_text(kv.get(1)): _text(kv.get(2)) for kv in meta.get(5) or []}
        groups = [_group(leaves, g, size) for g in meta.get(4) or []]
    except (Malformed, KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        why = first_line(exc)
        raise DataError(f"{path}: parquet footer damaged ({why}); re-write the file") from None
    return leaves, top, metadata, groups


def _group(leaves: Leaves, group: Struct, size: int) -> Group:
    chunks: Group = {}
    for column in group[1]:
        if column.get(1) is not None or 3 not in column:
            raise ValueError("a column chunk in another file or encrypted")
        meta = column[3]
        path = tuple(_text(p) for p in meta[3])
        leaf = leaves[path]
        data, dictionary = integer(meta[9]), meta.get(11)
        start = integer(dictionary) if dictionary is not None and 0 < integer(dictionary) < data else data
        end = start + integer(meta[7])
        if not 4 <= start <= end <= size - 8:
            raise ValueError(f"column {'.'.join(path)} at bytes {start}..{end} outside the file")
        chunks[path] = Chunk(leaf, start, end, integer(meta[4]), integer(meta[5]))
    return chunks


def integer(value: Any) -> int:
    """``value`` where the file must hold an integer (a damaged file holds any type)."""
    if not isinstance(value, int):
        raise ValueError(f"{type(value).__name__} where an integer belongs")
    return value


def _schema(elements: list[Struct]) -> tuple[dict[tuple[str, ...], Leaf], dict[str, list[str]]]:
    """(leaf columns by path, each top-level field's child names: [] for a primitive)."""
    leaves: dict[tuple[str, ...], Leaf] = {}
    top: dict[str, list[str]] = {}
    position = 1

    def walk(prefix: tuple[str, ...], children: int, max_def: int, max_rep: int) -> list[str]:
        nonlocal position
        names = []
        for _ in range(children):
            element = elements[position]
            position += 1
            if not isinstance(element, dict) or len(prefix) >= MAX_NESTING:
                raise ValueError("a schema element that is not a struct, or nested too deep")
            name, repetition = _text(element[4]), integer(element.get(3, 0))
            path = (*prefix, name)
            d, r = max_def + (repetition != 0), max_rep + (repetition == 2)
            kids = integer(element.get(5) or 0)
            if kids:
                grandchildren = walk(path, kids, d, r)
                if not prefix:
                    top[name] = grandchildren
            else:
                leaves[path] = Leaf(path, integer(element.get(1, -1)), d, r)
                if not prefix:
                    top[name] = []
            names.append(name)
        return names

    if elements:
        walk((), elements[0].get(5) or 0, 0, 0)
    return leaves, top


def _text(value: Any) -> str:
    if value is not None and not isinstance(value, bytes):
        raise ValueError(f"{type(value).__name__} where a string belongs")
    return value.decode("utf-8", "replace") if value is not None else ""


def pread(path: str, offset: int, size: int) -> bytes:
    with open(path, "rb") as f:
        return os.pread(f.fileno(), size, offset)


def first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]
