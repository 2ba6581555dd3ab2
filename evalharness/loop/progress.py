"""The run loop's progress bar: samples done of the listed ones, or seconds of a time-bounded run
(the one progress mechanism: :mod:`evalharness.core.bars`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from evalharness.core.bars import progress

if TYPE_CHECKING:  # for the type only
    from evalharness.tasks.live import Looped


class ProgressBar(Protocol):
    """What the loop asks of a bar: one more sample done, and the end (tqdm's or :class:`_SecondsBar`)."""

    def update(self) -> object: ...

    def close(self) -> object: ...


class _SecondsBar:
    """A progress bar counting seconds: a sample source bounded by time (``time_bound_s``, the
    benchmark's ``min_secs``) makes as many samples as the clock allows, so a count would say 0/50
    and then run to 4,029."""

    def __init__(self, seconds: float, desc: str, disable: bool) -> None:
        self.start = time.perf_counter()
        fmt = "{desc}: {percentage:3.0f}%|{bar}| {n:.1f}/{total:.1f} s"
        self.bar = progress(seconds, desc, "s", not disable, bar_format=fmt)

    def update(self) -> None:
        self.bar.n = min(time.perf_counter() - self.start, self.bar.total)
        self.bar.update(0)  # redrawn as tqdm's interval allows (sparse in a log: core/bars.py)

    def close(self) -> None:
        self.bar.close()


def progress_bar(task: Looped, total: int, shown: bool) -> ProgressBar:
    """Samples done of ``total``, or seconds of a time-bounded sample source."""
    seconds = getattr(task.samples, "time_bound_s", None)
    if seconds:
        return _SecondsBar(seconds, task.name, not shown)
    bar: ProgressBar = progress(total, task.name, "img", shown)  # a tqdm (untyped)
    return bar
