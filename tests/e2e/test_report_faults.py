"""Every ``report`` subcommand against every file of a run directory damaged in every way, and bad
output paths: at most one ``error:`` line, never a traceback. A damaged file the command reads
(metrics.json, predictions.jsonl) is a user error (exit 2) naming it; damage to a file no report
reads (results.txt, run_state.json) changes nothing (exit 0); ``sweep`` tabulates a job whose
record it cannot read as not complete."""

from __future__ import annotations

import csv
import os
import shutil
import signal
from pathlib import Path

import pytest
from conftest import run_inprocess

from evalharness.report.commands import entry as cli
from evalharness.rundir.files import METRICS_FILE, PREDICTIONS_FILE, RESULTS_FILE, STATE_FILE

FILES = (METRICS_FILE, PREDICTIONS_FILE, RESULTS_FILE, STATE_FILE)
DAMAGE = (
    "removed", "empty", "truncated", "not_json", "directory", "fifo", "symlink_loop", "wrong_shape",
    "deep_nesting", "huge_number",
)


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("good") / "run"
    run_inprocess([f"hydra.run.dir={run_dir}"], run_dir)
    return run_dir


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes() if path.is_file() else b""
    path.unlink(missing_ok=True)
    if how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "not_json":
        path.write_bytes(b"\xff\xfe not json at all\n")
    elif how == "directory":
        path.mkdir()
    elif how == "fifo":
        os.mkfifo(path)
    elif how == "symlink_loop":
        os.symlink(path, path)
    elif how == "deep_nesting":  # Python's recursion limit, reached inside json.loads
        path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    elif how == "huge_number":  # past Python's int digit limit
        path.write_text('{"id": ' + "9" * 5000 + "}\n")
    elif how == "wrong_shape":
        path.write_text('["a list, not an object"]\n' if path.suffix == ".json" else "[1, 2]\n")


def _blocked(signum, frame):
    raise TimeoutError("the report blocked (a special file opened for reading?)")


def _report(capsys, *args) -> tuple[int, str]:
    previous = signal.signal(signal.SIGALRM, _blocked)
    signal.alarm(30)
    try:
        code = cli.main([str(a) for a in args])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, capsys.readouterr().err


def _check(code: int, err: str) -> None:
    assert code in (0, 1, 2) and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) <= 1, err
    assert "internal error" not in err, err


READ = (METRICS_FILE, PREDICTIONS_FILE)  # what diff, rescore and merge read of a run


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("how", DAMAGE)
def test_every_subcommand_on_a_damaged_run(good, tmp_path, capsys, name, how):
    bad = tmp_path / "bad"
    shutil.copytree(good, bad)
    _damage(bad / name, how)
    for args in (
        ("diff", good, bad),
        ("diff", bad, good, "--format", "json"),
        ("rescore", bad),
        ("merge", bad, "--out", tmp_path / "merged"),
    ):
        code, err = _report(capsys, *args)
        _check(code, err)
        if name in READ:
            assert code == 2 and name in err, (args[0], err)
        else:
            assert code == 0, (args[0], err)
    code, err = _report(capsys, "sweep", tmp_path)
    _check(code, err)
    rows = {r["run"]: r for r in csv.DictReader((tmp_path / "sweep.csv").open())} if code == 0 else {}
    if name == METRICS_FILE:  # the job's record is unreadable: never a complete row
        assert code == 2 or rows["bad"]["status"] != "complete", err
    elif name == PREDICTIONS_FILE:  # the sweep's per-image views read the predictions
        assert code == 2 and name in err, err
    else:
        assert code == 0 and rows["bad"]["status"] == "complete", err


@pytest.mark.parametrize("kind", ["missing", "file", "fifo", "symlink_loop", "parent_is_file"])
def test_bad_run_and_output_paths(good, tmp_path, capsys, kind):
    target = tmp_path / "x"
    if kind == "file":
        target.write_text("{}")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "symlink_loop":
        os.symlink(target, target)
    elif kind == "parent_is_file":
        (tmp_path / "f").write_text("")
        target = tmp_path / "f" / "x"
    for args in (
        ("diff", target, good),
        ("rescore", target),
        ("sweep", target),
        ("merge", good, "--out", target),
        ("diff", good, good, "-o", target / "d.txt" if kind != "missing" else target / "no" / "d.txt"),
        ("rescore", good, "-o", target / "r.txt"),
        ("sweep", good.parent, "--out", target),
    ):
        _check(*_report(capsys, *args))


@pytest.mark.parametrize("name", FILES)
def test_no_report_output_replaces_a_file_of_a_run(good, tmp_path, capsys, name):
    """Every report command's ``-o`` goes through one writer, which never replaces a run's file."""
    run = tmp_path / "run"
    shutil.copytree(good, run)
    before = (run / name).read_bytes()
    for args in (("diff", run, run, "-o", run / name), ("rescore", run, "-o", run / name)):
        code, err = _report(capsys, *args)
        _check(code, err)
        assert code == 2 and "refusing to overwrite" in err, err
    assert (run / name).read_bytes() == before
