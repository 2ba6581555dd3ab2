"""The one reader of untrusted JSON, YAML and text: every file a user, a run directory or a bundle
supplies is read here, within limits, and checked for its shape before anyone looks inside.

Python's own parsers turn hostile input into crashes, not messages: JSON nested 100,000 deep is a
RecursionError, a 5,000-digit integer a ValueError from the int limit, a file of the wrong shape a
KeyError somewhere later. Here each is one :class:`~evalharness.core.errors.EvalHarnessError` (the
caller's kind, :class:`DataError` unless told) naming the file and the limit, so the boundary
prints one ``error:`` line and exits 2. JSON is scanned for nesting depth and number length before
``json.loads`` sees it (the scan never recurses); YAML, whose nesting has no brackets to count, is
parsed with the recursion turned into the same message and then walked without recursion. The file
itself passes :func:`~evalharness.core.fileguard.refuse_special_file` first (no FIFO, no device, no
file over the size limit).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from evalharness.core.errors import DataError, EvalHarnessError
from evalharness.core.escape import terminal
from evalharness.core.fileguard import READ_WHOLE_LIMIT, file_error_reason, named, refuse_special_file

# No file the tool reads nests deeper than ~10 levels; 64 keeps every later walk of the value (which
# may recurse) far from Python's recursion limit.
MAX_DEPTH = 64
# A number token longer than this is no measurement: int() of it is slow or refused, float() of it
# silently rounds away what it claims to hold.
MAX_NUMBER_CHARS = 100
# Nodes a YAML value may expand to (aliases can make a small file a huge tree).
MAX_YAML_NODES = 1_000_000

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
# a number's characters -> "1", others -> " ": a run of MAX_NUMBER_CHARS + 1 ones is one long number
# (found by bytes search, far faster than a regex over every position)
_NUMBER_MAP = bytes(ord("1") if chr(b) in "-+0123456789.eE" else ord(" ") for b in range(256))
_LONG_RUN = b"1" * (MAX_NUMBER_CHARS + 1)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")

Shape = Mapping[str, type | tuple[type, ...]]
_DEEP = f"nests deeper than {MAX_DEPTH} levels"
_NUMBER = f"holds a number of over {MAX_NUMBER_CHARS} characters"


def _over(error: type[EvalHarnessError], source: str, what: str) -> EvalHarnessError:
    return error(f"{source} {what}, over the limit of untrusted files; check the file")


def _kind(value: object) -> str:
    names: dict[type, str] = {
        dict: "object",
        list: "list",
        str: "string",
        bool: "boolean",
        type(None): "null",
    }
    return names.get(type(value), "number" if isinstance(value, int | float) else type(value).__name__)


def _type_name(types: type | tuple[type, ...]) -> str:
    types = types if isinstance(types, tuple) else (types,)
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def read_bytes(
    path: str | os.PathLike[str],
    what: str,
    error: type[EvalHarnessError] = DataError,
    limit: int = READ_WHOLE_LIMIT,
) -> bytes:
    """The bytes of ``path`` after the file guard; a missing or unreadable file is one ``error``."""
    try:
        refuse_special_file(path, what, limit)
    except DataError as exc:
        raise error(str(exc)) from None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise error(f"{named(what, path)}: {file_error_reason(exc, path)}; check the path") from None


def decode_text(data: bytes, source: str, error: type[EvalHarnessError] = DataError) -> str:
    """``data`` as UTF-8 text (a BOM dropped); invalid bytes are one ``error`` naming ``source``."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise error(
            f"{source} is not UTF-8 text ({exc.reason} at byte {exc.start}); check the file"
        ) from None


def read_text(
    path: str | os.PathLike[str],
    what: str,
    error: type[EvalHarnessError] = DataError,
    limit: int = READ_WHOLE_LIMIT,
) -> str:
    """A whole text file (a csv, a label list), guarded and decoded strictly as UTF-8."""
    return decode_text(read_bytes(path, what, error, limit), named(what, path), error)


