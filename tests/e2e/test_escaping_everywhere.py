"""Escaping everywhere text leaves, generated: every report subcommand × every format it writes
(read from the report parser itself, so a new command or format is attacked without touching this
file), with and without ``--figures`` where a command draws, on runs whose class names, file names
and model names carry ESC sequences, HTML, Markdown and spreadsheet metacharacters
(``test_report_escaping.hostile``). Whatever reaches stdout, stderr or a written file holds no
control character a terminal would obey; HTML holds no tag or event handler from a file's text;
Markdown renders none; CSV starts no cell with a formula.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from pathlib import Path

import pytest
from test_report_escaping import RAW, _Html, hostile, safe_markdown  # noqa: F401 - the fixture

from evalharness.report.commands import entry

FORMULA = ("=", "+", "-", "@", "\t", "\r")
PROGRESS = re.compile(r"\r([^\r\n]*\|[^\r\n]*\]| +)(?=\r)|\r *$")  # a progress bar's own redraws, ours
NOT_RENDERED = {"merge": "writes a run directory (its files are a run's, checked by the run's own tests)"}
BINARY = {"parquet"}  # typed columns, no rendering: nothing a terminal or browser interprets


def _commands() -> dict[str, tuple[str, ...]]:
    """Each report subcommand -> the formats its ``--format`` writes (none: it has no --format)."""
    sub = next(a for a in entry.parser()._actions if a.dest == "command")
    found = {}
    for name, parser in sub.choices.items():
        formats = [getattr(a, "can", None) for a in parser._actions if a.dest == "format"]
        found[name] = formats[0] if formats and formats[0] else ("",)
    return found


def _args(name: str, runs: dict, out: Path) -> list[str]:
    return {
        "diff": [runs["a"], runs["b"], "--allow-different-preprocessing"],
        "sweep": [runs["sweep"], "--out", out / "sweep"],
        "analysis": [runs["a"]],
        "rescore": [runs["a"]],
        "export": [runs["b"]],
        "index": [runs["tmp"], "-o", out / "index.html"],
    }[name]


def _cases() -> list[tuple[str, str, bool]]:
    cases = []
    for name, formats in _commands().items():
        if name in NOT_RENDERED:
            continue
        for fmt in formats:
            if fmt in BINARY:
                continue
            cases.append((name, fmt, False))
            if name in ("diff", "analysis") and fmt == "html":
                cases.append((name, fmt, True))
    return cases


CASES = _cases()


def test_every_command_is_attacked():
    assert {name for name, _, _ in CASES} | set(NOT_RENDERED) == set(_commands())
    assert len(CASES) >= 14


OWN_SCRIPTS = {"index": 1}  # report index's page filters its table with one inline script of its own


class _Scripts(_Html):
    """Tags and attributes (:class:`_Html`), and the text inside each <script>."""

    def __init__(self):
        super().__init__()
        self.inside, self.scripts = False, []

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        self.inside = tag == "script"
        if self.inside:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.scripts[-1] += data


def _html_is_inert(text: str, command: str) -> None:
    parser = _Scripts()
    parser.feed(text)
    assert parser.tags.count("script") <= OWN_SCRIPTS.get(command, 0), "a <script> from a file's text"
    assert not [s for s in parser.scripts if "alert(1)" in s and "</" in s], "a file's text ends a script"
    assert not [a for a in parser.attributes if a.startswith("on")], "an event handler from a file's text"


def _check(text: str, kind: str, command: str = "") -> None:
    assert not RAW.search(text), f"a raw control character in {kind}: {RAW.search(text)!r}"
    if kind == "html":
        _html_is_inert(text, command)
    elif kind == "markdown":
        safe_markdown(text)
    elif kind == "csv":
        rows = list(csv.reader(io.StringIO(text, newline="")))
        cells = [c for row in rows[1:] for c in row]
        assert not [c for c in cells if c.startswith(FORMULA) and not _number(c)], "a formula cell"


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _kind(path: Path) -> str:
    return {".html": "html", ".md": "markdown", ".csv": "csv", ".svg": "html"}.get(path.suffix, "text")


@pytest.mark.parametrize(("name", "fmt", "figures"), CASES, ids=[f"{n}-{f or 'plain'}{'-figures' * g}"
                                                                  for n, f, g in CASES])  # fmt: skip
def test_text_from_files_leaves_every_report_escaped(hostile, tmp_path, capsys, name, fmt, figures):  # noqa: F811
    args = [name, *map(str, _args(name, hostile, tmp_path))]
    if fmt:
        args += ["--format", fmt]
    if figures:
        args += ["--figures", str(tmp_path / "figures")]
    with warnings.catch_warnings(record=True) as caught:  # what stderr would show of each warning
        warnings.simplefilter("always")
        code = entry.main(args)
    out, err = capsys.readouterr()
    err += "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in caught)
    assert code == 0 and "internal error" not in err, err
    _check(out, fmt or "text", name)
    _check(PROGRESS.sub("", err), "terminal")
    for path in sorted(p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".png"):
        _check(path.read_text(encoding="utf-8", errors="replace"), _kind(path), name)
