"""Numbers a run holds for its whole length but reads rarely, kept in an unlinked temporary file.

A run keeps what it scores at the end (its detections, the annotations' polygons) for its whole
length, and reads each part only a few times, mostly in order. Held in memory they grew the RSS
with the run (a 2,500-image seg run: ~9 MiB of rows, ~8 MiB of polygon coordinates). Written here
they sit in the OS's page cache, not the process: :class:`SpillFile` is made unlinked
(``tempfile.TemporaryFile``: it has no name, or loses it at once, so nothing is left behind even
after a kill, and nothing is written in the user's folders) and read back at an offset;
:class:`SpilledArray` is a 1-D array in it, read a slice at a time.
"""

from __future__ import annotations

import os
import tempfile
import threading
from typing import Any

import numpy as np

SPILL_BYTES = 2**16  # what is worth a file: below it an array stays in memory


class SpillFile:
    """Chunks' bytes in an unlinked temporary file: written once, read back at an offset (``pread``
    where the OS has it, so that a forked child reading the same descriptor cannot move a shared
    file position under this process; else a seek and read under a lock). The file is made at the
    first write and closed with this object."""

    def __init__(self) -> None:
        self._file: Any = None
        self._end = 0
        self._lock = threading.Lock()

    def write(self, rows: np.ndarray) -> int:
        """Append ``rows`` (C-contiguous); the offset they were written at."""
        data = np.ascontiguousarray(rows).data.cast("B")
        with self._lock:
            try:
                if self._file is None:  # held open for this object's life, closed with it
                    self._file = tempfile.TemporaryFile(prefix="evalharness-spill-", buffering=0)  # noqa: SIM115
                at = self._end
                self._file.seek(at)
                written = 0
                while written < len(data):
                    written += self._file.write(data[written:])
            except OSError as exc:  # the file has no name: say which folder, and how to choose another
                raise OSError(
                    exc.errno,
                    f"{exc.strerror or exc} in the temporary folder where the run keeps rows it reads back "
                    "(TMPDIR chooses the folder)",
                    tempfile.gettempdir(),
                ) from exc
            self._end += len(data)
        return at

    def read(self, at: int, size: int) -> bytes:
        """The ``size`` bytes written at offset ``at``."""
        if hasattr(os, "pread"):
            parts, done = [], 0
            while done < size:
                part = os.pread(self._file.fileno(), size - done, at + done)
                if not part:
                    raise OSError(f"the temporary file ended at {at + done}, {size - done} bytes short")
                parts.append(part)
                done += len(part)
            return parts[0] if len(parts) == 1 else b"".join(parts)
        with self._lock:  # pragma: no cover - Windows
            self._file.seek(at)
            data: bytes = self._file.read(size)
            return data


class SpilledArray:
    """A 1-D array written once to a :class:`SpillFile`; ``[a:b]`` reads that slice back (a new
    read-only array each time), :meth:`whole` all of it. Pickled as the plain array it holds (a
    spawned child process gets the values, not the file)."""

    def __init__(self, file: SpillFile, array: np.ndarray) -> None:
        self.dtype = array.dtype
        self._count = len(array)
        self.file, self._at = file, file.write(array)

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: slice) -> np.ndarray:
        start, stop, step = index.indices(self._count)
        if step != 1:
            raise IndexError("a spilled array is read in contiguous slices")
        if stop <= start:
            return np.empty(0, dtype=self.dtype)
        size = self.dtype.itemsize
        return np.frombuffer(self.file.read(self._at + start * size, (stop - start) * size), self.dtype)

    def whole(self) -> np.ndarray:
        return self[:]

    def __reduce__(self) -> tuple[Any, ...]:
        return (np.asarray, (self.whole(),))


def spilled(array: np.ndarray, file: SpillFile | None) -> np.ndarray | SpilledArray:
    """``array`` written to ``file`` if it is worth it (:data:`SPILL_BYTES`; ``file`` None: never)."""
    return array if file is None or array.nbytes < SPILL_BYTES else SpilledArray(file, array)
