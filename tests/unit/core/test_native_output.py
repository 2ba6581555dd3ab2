"""Native writes to fds 1/2 are held back; Python's own streams keep the terminal."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

from evalharness.core.native_output import VERBOSE_ENV, exit_code, failure_tail, quiet_native_output


def test_native_lines_go_to_the_sink_python_lines_to_the_terminal(capfd, monkeypatch):
    monkeypatch.delenv(VERBOSE_ENV, raising=False)
    handler = logging.StreamHandler(sys.stderr)
    logger = logging.getLogger("evalharness.test_native")
    logger.addHandler(handler)
    sink: list[str] = []
    try:
        with quiet_native_output(sink):
            os.write(2, b"INFO: [native.cc:1] chatter\n")
            os.write(1, b"native on stdout\n")
            print("python says", file=sys.stderr)
            print("python stdout")
            logger.warning("logged")
    finally:
        logger.removeHandler(handler)
    out, err = capfd.readouterr()
    assert sink == ["INFO: [native.cc:1] chatter", "native on stdout"]
    assert "python says" in err and "logged" in err and "python stdout" in out
    assert "chatter" not in err + out and "native on stdout" not in out
    assert handler.stream is sys.stderr  # restored


def test_verbose_lets_native_output_through(capfd, monkeypatch):
    monkeypatch.setenv(VERBOSE_ENV, "1")
    sink: list[str] = []
    with quiet_native_output(sink):
        os.write(2, b"native\n")
    assert sink == [] and "native" in capfd.readouterr().err


def test_failure_tail_skips_routine_chatter():
    lines = ["INFO: a", "WARNING: b", "ERROR: c"]
    assert failure_tail(lines, "/run/native.log") == [
        "  native runtime output (last 2 lines; all in /run/native.log):",
        "    WARNING: b",
        "    ERROR: c",
    ]
    assert failure_tail(["INFO: only"], None) == []


LEAVE = """
import atexit, concurrent.futures, sys, tempfile, os
from evalharness.core.native_output import leave
pool = concurrent.futures.ThreadPoolExecutor(1); pool.submit(print, "worker ran")
keep = tempfile.TemporaryDirectory(); print(keep.name, file=sys.stderr)
atexit.register(print, "atexit ran")
sys.stdout.write("unflushed"); leave(int(sys.argv[1]))
"""


def test_leave_does_python_exit_work_then_ends_with_the_code():
    """``leave`` (the process entry's exit): executors' workers stopped, atexit handlers and
    temporary-directory finalizers run, streams flushed, the code kept; no native teardown after."""
    env = {k: v for k, v in os.environ.items() if k != "EVALHARNESS_DEBUG"}
    r = subprocess.run(
        [sys.executable, "-c", LEAVE, "3"], capture_output=True, text=True, timeout=60, env=env
    )
    assert r.returncode == 3, r.stderr
    assert all(s in r.stdout for s in ("worker ran", "atexit ran", "unflushed"))
    assert not os.path.exists(r.stderr.strip())


def test_exit_code_follows_sys_exit():
    assert exit_code(SystemExit()) == 0 and exit_code(SystemExit(2)) == 2
    assert exit_code(SystemExit("message")) == 1


def test_leave_keeps_the_normal_exit_under_a_profiler(monkeypatch):
    """cProfile and coverage write their files at the normal exit: ``leave`` raises SystemExit then."""
    import pytest

    from evalharness.core.native_output import leave

    monkeypatch.delenv("EVALHARNESS_DEBUG", raising=False)
    sys.setprofile(lambda *args: None)
    try:
        with pytest.raises(SystemExit) as done:
            leave(3)
    finally:
        sys.setprofile(None)
    assert done.value.code == 3
