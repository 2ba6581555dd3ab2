"""Before any file is opened for reading: special files are refused, OS errors get a short reason.

A FIFO named like a label file, an annotation file or a metrics.json would block the reader forever;
a device would never end. Every reader of user-given or run-directory files asks here first.
"""

from __future__ import annotations

import errno
import os
import stat

from evalharness.core.errors import DataError


def file_error_reason(exc: OSError, path: str | os.PathLike[str]) -> str:
    """A short reason for an OSError on a dataset file (symlink loop, broken symlink, ...)."""
    if exc.errno == errno.ELOOP:
        return "symlink loop (too many levels of symbolic links)"
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return f"broken symlink to {os.readlink(path)}"
    if exc.errno is not None and exc.strerror:
        return exc.strerror.lower()
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def named(what: str, path: str | os.PathLike[str]) -> str:
    """How an error names a file: ``quant.recipe=/x.json`` for a key given as ``what="quant.recipe="``,
    else ``COCO annotation file /x.json``."""
    return f"{what}{path}" if what.endswith("=") else f"{what} {path}"


# What a reader takes whole into memory (labels, ground truth, annotations, a run's metrics.json and
# predictions): a larger file is a wrong path (a video, a disk image), not data to try.
READ_WHOLE_LIMIT = 4 << 30


def refuse_special_file(path: str | os.PathLike[str], what: str, limit: int = READ_WHOLE_LIMIT) -> None:
    """Before a file is read whole: a FIFO, device or socket would block or never end, and a file
    over ``limit`` bytes would fill the memory, so either is refused by name (a missing file or a
    directory is left to the reader's own message). Every reader of a user-given or run-directory
    file asks here first."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise DataError(f"{named(what, path)}: {file_error_reason(exc, path)}; check the path") from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        raise DataError(
            f"{named(what, path)} is not a regular file (FIFO, device or socket); pass the file itself"
        )
    if stat.S_ISREG(st.st_mode) and st.st_size > limit:
        raise DataError(
            f"{named(what, path)} is {st.st_size} bytes, over the {limit} read whole; check the path"
        )