def check_json_limits(data: bytes, source: str, error: type[EvalHarnessError] = DataError) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` or holding a number longer than
    :data:`MAX_NUMBER_CHARS`, by scanning the bytes before a recursive parser meets them: strings
    blanked, then the brackets alone, innermost pairs removed one level a round (C-speed bytes
    operations, no recursion). Text with few brackets and no long run of digits passes at once."""
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH and _LONG_RUN not in data.translate(_NUMBER_MAP):
        return
    bare = _STRING.sub(b'""', data)
    if _LONG_RUN in bare.translate(_NUMBER_MAP):
        raise _over(error, source, _NUMBER)
    brackets = bare.translate(None, _NOT_BRACKETS)
    for _ in range(MAX_DEPTH):  # each round removes at least one level of every nest
        inner = brackets.replace(b"[]", b"").replace(b"{}", b"")
        if not inner or inner == brackets:  # empty, or unbalanced: json.loads names that
            return
        brackets = inner
    raise _over(error, source, _DEEP)


def check_shape(
    value: object,
    source: str,
    top: type | tuple[type, ...] = dict,
    required: Shape | None = None,
    error: type[EvalHarnessError] = DataError,
    fix: str = "check the file",
) -> None:
    """The top-level type of ``value`` and, for an object, its ``required`` keys and their types."""
    if not _is(value, top):
        raise error(f"{source} is {_kind(value)!s}, not {_type_name(top)}; {fix}")
    fields = cast("Mapping[str, object]", value)  # ``required`` is given with ``top=dict`` only
    for key, types in (required or {}).items():
        if key not in fields:
            raise error(f"{source} has no {key!r}; {fix}")
        if not _is(fields[key], types):
            raise error(f"{source}: {key!r} is {_kind(fields[key])}, not {_type_name(types)}; {fix}")


def _is(value: object, types: type | tuple[type, ...]) -> bool:
    """isinstance, except that a boolean is no number (JSON's true is not 1)."""
    types = types if isinstance(types, tuple) else (types,)
    return isinstance(value, types) and (bool in types or not isinstance(value, bool))


def parse_json(
    data: bytes | str,
    source: str,
    top: type | tuple[type, ...] = dict,
    required: Shape | None = None,
    error: type[EvalHarnessError] = DataError,
    fix: str = "check the file",
    object_hook: Callable[[dict[str, Any]], Any] | None = None,
) -> Any:
    """JSON text from an untrusted source (a file's bytes, one line of a .jsonl), within the limits
    and of the expected shape; anything else is one ``error`` naming ``source``. Typed ``Any``: the
    shape is checked here at run time (``top``, ``required``), so callers read it without casts.
    ``object_hook``: json's, called on each object as it is decoded (innermost first), after the
    limits are checked: what it returns stands for the object (a large file held compactly while it
    is parsed, its lists of numbers freed one object at a time)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    check_json_limits(raw, source, error)
    text = decode_text(raw, source, error) if isinstance(data, bytes) else data
    try:
        value = json.loads(text, object_hook=object_hook)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise error(f"{source} is not valid JSON ({' '.join(str(exc).split())[:200]}); {fix}") from None
    check_shape(value, source, top, required, error, fix)
    return value


def read_json(
    path: str | os.PathLike[str],
    what: str,
    top: type | tuple[type, ...] = dict,
    required: Shape | None = None,
    error: type[EvalHarnessError] = DataError,
    fix: str = "check the file",
    limit: int = READ_WHOLE_LIMIT,
    object_hook: Callable[[dict[str, Any]], Any] | None = None,
) -> Any:
    """A JSON file a user, a run directory or a bundle supplies: guarded, within the limits, shaped
    (``object_hook``: as :func:`parse_json`'s)."""
    data = read_bytes(path, what, error, limit)
    return parse_json(data, named(what, path), top, required, error, fix, object_hook)


def _check_tree(value: object, source: str, error: type[EvalHarnessError]) -> None:
    """Depth, node count and integer size of a parsed YAML value, walked without recursion."""
    stack, nodes = [(value, 1)], 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH:
            raise _over(error, source, _DEEP)
        if nodes > MAX_YAML_NODES:
            raise _over(error, source, f"expands to over {MAX_YAML_NODES} values")
        if isinstance(node, int) and node.bit_length() > MAX_NUMBER_CHARS * 3.3:
            raise _over(error, source, _NUMBER)
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children)


MAX_YAML_BYTES = 4 << 20  # a config, an overrides file or a model's metadata is a few KiB
MAX_ALIAS_NODES = 100_000  # what a file's aliases may expand to (a "billion laughs" file is 9**9)


def read_yaml(
    path: str | os.PathLike[str],
    what: str,
    top: type | tuple[type, ...] = dict,
    error: type[EvalHarnessError] = DataError,
    fix: str = "check the file",
) -> Any:
    """A YAML file a user supplies (safe loader only), within the limits and of the ``top`` type."""
    source = named(what, path)
    return parse_yaml(read_text(path, what, error, MAX_YAML_BYTES), source, top, error, fix)


def parse_yaml(
    text: str,
    source: str,
    top: type | tuple[type, ...] = dict,
    error: type[EvalHarnessError] = DataError,
    fix: str = "check the file",
) -> Any:
    """YAML text from ``source``: its parser's events walked first (flat, nothing built: nesting
    and what the aliases expand to are bounded before the recursive loader meets them), then the
    safe loader (a ``!!python`` tag is an error, never run), then the tree's numbers and shape."""
    import yaml

    if _LONG_RUN in text.encode().translate(_NUMBER_MAP):
        raise _over(error, source, _NUMBER)
    try:
        _check_events(yaml.parse(text, Loader=yaml.SafeLoader), source, error)
        value = yaml.safe_load(text)
    except RecursionError:
        raise _over(error, source, _DEEP) from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise error(f"{source}: {terminal(' '.join(str(exc).split()), '')[:200]}; {fix}") from None
    except yaml.YAMLError as exc:
        reason = terminal(" ".join(str(exc).split()), "")[:200]
        raise error(f"{source} is not valid YAML ({reason}); {fix}") from None
    _check_tree(value, source, error)
    check_shape(value, source, top, None, error, fix)
    return value


def _check_events(events: Iterable[Any], source: str, error: type[EvalHarnessError]) -> None:
    """Nesting and alias expansion from the event stream alone: a deep or bomb file stops at the
    first event past the limit, whatever its size."""
    import yaml

    sizes: dict[str, int] = {}  # anchor -> the nodes it stands for
    stack: list[list[Any]] = [[None, 0]]  # [anchor, nodes so far] of each collection being read
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([event.anchor, 1])
            if len(stack) > MAX_DEPTH:
                raise _over(error, source, _DEEP)
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            anchor, nodes = stack.pop()
        elif isinstance(event, yaml.AliasEvent):
            anchor, nodes = None, sizes.get(event.anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            anchor, nodes = event.anchor, 1
        else:
            continue
        if anchor:
            sizes[anchor] = nodes
        stack[-1][1] += nodes
        if stack[-1][1] > MAX_ALIAS_NODES:
            raise _over(error, source, f"has aliases that expand to over {MAX_ALIAS_NODES} values")
