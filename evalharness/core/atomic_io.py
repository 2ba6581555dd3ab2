"""Files written whole, atomically (temp file, fsync, rename): a reader sees the old file or the
new one, never half of either. Every file evalharness writes whole goes through here; JSON is
deterministic (sorted keys) and strict (NaN and Inf written as null).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from typing import IO, Any


def atomic_write_text(path: str, text: str) -> None:
    atomic_write_chunks(path, (text,))


def atomic_write_bytes(path: str, data: bytes) -> None:
    atomic_write_chunks(path, (data,))


def atomic_create_text(path: str, text: str) -> None:
    """Like :func:`atomic_write_text`, but only where ``path`` does not exist yet: of two writers
    racing for one path, exactly one wins and the other gets :class:`FileExistsError`."""
    atomic_write_chunks(path, (text,), exclusive=True)


def atomic_write_chunks(path: str, chunks: Iterable[str | bytes], exclusive: bool = False) -> None:
    """Write ``chunks`` to a temporary file, fsync, rename: a reader sees the old file or the new one.
    ``exclusive``: link instead of rename, which refuses an existing ``path`` atomically. An OS
    error (a full or read-only file system) names ``path``, not the temporary file the user never
    gave."""
    try:
        _write_chunks(path, chunks, exclusive)
    except FileExistsError:
        raise
    except OSError as exc:
        temporary = exc.filename is None or os.path.basename(str(exc.filename)).startswith(".tmp-")
        if not temporary:
            raise
        raise type(exc)(exc.errno, exc.strerror, path) from None


def _write_chunks(path: str, chunks: Iterable[str | bytes], exclusive: bool) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp creates 0600; give the usual file mode
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
            sync_open_file(f)
        if exclusive:
            os.link(tmp, path)
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    _fsync_path(directory)


def sync_open_file(f: IO[Any]) -> None:
    """An open file's bytes on disk: Python's buffer flushed to the OS first, then fsynced. The
    order is the point: an fsync before the flush syncs only what the OS had, and the records still
    in the buffer are lost by a power cut after a commit that names them."""
    f.flush()
    os.fsync(f.fileno())


def sync_paths(paths: Iterable[str]) -> None:
    """Each existing file of ``paths`` fsynced (whoever wrote it, through whatever handle: fsync
    acts on the file, not on the descriptor), then each of their directories (a file created since
    the directory was last synced has no entry on disk without it). The commit point's helper: a
    document naming these files is written only after this returns."""
    directories = []
    for path in paths:
        if not os.path.isfile(path):
            continue
        _fsync_path(path)
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in directories:
            directories.append(directory)
    for directory in directories:
        _fsync_path(directory)


def _fsync_path(path: str) -> None:
    """fsync of a file or a directory by its path (a directory: its entries)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)



def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def dumps(doc: Mapping[str, Any]) -> str:
    """Deterministic JSON: sorted keys, 2-space indent, no NaN (written as null)."""
    return json.dumps(no_nan(doc), indent=2, sort_keys=True, allow_nan=False) + "\n"


def strict_json_line(record: dict[str, Any]) -> str:
    """One record as a line of strict JSON; the walk that nulls NaN/Inf runs only for a record
    that holds one (the common record goes straight to the encoder)."""
    try:
        return _STRICT_LINE.encode(record) + "\n"
    except ValueError:
        return _STRICT_LINE.encode(no_nan(record)) + "\n"


# json.dumps(..., sort_keys=True, allow_nan=False)'s encoder, made once: json.dumps builds a new one
# for every call given options, a few µs of every predictions line
_STRICT_LINE = json.JSONEncoder(sort_keys=True, allow_nan=False)


def no_nan(value: Any, inf_as_text: bool = False) -> Any:
    """Strict JSON values: NaN and +-Inf (which JSON cannot hold) become null; with ``inf_as_text``
    +-Inf become the strings "inf" / "-inf" (where infinity means something, e.g. an SNR of
    identical outputs)."""
    if isinstance(value, float) and not math.isfinite(value):
        if inf_as_text and math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return None
    if isinstance(value, dict):
        return {k: no_nan(v, inf_as_text) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [no_nan(v, inf_as_text) for v in value]
    return value
