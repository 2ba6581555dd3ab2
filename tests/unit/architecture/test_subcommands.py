"""One way for each job on the command line: ONE table of subcommands (``evalharness.__main__``),
used for dispatch and for ``--help``, and one contract for every subcommand, ``main(argv) -> int``
(a usage error or ``-h`` is a returned code, never a ``SystemExit`` escaping), so the entry's
success path (exit 0, no failure tail, the teardown silenced) is the same for all of them."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from evalharness import __main__ as entry
from evalharness.core.registry import load_object

PACKAGE = Path(__file__).resolve().parents[3] / "evalharness"


def _main(name: str):
    return load_object(entry.SUBCOMMANDS[name][0], name)


@pytest.mark.parametrize("name", sorted(entry.SUBCOMMANDS))
@pytest.mark.parametrize(("argv", "code"), [(["-h"], 0), (["--no-such-option"], 2)])
def test_every_subcommand_main_returns_an_int(name, argv, code, capsys):
    returned = _main(name)(argv)  # a SystemExit escaping fails here
    assert type(returned) is int and returned == code
    err = capsys.readouterr().err
    assert err.count("error:") == (code == 2) and "Traceback" not in err


def test_every_report_subcommand_returns_an_int(capsys):
    from evalharness.report.commands.entry import parser

    subparsers = next(a for a in parser()._actions if a.dest == "command")
    for name in subparsers.choices:
        assert _main("report")([name, "-h"]) == 0
        assert _main("report")([name]) == 2  # each needs a run or a folder
    capsys.readouterr()
    assert _main("report")(["-h"]) == 0
    usage = capsys.readouterr().out
    for name in subparsers.choices:  # `report -h` lists every subcommand with its usage
        assert f"evalharness report {name} [-h]" in usage
    assert "--margin MARGIN" in usage


def _tables(path: Path) -> list[int]:
    """Lines of dict literals that name two or more subcommands: a subcommand table."""
    names = set(entry.SUBCOMMANDS)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if len(keys & names) >= 2:
                found.append(node.lineno)
    return found


def test_one_subcommand_table():
    tables = {str(p.relative_to(PACKAGE)): lines for p in PACKAGE.rglob("*.py") if (lines := _tables(p))}
    assert list(tables) == ["__main__.py"] and len(tables["__main__.py"]) == 1, tables


def test_help_lists_the_table(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["evalharness", "--help"])
    with pytest.raises(SystemExit) as done:
        entry.main()
    lines = capsys.readouterr().out.splitlines()
    assert done.value.code == 0
    for name, (_, line) in entry.SUBCOMMANDS.items():
        assert any(ln.split()[:1] == [name] and line in ln for ln in lines), lines


@pytest.mark.parametrize("outcome", [0, None, SystemExit(0)])
def test_a_successful_subcommand_exits_0_without_a_failure_tail(outcome, monkeypatch, capfd):
    silenced = []
    monkeypatch.setattr(entry, "silence_teardown", lambda: silenced.append(True))

    def command(argv: list[str]):
        print("native warning", file=sys.__stderr__, flush=True)  # what a library prints on fd 2
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setitem(entry.SUBCOMMANDS, "fake", ("x:y", "a fake"))
    monkeypatch.setattr(entry, "load_object", lambda reference, what: command)
    monkeypatch.setattr(sys, "argv", ["evalharness", "fake"])
    with pytest.raises(SystemExit) as done:
        entry.main()
    assert done.value.code == 0 and silenced == [True]
    assert "native" not in capfd.readouterr().err


def test_a_failing_subcommand_shows_the_tail(monkeypatch, capfd):
    monkeypatch.setattr(entry, "silence_teardown", lambda: None)

    def command(argv: list[str]) -> int:
        print("ERROR: the accelerator said no", file=sys.__stderr__, flush=True)
        return 1

    monkeypatch.setitem(entry.SUBCOMMANDS, "fake", ("x:y", "a fake"))
    monkeypatch.setattr(entry, "load_object", lambda reference, what: command)
    monkeypatch.setattr(sys, "argv", ["evalharness", "fake"])
    with pytest.raises(SystemExit) as done:
        entry.main()
    assert done.value.code == 1 and "the accelerator said no" in capfd.readouterr().err


def test_a_successful_report_exits_0_without_a_failure_tail(monkeypatch, capfd):
    monkeypatch.setattr(entry, "silence_teardown", lambda: None)
    monkeypatch.setattr(sys, "argv", ["evalharness", "report", "diff", "-h"])
    with pytest.raises(SystemExit) as done:
        entry.main()
    captured = capfd.readouterr()
    assert done.value.code == 0 and captured.out.startswith("usage: evalharness report diff")
    assert captured.err == ""


def test_the_process_entry_is_process_and_main_stays_callable():
    """The console script and ``python -m`` end through ``process`` (Python's exit work, then the
    code without the native teardown that could abort a complete command); ``main`` raises
    SystemExit as before, for in-process callers."""
    import tomllib

    project = tomllib.loads((Path(entry.__file__).parents[1] / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["evalharness"] == "evalharness.__main__:process"
    assert 'if __name__ == "__main__":\n    process()' in Path(entry.__file__).read_text()
