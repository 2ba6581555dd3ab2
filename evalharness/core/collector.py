"""Pausing Python's cyclic garbage collector around work that makes many containers and no cycles.

Each collection the collector starts walks every container alive in its generation; a step that
allocates hundreds of thousands of small lists and dicts (parsing records, pycocotools' per-image
matching) starts many collections, each walking everything the run already holds, so the walks
grow with the run's size and can cost as much as the step itself. Reference counting still frees
what such a step drops; cycles it made are collected once the collector runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cycles_uncollected() -> Iterator[None]:
    """The cyclic collector paused for the block (left as it was found: a caller's pause stands)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
