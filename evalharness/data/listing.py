"""Listing a dataset folder one level deep, naming its defects instead of hiding them.

Symlink loops, broken links and FIFOs named like images are errors found when listing (whatever
``loop.strict`` says): they are defects of the folder, and a run must not hang on or silently skip
them. Only one level is listed, so a directory loop cannot make a listing recurse.
"""

from __future__ import annotations

import logging
import os
import stat
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from evalharness.core.errors import DataError
from evalharness.core.fileguard import file_error_reason

log = logging.getLogger("evalharness")


def list_entries(folder: Path, unscored: Counter[str] | None = None) -> Iterator[tuple[str, int | str]]:
    """(name, st_mode following links, or why stat failed) of each non-dot entry of ``folder``, in
    sorted name order; dot entries are counted in ``unscored`` as ``hidden``.

    One level only, so a symlink loop cannot make a listing recurse or hang. Names, not ``Path``
    objects, and one stat at a time: a 50,000-file folder costs its names and nothing per file more.
    """
    try:
        names = os.listdir(folder)
    except OSError as exc:
        reason = file_error_reason(exc, folder)
        raise DataError(f"cannot list {folder} ({reason}); check dataset.root") from None
    visible = sorted(name for name in names if not name.startswith("."))
    if unscored is not None and len(visible) < len(names):
        unscored["hidden"] += len(names) - len(visible)
    del names
    undecodable = [name for name in visible if not _utf8(name)]
    if undecodable:  # no run record, manifest or predictions line can name it: left out, by name
        visible = [name for name in visible if _utf8(name)]
        example = os.fsencode(os.path.join(folder, undecodable[0]))
        reason = f"file name not UTF-8 (e.g. {example!r}: rename it)"
        if unscored is not None:
            unscored[reason] += len(undecodable)
        else:
            log.warning("%s: %d left out, %s", folder, len(undecodable), reason)
    for name in visible:
        path = os.path.join(folder, name)
        try:
            yield name, os.stat(path).st_mode
        except OSError as exc:
            yield name, file_error_reason(exc, Path(path))


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.listdir decodes undecodable bytes to lone surrogates
        return False
    return True


def refuse(path: Path, reason: str) -> DataError:
    return DataError(f"{path}: {reason}; fix or remove it (checked when listing, whatever loop.strict)")


def suffix(name: str) -> str:
    """A file name's extension, lower case with the dot ('' for none), as ``Path.suffix`` has it
    (without building a Path, which would intern every file name of a large folder)."""
    i = name.rfind(".")
    return name[i:].lower() if 0 < i < len(name) - 1 else ""


def not_read(name: str) -> str:
    """The reason a file with an extension the listing does not take is not scored."""
    return f"extension {suffix(name) or '(none)'} not read"


def list_images(
    folder: Path, extensions: tuple[str, ...], unscored: Counter[str] | None = None, subdirs: bool = False
) -> list[str]:
    """Names of the image files directly in ``folder``, sorted; extension case-insensitive, dotfiles
    skipped.

    An image name that is not a regular file (symlink loop, broken symlink, FIFO...) is an error
    before the run: a defect of the folder, which skipping silently would hide. What is not taken
    is counted by reason in ``unscored`` (hidden, ``extension .x not read``, ``subdirectory`` unless
    ``subdirs`` says directories are expected there).
    """
    found = []
    for name, mode in list_entries(folder, unscored):
        if suffix(name) not in extensions:
            if unscored is not None and not isinstance(mode, str):
                if stat.S_ISDIR(mode):
                    unscored["subdirectory"] += not subdirs
                else:
                    unscored[not_read(name)] += 1
            continue
        if isinstance(mode, str):
            raise refuse(Path(folder, name), mode)
        if stat.S_ISREG(mode):
            found.append(name)
        elif not stat.S_ISDIR(mode):
            raise refuse(Path(folder, name), "not a regular file")
    return found


def own_files_scored(root: str, unscored: Counter[str], files: Iterable[str | None]) -> None:
    """The dataset's own files lying among its images (a labels.csv beside the photos) are read, not
    left out: they leave the ``unscored`` count."""
    for file in filter(None, files):
        path, reason = Path(file), not_read(Path(file).name)
        if path.parent.resolve() == Path(root).resolve() and unscored[reason] > 0:
            unscored[reason] -= 1
            if not unscored[reason]:
                del unscored[reason]


# Text files kept beside images (ground truth, class lists, notes, manifests): never an image, so not
# scoring them loses nothing. They stay in provenance.dataset.unscored but are not warned about on
# every run (a labels.csv beside the photos that this run does not read).
SIDECAR_EXTENSIONS = (".csv", ".txt", ".json", ".md", ".yaml", ".yml")
_SIDECARS = {not_read(f"x{ext}") for ext in SIDECAR_EXTENSIONS}


def warn_unscored(root: str, unscored: Counter[str]) -> None:
    """One warning line for the files under a dataset root that will not be scored, by reason
    (sidecar text files left out of the line: see :data:`SIDECAR_EXTENSIONS`)."""
    shown = {reason: n for reason, n in unscored.items() if reason not in _SIDECARS}
    if shown:
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(shown.items()))
        logging.getLogger("evalharness").warning(
            "%d file(s) under %s are not scored: %s", sum(shown.values()), root, reasons
        )
