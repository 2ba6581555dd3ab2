"""Derived state: one rule for every store of it (the tensor cache, cached model variants and AOT
builds, the compile caches' state, a resume's identity).

An entry is keyed on what it was derived from, by content, and is either read whole and verified or
rebuilt: a file that is missing is a plain miss; one that cannot be read, parsed, has the wrong
shape or fails its check (a crash's 0-byte file, a truncated one, garbage, ``[]`` where an object
belongs) is *damaged*: it is rebuilt and said once (one warning line, and the reason in the store's
record in metrics.json), never used and never an internal error. Callers read through
:func:`read_or_rebuild`, so the set of failures that count as damage is written once, here.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from tokenize import TokenError
from typing import TypeVar

from evalharness.core.documents import JSONMap
from evalharness.core.errors import EvalHarnessError
from evalharness.core.escape import terminal
from evalharness.core.untrusted import parse_json

T = TypeVar("T")

log = logging.getLogger("evalharness")

# What reading a damaged file raises: OSError (unreadable, mmap of a short file), ValueError (bad JSON,
# bad UTF-8, a bad .npy header, :class:`Damaged`), SyntaxError and TokenError (numpy parses a .npy
# header with ast.literal_eval, then tokenize), MemoryError (a header claiming a huge shape),
# EOFError, and the lookups a wrong shape trips. A JSON record is read by the one untrusted reader
# (:func:`read_json_object`), so its nesting and number limits hold before a recursive parser runs.
# Fuzzed: tests/unit/core/test_derived_damage.py.
DAMAGE = (
    OSError, ValueError, SyntaxError, TokenError, MemoryError, EOFError,
    TypeError, KeyError, IndexError, AttributeError, OverflowError,
)  # fmt: skip


class Damaged(EvalHarnessError, ValueError):
    """An entry that was read but does not verify (wrong shape, another key, a changed source, over
    the untrusted reader's limits): a ValueError, so :data:`DAMAGE` counts it, and an
    EvalHarnessError, so the untrusted reader can raise it."""


def read_or_rebuild(what: str, read: Callable[[], T], rebuilt: list[str] | None = None) -> T | None:
    """``read()``, or None when the entry must be rebuilt. A missing file is a silent miss; any other
    failure is damage: said once as ``<what>: <why>; rebuilt`` and appended to ``rebuilt``."""
    try:
        return read()
    except FileNotFoundError:
        return None
    except DAMAGE as exc:
        say_rebuilt(what, why(exc), rebuilt)
        return None


def say_rebuilt(what: str, why: str, rebuilt: list[str] | None = None) -> str:
    """The one line that says an entry of derived state was not used, and why."""
    line = f"{what}: {why}; rebuilt, not used"
    log.warning("%s", line)
    if rebuilt is not None:
        rebuilt.append(line)
    return line


def why(exc: BaseException) -> str:
    """What went wrong, one short printable line: a :class:`Damaged`'s own words, else the failure
    named. Parsers quote the file's bytes in their messages (a .npy header): control characters are
    escaped, so a damaged file cannot write to the terminal."""
    text = terminal(str(exc).splitlines()[0] if str(exc) else "", keep="")
    return text[:200] if isinstance(exc, Damaged) else f"unreadable ({type(exc).__name__}: {text[:160]})"


def read_json_object(path: str) -> JSONMap:
    """A JSON file that must hold an object, through the one reader of untrusted JSON (limits,
    UTF-8, shape); anything else raises :class:`Damaged`. A missing file stays a FileNotFoundError:
    a plain miss."""
    with open(path, "rb") as f:
        data = f.read()
    why_damaged = "cut short, or written by another version"
    record: JSONMap = parse_json(data, os.path.basename(path), dict, error=Damaged, fix=why_damaged)
    return record


def file_state(path: str) -> tuple[int, int, int, int] | None:
    """(size, mtime_ns, inode, ctime_ns) of a file; None when it cannot be stat'ed. Any write to the
    file or replacement of it changes at least ctime_ns, which no user call can set back, so an equal
    state means the bytes are the ones seen when the state was taken (one stat, ~2 us)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns
