"""Config keys that were renamed so that each word means one thing (docs/changes.md): the
old spelling is refused with the new one, on the command line and in a config file alike, never
silently read or ignored."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hydra.core.override_parser.types import Override

RENAMED = {
    "loop.cache": "loop.tensor_cache",  # the preprocessed-tensor cache
    "task.cache": "task.start_up",  # task=benchmark's cold/warm start-up passes
    "delegate.cache_dir": "delegate.compile_cache_dir",  # where a delegate's compile caches go
}


def _message(old: str) -> str:
    new = RENAMED[old]
    return f"{old} is now {new} ('cache' alone meant four things); use {new}=..."


def renamed_override(overrides: Iterable[Override]) -> str | None:
    """The error for the first command-line override (set, ``+``/``++`` added or ``~`` deleted) that
    uses an old key, or None."""
    for o in overrides:
        if o.key_or_group in RENAMED:
            return _message(o.key_or_group)
    return None


def renamed_in_group(group: str, node: Mapping[str, Any]) -> str | None:
    """The error for an old key inside a composed group (a config file of the user's), or None."""
    for old in RENAMED:
        parent, _, leaf = old.partition(".")
        if parent == group and leaf in node:
            return _message(old)
    return None
