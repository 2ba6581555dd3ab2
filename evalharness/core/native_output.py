"""Native runtime output (LiteRT, Vulkan, OpenVINO logging on file descriptor 2) kept off the terminal.

Native libraries write straight to fds 1 and 2, around Python: a successful GPU run used to end in
a dozen ``INFO:``/``WARNING:`` lines, some saying ``ERROR``, that meant nothing to the user. Inside
:func:`quiet_native_output` both go to a temporary file while Python's own streams (``sys.stdout``,
``sys.stderr`` and every logging handler writing to them: warnings, the progress bar, error lines)
keep the terminal. What native code printed is handed back as lines for the run's ``native.log``
and for the tail shown when a run fails. ``-v`` (or ``EVALHARNESS_VERBOSE=1``) turns all of this off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

VERBOSE_ENV = "EVALHARNESS_VERBOSE"
NATIVE_LOG = "native.log"


ROUTINE = ("INFO:", "I0", "I1")  # native chatter a successful run prints (INFO, glog's I0000 lines)
_capturing: list[int] = []  # the file descriptors of the captures now open, innermost last
RECENT_BYTES = 16384  # what recent_lines reads back: the tail where a failure's native cause is


def routine(line: str) -> bool:
    return line.startswith(ROUTINE)


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def _stream_handlers(stream: object) -> list[logging.StreamHandler[Any]]:
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    return [
        h
        for lg in loggers
        if isinstance(lg, logging.Logger)
        for h in lg.handlers
        if isinstance(h, logging.StreamHandler) and h.stream is stream
    ]


@contextmanager
def quiet_native_output(sink: list[str]) -> Iterator[None]:
    """Native writes to fd 1 and fd 2 inside the block go to ``sink`` (one string per non-blank
    line); Python's ``sys.stdout``/``sys.stderr`` and the logging handlers on them keep the terminal."""
    if verbose():
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        swapped = [_swap(fd, name, tmp.fileno()) for fd, name in ((1, "stdout"), (2, "stderr"))]
        _capturing.append(tmp.fileno())
        try:
            yield
        finally:
            _capturing.pop()
            for restore in reversed(swapped):
                restore()
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            sink.extend(line for line in text.splitlines() if line.strip())


def recent_lines() -> list[str]:
    """The last non-blank lines native code has printed so far inside the innermost
    :func:`quiet_native_output` (its last :data:`RECENT_BYTES`); empty outside one or with ``-v``.
    Why: a native failure's cause (LiteRT's ``DEADLINE_EXCEEDED``, a lost device) is often printed
    there, not carried by the exception Python sees, and the error must name it while it is raised."""
    if not _capturing:
        return []
    fd = _capturing[-1]
    size = os.fstat(fd).st_size
    text = os.pread(fd, RECENT_BYTES, max(size - RECENT_BYTES, 0)).decode("utf-8", "replace")
    return [line for line in text.splitlines() if line.strip()]


def _swap(fd: int, name: str, target: int) -> Callable[[], None]:
    """Point ``fd`` at ``target`` and ``sys.<name>`` (and its logging handlers) at a copy of what
    ``fd`` was; returns the function that undoes both."""
    python_stream = getattr(sys, name)
    python_stream.flush()
    saved = os.dup(fd)
    buffering = 1 if os.isatty(saved) or fd == 2 else -1
    terminal = os.fdopen(os.dup(saved), "w", buffering=buffering, encoding="utf-8", errors="backslashreplace")
    handlers = _stream_handlers(python_stream)
    os.dup2(target, fd)
    setattr(sys, name, terminal)
    for handler in handlers:
        handler.setStream(terminal)

    def restore() -> None:
        terminal.flush()
        os.dup2(saved, fd)
        os.close(saved)
        setattr(sys, name, python_stream)
        for handler in handlers:
            handler.setStream(python_stream)
        terminal.close()

    return restore


def silence_teardown() -> None:
    """Native libraries log again as the process exits (accelerators destroyed, ...): from here on
    fd 2 is discarded. Called last, once every line meant for the user is out."""
    if verbose():
        return
    sys.stdout.flush()
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def leave(code: int) -> None:
    """End the process with ``code`` once Python's own exit work is done (other threads joined,
    ``atexit`` handlers run, streams flushed), without the native libraries' static destructors.

    Why: OpenVINO's thread pool (TBB) and the LiteRT accelerators are torn down by C++ destructors
    after the interpreter finalises, and that teardown can abort (SIGABRT, exit -6) after a command
    has printed and written everything: a complete result would read as a crash. Nothing the user
    asked for happens in that teardown, so it is skipped. ``EVALHARNESS_DEBUG=1``, a profiler or a
    tracer (``python -m cProfile``, coverage) keep the normal exit."""
    import atexit
    import threading

    from evalharness.core.boundary import debug

    if debug() or sys.gettrace() is not None or sys.getprofile() is not None:
        sys.exit(code)  # a profiler or coverage writes its file at the normal exit: keep it
    # what the interpreter's own exit does first: stop executors' workers, join non-daemon threads
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()  # logging.shutdown, weakref finalizers (temporary directories), ...
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can reach it
            stream.flush()
    os._exit(code)


def exit_code(exc: SystemExit) -> int:
    """The status ``sys.exit(x)`` would give: None is 0, an int itself, anything else printed and 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def failure_tail(lines: list[str], where: str | None, count: int = 8) -> list[str]:
    """What a failed command shows of the native output: its last lines that are not routine
    chatter, indented under the ``error:`` line, and where the rest is."""
    loud = [line for line in lines if not routine(line)][-count:]
    if not loud:
        return []
    head = f"  native runtime output (last {len(loud)} lines" + (f"; all in {where})" if where else ")")
    return [head + ":", *(f"    {line}" for line in loud)]
