"""One table of format names for every report command (report/formats.py): ``md`` is ``markdown``
everywhere, and a format a command cannot produce is one error line naming the ones it can."""

from __future__ import annotations

import pytest

from evalharness.report.commands import entry as cli
from evalharness.report.formats import NAMES, canonical, shown

COMMANDS = {  # command -> (arguments before --format, what it produces)
    "diff": (["A", "B"], {"text", "markdown", "json", "html"}),
    "sweep": (["DIR"], {"text", "markdown"}),
    "analysis": (["RUN"], {"text", "markdown", "html"}),
    "rescore": (["RUN"], {"text", "markdown", "json"}),
    "export": (["RUN"], {"csv", "json", "parquet"}),
}


def parse(*argv: str):
    return cli.parser().parse_args(list(argv))


def test_md_is_markdown_in_the_table():
    assert canonical("md") == canonical("markdown") == "markdown"
    assert shown(("text", "markdown")) == "text|markdown (md)"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_every_name_of_what_it_produces(command):
    before, can = COMMANDS[command]
    for name, format_ in NAMES.items():
        if format_ in can:
            assert parse(command, *before, "--format", name).format == format_


@pytest.mark.parametrize("command", COMMANDS)
def test_a_format_the_command_cannot_produce_is_one_error_line(command, capsys):
    before, can = COMMANDS[command]
    for name in [n for n, f in NAMES.items() if f not in can] + ["xml"]:
        with pytest.raises(SystemExit) as exit_info:
            parse(command, *before, "--format", name)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and err.count("error:") == 1 and len(err.splitlines()) == 1, err
        assert "Traceback" not in err and "internal error" not in err
        if name != "xml":
            assert f"--format {name}" in err and all(f in err for f in can)
