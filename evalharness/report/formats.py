"""The one table of output format names, shared by every report command's ``--format``.

Each name means the same in every command (``md`` is ``markdown``: the same bytes), and each
command accepts every name: one it cannot produce is refused with one error line naming the ones it
can, rather than a per-command list that drifts.
"""

from __future__ import annotations

import argparse
from typing import Any

NAMES = {
    "text": "text",
    "markdown": "markdown",
    "md": "markdown",
    "json": "json",
    "html": "html",
    "csv": "csv",
    "parquet": "parquet",
}


def canonical(name: str) -> str:
    """``md`` -> ``markdown``; every other name is its own."""
    return NAMES[name]


def shown(can: tuple[str, ...]) -> str:
    """``text|markdown (md)|json``: the names a command takes, aliases beside their format."""
    aliases = {c: [a for a, n in NAMES.items() if n == c and a != c] for c in can}
    return "|".join(c + (f" ({', '.join(aliases[c])})" if aliases[c] else "") for c in can)


class _Format(argparse.Action):
    """Stores the canonical name; a known format this command cannot produce is a usage error."""

    def __init__(self, *args: Any, can: tuple[str, ...], **kwargs: Any) -> None:
        self.can = can
        super().__init__(*args, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        value: Any,
        option_string: str | None = None,
    ) -> None:
        if canonical(value) not in self.can:
            parser.error(f"{option_string} {value}: this command writes {shown(self.can)}; give one of those")
        setattr(namespace, self.dest, canonical(value))


def add_format(parser: argparse.ArgumentParser, can: tuple[str, ...], default: str, note: str = "") -> None:
    """``--format`` taking any name of :data:`NAMES`; ``can``: the (canonical) formats this command
    produces."""
    parser.add_argument(
        "--format",
        action=_Format,
        can=can,
        choices=tuple(NAMES),
        default=default,
        metavar="{" + ",".join(n for c in can for n in NAMES if canonical(n) == c) + "}",
        help=f"{shown(can)} (default {default})" + (f"; {note}" if note else ""),
    )
