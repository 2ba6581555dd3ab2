"""release_free_heap (core/heap.py) calls glibc's malloc_trim where there is one and does nothing
elsewhere."""

from __future__ import annotations

import sys

from evalharness.core import heap


def test_trims_on_glibc_and_does_nothing_elsewhere(monkeypatch):
    heap._malloc_trim.cache_clear()
    heap.release_free_heap()  # whatever this machine is: no error
    calls = []
    monkeypatch.setattr(heap, "_malloc_trim", lambda: calls.append)
    heap.release_free_heap()
    assert calls == [0]
    monkeypatch.undo()
    heap._malloc_trim.cache_clear()
    monkeypatch.setattr(sys, "platform", "darwin")
    assert heap._malloc_trim() is None
    heap.release_free_heap()
    heap._malloc_trim.cache_clear()
