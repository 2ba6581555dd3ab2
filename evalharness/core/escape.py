"""One escaping for every text output: text taken from files, made safe for where it is shown.

Label texts, image file names, model names and metadata come from files a user may not have
written. Each is escaped once, where it is rendered, for its medium — never on the way in, so the
documents keep the true text:

- terminal (and plain-text files): C0/C1 control characters, DEL and the bidirectional overrides
  are shown visibly (``\\x1b``, ``\\u202e``), so an ESC sequence cannot clear the screen, set the
  window title or hide text; newline and tab stay where they belong (:func:`terminal`);
- Markdown: no raw HTML (``<``, ``>``, ``&`` as entities) and no Markdown markup (emphasis, code,
  links, pipes, block starts) from a file's text (:func:`md_text`, :func:`md_line`,
  :func:`md_code`); :class:`Markdown` marks the markup a report writes itself;
- CSV: a text cell starting with ``=``, ``+``, ``-``, ``@``, tab or CR gets a leading ``'``, so a
  spreadsheet never runs it as a formula (:func:`csv_text`); numbers are not text and stay numbers;
  a cell's line break never splits its row (:func:`csv_lines`);
- HTML (and the SVG inside it): :func:`html_text`, controls shown as the terminal shows them, then
  ``<``, ``>``, ``&`` and quotes as entities, so a page printed to a terminal (``--format html`` on
  stdout) obeys no ESC sequence either.

Every escaping of text from files goes through this module; ``tests/unit/core/test_escape.py``
holds that no module outside it imports :mod:`html` to escape by itself.
"""

from __future__ import annotations

import csv
import html
import io
import re
from collections.abc import Iterable

_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A)]


def _visible(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TERMINAL = {keep: {c: _visible(c) for c in _CONTROLS if chr(c) not in keep} for keep in ("\n\t", "")}


def terminal(text: object, keep: str = "\n\t") -> str:
    """``text`` with every control character shown as an escape; ``keep``: the ones left as they
    are (newline and tab in a line of text; none in a table cell)."""
    table = _TERMINAL.get(keep)
    if table is None:
        table = {c: _visible(c) for c in _CONTROLS if chr(c) not in keep}
    return str(text).translate(table)


class Markdown(str):
    """Markdown a report wrote itself (``**FAIL**``, a code span): passed through, never escaped."""


_SPACE = re.compile(r"[ \t\n\r\f\v]+")
_MD_INLINE = re.compile(r"[\\`*~|]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|\](?=[(\[])")
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_MD_BLOCK_START = re.compile(r"^([#+\-=\[]|\d{1,9}[.)])")


def md_text(text: object) -> str:
    """Text for inline Markdown (a table cell, a sentence): one line, controls visible, HTML's
    ``<``, ``>``, ``&`` as entities, and the characters Markdown reads as markup backslash-escaped:
    code, emphasis, strike-through, the table's ``|``, and a ``]`` that would close a link or an
    image (so ``[x](y)`` and ``![x](y)`` stay text). An intraword ``_`` and a ``[`` never make markup
    on their own and stay, so names and intervals read as they are."""
    if isinstance(text, Markdown):
        return text
    flat = terminal(_SPACE.sub(" ", str(text)).strip(), keep="")
    flat = "".join(_MD_ENTITIES.get(ch, ch) for ch in flat)
    return _MD_INLINE.sub(lambda m: "\\" + m[0], flat)


def md_line(text: object) -> str:
    """:func:`md_text` for the start of a line: a heading, list, quote, rule or link-definition
    marker there is escaped too."""
    if isinstance(text, Markdown):
        return text
    return _MD_BLOCK_START.sub(lambda m: m[0][:-1] + "\\" + m[0][-1], md_text(text))


def md_heading(text: object) -> str:
    """A heading's text: :func:`md_text` with every ``#`` escaped (a trailing one would close it)."""
    return md_text(text).replace("#", "\\#")  # md_text leaves every "#" as it is


def md_code(text: object) -> Markdown:
    """A code span holding any text: its fence one backtick longer than the longest run of
    backticks inside, padded with a space where the text starts or ends with a backtick (CommonMark
    strips one each side). Controls visible, one line; no text, no span."""
    flat = terminal(_SPACE.sub(" ", str(text)).strip(), keep="")
    if not flat:
        return Markdown("")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat[0] == "`" or flat[-1] == "`" else ""
    return Markdown(f"{fence}{pad}{flat}{pad}{fence}")


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def html_text(text: object, quote: bool = True) -> str:
    """Text for HTML, in an element or an attribute value: controls shown (:func:`terminal`; newline
    and tab kept, HTML folds them), then :func:`html.escape`."""
    return html.escape(terminal(text), quote=quote)


def csv_text(text: str) -> str:
    """A CSV text cell a spreadsheet shows as text: controls shown (:func:`terminal`; a cell's
    newline and tab kept, :func:`csv_lines` quotes a newline), so a CSV on stdout obeys no ESC
    sequence; a leading ``'`` where it starts like a formula (``=``, ``+``, ``-``, ``@``, tab). Call
    it on text only: numbers stay numbers."""
    text = terminal(text)
    return "'" + text if text.startswith(_FORMULA_START) else text


def csv_lines(rows: Iterable[list[str]]) -> str:
    """Rows as CSV, one ``\\n`` line each; a cell holding a newline or a CR is quoted (the csv
    module quotes only the characters of its line terminator, so a bare CR would split a row)."""
    out = []
    for row in rows:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\r\n").writerow(row)
        out.append(buf.getvalue()[:-2] + "\n")
    return "".join(out)
