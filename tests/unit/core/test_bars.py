"""Progress bars are sparse where stderr is no terminal (a CI log, a pipe: every redraw is kept
there): drawn at the start and at most once a minute, not ten times a second."""

from __future__ import annotations

import io
import sys

from evalharness.core.bars import LOG_INTERVAL_S, progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_sparse_where_stderr_is_no_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress(3, "run").mininterval == 0.1  # tqdm's own on a terminal
    assert progress(3, "run", shown=False).disable  # loop.progress=false: off everywhere
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a file or a pipe
    bar = progress(1000, "run")
    assert not bar.disable and bar.mininterval == LOG_INTERVAL_S == 60
    for _ in range(1000):
        bar.update(1)
    bar.close()
    assert sys.stderr.getvalue().count("run:") <= 3  # the start, (the end cleared): not 1000 redraws


def test_a_hidden_bar_counts_without_tqdm(monkeypatch):
    """loop.progress=false: no tqdm imported (start-up), and a bar that answers as a disabled one."""
    monkeypatch.setitem(sys.modules, "tqdm", None)  # importing it now fails
    with progress(None, "repair", "evaluation", shown=False) as bar:
        bar.update(1)
        bar.update(2)
        bar.set_postfix_str("the held-out part")
    assert bar.n == 3 and bar.total is None and bar.disable
    seconds = progress(2.5, "run", "s", shown=False)
    seconds.n = min(1.0, seconds.total)
    seconds.update(0)
    seconds.close()
    assert seconds.n == 1.0
