"""What a preparing thread's clock must not count: the span of the first invoke and its warm-up."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Held:
    """The first invoke and its warm-up (a GPU compiles its program there): preparing threads that
    run meanwhile wait for the cores or the GIL, and that wait is the compile's, already in
    ``first_inference_ms``, never the preprocessing's (it once read "9515 ms preprocess")."""

    start: float | None = None
    end: float | None = None

    def overlap(self, start: float, end: float) -> float:
        """Seconds of [start, end] inside the held span (so far, while it lasts)."""
        if self.start is None:
            return 0.0
        return max(0.0, min(end, self.end if self.end is not None else end) - max(start, self.start))
