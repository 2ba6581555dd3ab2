"""Handing the C heap's free pages back to the OS after a step that freed much of what it made.

glibc's malloc serves a block below its mmap threshold from the heap and keeps it there when freed;
the threshold rises to the size of the largest mmapped block freed (up to 32 MiB), so once a large
annotation file's text (12 MB for 2,500 COCO images) has been parsed and freed, every numpy array
below that size comes from the heap. pycocotools' ``accumulate()`` arrays (``precision`` and
``scores``, 7.4 MiB each for COCO's 80 classes) then stay resident after the scoring has dropped
them, and whatever the run does next (the next scoring, the run document) adds to them: the peak
RSS of a 2,500-image seg run was at its end, above the scoring's own. ``malloc_trim(0)`` gives the
free pages back (a walk of the heap: ~1 ms here). Linux with glibc only: elsewhere there is no such
function (musl, macOS, Windows return freed memory by their own rules) and this does nothing.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from functools import cache
from typing import Any


@cache
def _malloc_trim() -> Callable[[int], Any] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], Any] = ctypes.CDLL(None).malloc_trim  # the process's C library
    except (AttributeError, OSError):  # not glibc
        return None
    return trim


def release_free_heap() -> None:
    """Give the C heap's free pages back to the OS where glibc can (see the module docstring)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
