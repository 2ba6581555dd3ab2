"""One escaping for every text output (core/escape.py), without runs: the functions themselves, then
every hostile string through every medium's renderer — Markdown rendered by markdown-it-py,
terminal text, CSV read back by the csv module."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import pytest

from evalharness.core.escape import Markdown, csv_text, md_code, md_heading, md_line, md_text, terminal
from evalharness.core.markdown import cell, details, render_markdown, table
from evalharness.core.tables import Section, render_text

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "a ``` b `` c ` d",
    "`starts and ends`",
    "a | b",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "=cmd|' /C calc'!A0",
    "+1",
    "@SUM(1)",
    "-2+3",
    "\tindent",
    "\rreturn",
    "![x](http://example.invalid/x.png)",
    "[click](javascript:alert(1))",
    "*em* __strong__ ~~gone~~ &amp; &#60;b&#62;",
    "# heading",
    "- item",
    "12. item",
    "===",
    "back\\slash\\",
    "\x9b31m C1 \x7f DEL \u202e bidi",
]
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def test_terminal_shows_controls_keeps_newline_and_tab():
    assert terminal("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert terminal("\x1b]0;t\x07\x00\x7f\x9b\u202e") == "\\x1b]0;t\\x07\\x00\\x7f\\x9b\\u202e"
    assert terminal("line\n\tnext") == "line\n\tnext"
    assert terminal("cell\n\tx", keep="") == "cell\\x0a\\x09x"
    assert terminal("café — ok ✓") == "café — ok ✓"
    assert terminal(3) == "3"


def test_markdown_text_escapes_html_and_markup_but_reads_as_it_is():
    assert md_text("<b>&") == "&lt;b&gt;&amp;"
    assert md_text("a|b *c* `d` ~e~ \\") == "a\\|b \\*c\\* \\`d\\` \\~e\\~ \\\\"
    assert md_text("mobilenet_v2_1.0_224 _x_") == "mobilenet_v2_1.0_224 \\_x\\_"
    assert md_text("[+0.01, +0.02] [a](b) ![c][d]") == "[+0.01, +0.02] [a\\](b) ![c\\][d]"
    assert md_text(" two\nlines\t ") == "two lines"
    assert md_text(Markdown("**FAIL**")) == "**FAIL**"


def test_markdown_line_starts_and_headings():
    assert [md_line(t) for t in ("# h", "- i", "+ i", "12. i", "3) i", "===", "[a]: u", "ok")] == [
        "\\# h", "\\- i", "\\+ i", "12\\. i", "3\\) i", "\\===", "\\[a]: u", "ok",
    ]  # fmt: skip
    assert md_heading("a # b #") == "a \\# b \\#"


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("x", "`x`"),
        ("a`b", "``a`b``"),
        ("a ``` b", "````a ``` b````"),
        ("`x`", "`` `x` ``"),
        ("a\nb", "`a b`"),
    ],
)
def test_code_span_fence_is_longer_than_any_backtick_run(text, span):
    assert md_code(text) == span and isinstance(md_code(text), Markdown)
    assert md_code(" \n") == ""


def test_csv_text_neutralises_formula_starts_only():
    assert [csv_text(t) for t in ("=1+2", "+1", "-x", "@SUM(1)", "\tx")] == [
        "'=1+2", "'+1", "'-x", "'@SUM(1)", "'\tx",
    ]  # fmt: skip
    assert csv_text("\rx") == "\\x0dx"  # a CR is a control: shown, so nothing is left to run as a formula
    assert csv_text("=\x1b[2J") == "'=\\x1b[2J"
    assert csv_text("cat.png") == "cat.png" and csv_text("a=b") == "a=b"


def test_table_cells_keep_markup_written_by_the_report():
    assert cell(Markdown("**FAIL**")) == "**FAIL**"
    assert cell(md_code("a|b")) == "`a\\|b`"  # GFM tables unescape \| inside code spans
    assert details("<b>\x1b", []) == ["<details>", "<summary>&lt;b&gt;\\x1b</summary>", "", "", "</details>"]


# every hostile string × every medium -------------------------------------------------------------
class _Html(HTMLParser):
    """Tags, attributes and table cells' text of rendered HTML."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.cells, self._cell = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]
        if tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.cells.append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def rendered(markdown: str) -> _Html:
    from markdown_it import MarkdownIt

    parser = _Html()
    parser.feed(MarkdownIt("commonmark").enable("table").render(markdown))
    return parser


def _document(text: str) -> str:
    section = Section(text, [text, "n"], [[text, "1"]], [text, f"note: {text}"])
    lines = ["", *table(["code", "n"], [[md_code(text), "2"]]), "", *details(text, ["x"]), ""]
    return (
        render_markdown(text, [section])
        + "\n".join(lines)
        + "\n"
        + md_line(text)
        + " "
        + md_code(text)
        + "\n"
    )


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_renders_no_live_html_and_shows_the_text(text):
    html = rendered(_document(text))
    assert not {"script", "img", "svg", "a", "iframe"} & set(html.tags), html.tags
    assert not [a for a in html.attributes if a.startswith("on")]
    shown = terminal(re.sub(r"[ \t\n\r\f\v]+", " ", text).strip(), keep="")
    assert html.cells == [shown, "n", shown, "1", "code", "n", shown, "2"]  # exactly the text, escaped


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_text_has_no_raw_control(text):
    out = render_text(text, [Section(text, [text, "n"], [[text, "1"]], [text])])
    assert not [ch for ch in out if ch not in "\n\t" and (ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0)]
    assert "\u202e" not in out


@pytest.mark.parametrize("text", HOSTILE)
def test_csv_has_no_formula_cell(text):
    from evalharness.report.commands.export import csv_cell
    from evalharness.report.commands.sweep import to_csv

    written = to_csv([text, "value"], [{text: text, "value": -0.5}, {text: csv_cell(text), "value": 2}])
    rows = list(csv.reader(io.StringIO(written, newline="")))
    assert [r[1] for r in rows] == ["value", "-0.5", "2"]  # numbers stay numbers
    assert all(not c.startswith(FORMULA) for r in rows for c in r[:1] if c != "-0.5")
    assert rows[1][0] == csv_text(text)


def test_every_evalharness_logger_shows_controls_not_sends_them(caplog):
    import logging

    import evalharness.core.boundary  # noqa: F401 - installs the escape of log records

    with caplog.at_level(logging.WARNING):
        for name in ("evalharness", "evalharness.report", "evalharness.runtime.npu_backend"):
            logging.getLogger(name).warning("file %s", "a\x1b[2Jb")
    assert [r.getMessage() for r in caplog.records] == ["file a\\x1b[2Jb"] * 3


def test_every_warning_shows_its_controls_on_stderr():
    """A library's warning (matplotlib's missing glyph quotes the ESC it could not draw) is printed
    through the boundary's format, whichever module warned."""
    import warnings

    import evalharness.core.boundary  # noqa: F401 - installs the format

    glyph = "Glyph 27 (\x1b) missing from font(s) DejaVu Sans."
    shown = warnings.formatwarning(glyph, UserWarning, "x.py", 1)
    assert "\\x1b" in shown and "\x1b" not in shown and shown.endswith("\n")


def test_no_module_escapes_html_by_itself():
    """One HTML escaping (controls shown, then entities): a module importing :mod:`html` would escape
    without showing an ESC sequence to the terminal a page printed on stdout reaches."""
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[3] / "evalharness"
    found = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if "html" in names or module == "html":
                found.append(path.relative_to(package).as_posix())
    assert found == ["core/escape.py"], found
