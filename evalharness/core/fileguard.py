"""Before any file is opened for reading: special files are refused, OS errors get a short reason.

A FIFO named like a label file, an annotation file or a metrics.json would block the reader forever;
a device would never end. Every reader of user-given or run-directory files asks here first.
"""

from __future__ import annotations

import errno
import os
import stat

from evalharness.core.errors import DataError


def file_error_reason(exc: OSError, path: str | os.PathLike) -> str:
    """A short reason for an OSError on a dataset file (symlink loop, broken symlink, ...)."""
    if exc.errno == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links)"
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return f"broken symlink to {os.readlink(path)}"
    if exc.errno is not None and exc.strerror:
        return exc.strerror.lower()
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def refuse_special_file(path: str | os.PathLike, what: str) -> None:
    """Before a text or JSON file is opened: a FIFO, device or socket would block or never end, so
    it is refused by name (a missing file or a directory is left to the reader's own message)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise DataError(f"{what} {path}: {file_error_reason(exc, path)}; check the path") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise DataError(f"{what} {path} is not a regular file (FIFO, device or socket); pass the file itself")
