"""Tolerant field reads for the typed run document (:mod:`evalharness.rundir.metrics_file`).

A metrics.json read back may be older than this code or edited by hand: a key may be missing or
hold another type. Each reader here answers the type it promises or its empty value (None, ``{}``,
``()``), never an exception, so the typed document says "not recorded" exactly where the string-key
reads it replaces (a missing key read as an empty object) did. Only :mod:`evalharness.rundir` reads
JSON this way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JSONMap = dict[str, Any]


def mapping(source: Mapping[str, Any], key: str) -> JSONMap:
    """``source[key]`` when it is a JSON object, else ``{}``."""
    value = source.get(key)
    return value if isinstance(value, dict) else {}


def optional_mapping(source: Mapping[str, Any], key: str) -> JSONMap | None:
    """``source[key]`` when it is a JSON object, else None (a block whose absence means something)."""
    value = source.get(key)
    return value if isinstance(value, dict) else None


def text(source: Mapping[str, Any], key: str) -> str | None:
    value = source.get(key)
    return value if isinstance(value, str) else None


def integer(source: Mapping[str, Any], key: str) -> int | None:
    value = source.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def number(source: Mapping[str, Any], key: str) -> float | None:
    """A JSON number as written (an int stays an int, so a document built from it writes the same bytes)."""
    value = source.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def flag(source: Mapping[str, Any], key: str) -> bool | None:
    value = source.get(key)
    return value if isinstance(value, bool) else None


def items(source: Mapping[str, Any], key: str) -> tuple[Any, ...]:
    """``source[key]`` when it is a JSON list (or a tuple: a document built in memory), else ``()``."""
    value = source.get(key)
    return tuple(value) if isinstance(value, list | tuple) else ()


def objects(source: Mapping[str, Any], key: str) -> tuple[JSONMap, ...]:
    """The JSON objects of the list ``source[key]`` (anything else in it left out)."""
    return tuple(v for v in items(source, key) if isinstance(v, dict))


def strings(source: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The list ``source[key]`` with each entry as text (an edited non-string entry is shown, not lost)."""
    return tuple(str(v) for v in items(source, key))


def counts(source: Mapping[str, Any], key: str) -> Mapping[str, int] | None:
    """A map of names to whole counts (``ops_on_cpu_by_type``), entries of another type left out;
    None when not recorded."""
    found = optional_mapping(source, key)
    if found is None:
        return None
    return {str(k): v for k, v in found.items() if isinstance(v, int) and not isinstance(v, bool)}


def dig(doc: Mapping[str, Any], dotted: str, default: Any = None) -> Any:
    """The value at the dotted path ``a.b.c`` or ``default`` when any part is missing: for the paths
    a user names (a sweep column) or a list of fields compared by name (a merge), never for a field
    the code knows (that is an attribute of the typed document)."""
    value: Any = doc
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value
