"""Tables as data (title, headers, rows of text cells) and their rendering as terminal text.

Every report builds its sections once and hands them to a renderer — :func:`render_text` here,
:mod:`evalharness.core.markdown`, :mod:`evalharness.report.views.html` — so the terminal, Markdown and
HTML versions of a report cannot disagree. Text is escaped by the renderer, for its medium
(:mod:`evalharness.core.escape`): a label's ESC sequence is shown, never run by the terminal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evalharness.core.escape import terminal

_NUMBER = re.compile(r"^[+-]?(\d[\d.,]*(e[+-]?\d+)?%?|inf|n/a|)$")


@dataclass
class Section:
    title: str
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    key: str = ""  # a stable id (HTML anchors, tests)


def render_text(title: str, sections: list[Section]) -> str:
    """The report as terminal text: aligned tables, every text with its controls shown."""
    title = terminal(title, keep="")
    out = [title, "=" * len(title)]
    for s in sections:
        heading = terminal(s.title, keep="")
        out += ["", heading, "-" * len(heading)]
        if s.headers:
            out += _aligned([[terminal(c, keep="") for c in row] for row in [s.headers, *s.rows]])
        out += [terminal(n) for n in s.notes]
    return "\n".join(out) + "\n"


def numeric_columns(rows: list[list[str]], width: int) -> list[bool]:
    """Columns to right-align: every cell a number or empty, one at least not; the first column never."""
    return [
        i > 0 and any(r[i].strip() for r in rows) and all(_NUMBER.match(r[i].strip()) for r in rows)
        for i in range(width)
    ]


def _aligned(table: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    right = numeric_columns(table[1:], len(widths))
    lines = []
    for n, row in enumerate(table):
        cells = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def more_rows(total: int, shown: int) -> list[str]:
    """The note under a table cut to ``shown`` of ``total`` rows."""
    return [f"... {total - shown} more (all of them in --format json)"] if total > shown else []
