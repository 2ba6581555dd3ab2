"""Progress on stderr, the one way every command that takes more than a few seconds shows it: the
run loop (images), ``compare`` (candidates), a repair (model evaluations), ``explain`` (its steps
and the ops it tries) and ``report index`` (the diffs it renders).

A tqdm bar on stderr that clears itself when done (``leave=False``), so stdout keeps only the
results and a finished command leaves no bar behind. Shown by default, as the run loop's is
(``loop.progress=true``); a command whose config has ``loop.progress`` follows it (``compare``, a
repair), and the report commands show theirs always (stderr is not their output). Sparse where
stderr is no terminal (a CI log, a pipe): every redraw there is kept, so the bar is drawn at its
start, when a step names itself (``compare``'s candidate) and at most once a minute
(:data:`LOG_INTERVAL_S`), not ten times a second. Hidden (``loop.progress=false``), a bar is a
counter that draws nothing and tqdm is never imported (a run's start-up does not pay for it).
"""

from __future__ import annotations

import sys
from typing import Any

LOG_INTERVAL_S = 60.0  # the fewest seconds between two redraws where stderr is no terminal


def progress(total: float | None, desc: str, unit: str = "step", shown: bool = True, **options: Any) -> Any:
    """A bar of ``total`` steps (None: a count and a rate, when the total is not known beforehand);
    sparse where stderr is no terminal; not ``shown``: a :class:`HiddenBar`."""
    if not shown:
        return HiddenBar(total)
    from tqdm import tqdm

    if not _terminal():
        options = {"mininterval": LOG_INTERVAL_S, "maxinterval": LOG_INTERVAL_S, **options}
    return tqdm(total=total, desc=desc, unit=unit, leave=False, **options)


class HiddenBar:
    """What callers ask of a tqdm bar (``update``, ``n``, ``total``, ``set_postfix_str``, ``close``,
    ``with``), as a disabled tqdm answers it, without tqdm: counts and draws nothing."""

    disable = True

    def __init__(self, total: float | None) -> None:
        self.total, self.n = total, 0.0

    def update(self, n: float = 1) -> None:
        self.n += n

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> HiddenBar:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def _terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without a descriptor, or closed
        return False
