"""Config keys that were renamed so that each word means one thing (docs/changes.md): the
old spelling is refused with the new one, on the command line and in a config file alike, never
silently read or ignored."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

RENAMED = {
    "loop.cache": "loop.tensor_cache",  # the preprocessed-tensor cache
    "task.cache": "task.start_up",  # task=benchmark's cold/warm start-up passes
    "delegate.cache_dir": "delegate.compile_cache_dir",  # where a delegate's compile caches go
}


def _message(old: str) -> str:
    new = RENAMED[old]
    return f"{old} is now {new} ('cache' alone meant four things); use {new}=..."


def renamed_override(args: Iterable[str]) -> str | None:
    """The error for the first command-line override that uses an old key, or None."""
    for arg in args:
        key = arg.split("=", 1)[0].lstrip("+~")
        if key in RENAMED:
            return _message(key)
    return None


def renamed_in_group(group: str, node: Mapping) -> str | None:
    """The error for an old key inside a composed group (a config file of the user's), or None."""
    for old in RENAMED:
        parent, _, leaf = old.partition(".")
        if parent == group and leaf in node:
            return _message(old)
    return None
