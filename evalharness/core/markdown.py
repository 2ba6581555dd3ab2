"""The one Markdown renderer: table cells, tables, collapsed blocks and a sectioned document.

Every Markdown a report writes — ``--format markdown`` (``md``) of each report command,
``sweep.md``, a comparison's and a repair's ``.md`` files, the pull-request comment of
:mod:`evalharness.report.views.pr_comment` — is built from these pieces, so text from files is escaped one
way (:mod:`evalharness.core.escape`): it renders as the text it is, never as HTML or markup.
"""

from __future__ import annotations

from evalharness.core.escape import Markdown, html_text, md_heading, md_line, md_text, terminal
from evalharness.core.tables import Section, numeric_columns


def cell(text: object) -> str:
    """One table cell: one line of escaped text; markup a report wrote (:class:`Markdown`, a code
    span) keeps its form with its ``|`` escaped, which GFM tables unescape even inside code."""
    if isinstance(text, Markdown):
        return " ".join(text.split()).replace("|", "\\|")
    return md_text(text)


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub table; every row has the header's number of cells."""
    width = len(headers)
    rows = [[*r[:width], *[""] * (width - len(r))] for r in rows]
    right = numeric_columns([[str(c) for c in r] for r in rows], width)
    out = ["| " + " | ".join(cell(h) for h in headers) + " |"]
    out.append("|" + "|".join("---:" if r else "---" for r in right) + "|")
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return out


def details(summary: str, body: list[str]) -> list[str]:
    """A collapsed block; the blank lines let GitHub render the Markdown inside it. The summary sits
    in HTML, so it is escaped for HTML."""
    shown = html_text(" ".join(terminal(summary, keep="").split()), quote=False)
    return ["<details>", f"<summary>{shown}</summary>", "", *body, "", "</details>"]


def notes(lines: list[str]) -> list[str]:
    """Lines of text, each its own line (a hard break after it)."""
    return [f"{md_line(n)}  " for n in lines]


def section_body(s: Section) -> list[str]:
    """A section's table (when it has one), then its notes."""
    out = table(s.headers, s.rows) if s.headers else []
    if s.notes:
        out += [""] if out else []
        out += notes(s.notes)
    return out


def render_markdown(title: str, sections: list[Section]) -> str:
    """A document: the title as the heading, each section under its own heading."""
    out = [f"# {md_heading(title)}"]
    for s in sections:
        out += ["", f"## {md_heading(s.title)}", "", *section_body(s)]
    return "\n".join(out) + "\n"
