"""Listing a dataset folder one level deep, naming its defects instead of hiding them.

Symlink loops, broken links and FIFOs named like images are errors found when listing (whatever
``loop.strict`` says): they are defects of the folder, and a run must not hang on or silently skip
them. Only one level is listed, so a directory loop cannot make a listing recurse.
"""

from __future__ import annotations

import logging
import stat
from collections import Counter
from pathlib import Path

from evalharness.errors import DataError
from evalharness.fileguard import file_error_reason


def list_entries(folder: Path, unscored: Counter | None = None) -> list[tuple[Path, int | str]]:
    """(path, st_mode following links, or why stat failed) of each non-dot entry of ``folder``;
    dot entries are counted in ``unscored`` as ``hidden``.

    One level only, so a symlink loop cannot make a listing recurse or hang.
    """
    try:
        everything = list(folder.iterdir())
    except OSError as exc:
        reason = file_error_reason(exc, folder)
        raise DataError(f"cannot list {folder} ({reason}); check dataset.root") from None
    paths = sorted(p for p in everything if not p.name.startswith("."))
    if unscored is not None and len(paths) < len(everything):
        unscored["hidden"] += len(everything) - len(paths)
    out: list[tuple[Path, int | str]] = []
    for p in paths:
        try:
            out.append((p, p.stat().st_mode))
        except OSError as exc:
            out.append((p, file_error_reason(exc, p)))
    return out


def refuse(path: Path, reason: str) -> DataError:
    return DataError(f"{path}: {reason}; fix or remove it (checked when listing, whatever loop.strict)")


def not_read(path: Path) -> str:
    """The reason a file with an extension the listing does not take is not scored."""
    return f"extension {path.suffix.lower() or '(none)'} not read"


def list_images(
    folder: Path, extensions: tuple[str, ...], unscored: Counter | None = None, subdirs: bool = False
) -> dict[str, Path]:
    """Image files directly in ``folder`` by name; extension case-insensitive, dotfiles skipped.

    An image name that is not a regular file (symlink loop, broken symlink, FIFO...) is an error
    before the run: a defect of the folder, which skipping silently would hide. What is not taken
    is counted by reason in ``unscored`` (hidden, ``extension .x not read``, ``subdirectory`` unless
    ``subdirs`` says directories are expected there).
    """
    found = {}
    for p, mode in list_entries(folder, unscored):
        if p.suffix.lower() not in extensions:
            if unscored is not None and not isinstance(mode, str):
                if stat.S_ISDIR(mode):
                    unscored["subdirectory"] += not subdirs
                else:
                    unscored[not_read(p)] += 1
            continue
        if isinstance(mode, str):
            raise refuse(p, mode)
        if stat.S_ISREG(mode):
            found[p.name] = p
        elif not stat.S_ISDIR(mode):
            raise refuse(p, "not a regular file")
    return found


def warn_unscored(root: str, unscored: Counter) -> None:
    """One warning line for the files under a dataset root that will not be scored, by reason."""
    if unscored:
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(unscored.items()))
        logging.getLogger("evalharness").warning(
            "%d file(s) under %s are not scored: %s", sum(unscored.values()), root, reasons
        )
