"""The one error boundary of every entry point: a failure is one ``error:`` line, never a traceback.

``python -m evalharness`` (each job of a multirun too), ``python -m evalharness.report`` and the
other command-line tools hand whatever escapes them to :func:`describe`, which turns it into one
line naming the key or file and the fix: evalharness' own errors as they are, Hydra's and
OmegaConf's (override grammar, unknown option, type conversion) reduced to their first line, OS
errors (missing, unreadable, a directory where a file belongs, a loop of links, a full disk) named
by file. Anything else is a bug: its line says so. ``EVALHARNESS_DEBUG=1`` re-raises instead, with
the traceback.

Exit codes: :data:`EXIT_USER_ERROR` (2) for every failure before a run produced results,
:data:`EXIT_STOPPED` (1) once a run has written its metrics.json (partial, failed or invalid).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from evalharness.core.escape import terminal

if TYPE_CHECKING:
    from evalharness.core.interrupts import Interrupted

EXIT_OK, EXIT_STOPPED, EXIT_USER_ERROR = 0, 1, 2


_MAKE_RECORD = logging.getLogRecordFactory()


def _terminal_safe_record(*args: object, **kwargs: object) -> logging.LogRecord:
    """Every line of evalharness' log, from any of its loggers (``evalharness``,
    ``evalharness.report``, a module's ``__name__``): warnings quote file names and labels, so the
    message's control characters are shown, never sent. A filter on one logger would miss its
    children; the record factory is where every record of every logger is made."""
    record = _MAKE_RECORD(*args, **kwargs)
    if record.name == "evalharness" or record.name.startswith("evalharness."):
        record.msg, record.args = terminal(record.getMessage()), None
    return record


logging.setLogRecordFactory(_terminal_safe_record)
_FORMAT_WARNING = warnings.formatwarning


def _terminal_safe_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """Every Python warning as stderr shows it, a library's included: matplotlib's missing-glyph
    warning quotes the character it could not draw (an ESC of a class name), PIL and others quote
    file names; their control characters are shown, never sent to the terminal."""
    return terminal(_FORMAT_WARNING(message, category, filename, lineno, line))


warnings.formatwarning = _terminal_safe_warning
DEBUG_ENV = "EVALHARNESS_DEBUG"

_OS_HINTS = {
    errno.ENOENT: "check the path",
    errno.EACCES: "check its permissions",
    errno.EPERM: "check its permissions",
    errno.EISDIR: "it is a directory; give a file",
    errno.ENOTDIR: "a part of the path is a file; give a directory",
    errno.ELOOP: "the path is a loop of symbolic links",
    errno.ENOSPC: "the disk is full; free space or choose another directory",
    errno.EROFS: "the file system is read-only; choose another directory",
    errno.ENAMETOOLONG: "the path is too long",
    errno.EEXIST: "it exists already; choose another path",
}


def debug() -> bool:
    """Tracebacks wanted (``EVALHARNESS_DEBUG=1``)."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _first_line(text: object) -> str:
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


def describe(exc: BaseException) -> str:
    """One line for a user: what is wrong, where, and (when known) how to fix it. A message may quote
    a file name or a file's text: its control characters are shown, never sent to the terminal."""
    return terminal(_describe(exc), keep="")


def _describe(exc: BaseException) -> str:
    from evalharness.core.errors import EvalHarnessError

    if isinstance(exc, EvalHarnessError):
        return _first_line(exc) or type(exc).__name__
    module = type(exc).__module__ or ""
    if module.startswith(("hydra", "omegaconf")):
        return f"config: {_compose_error(exc)}"
    if isinstance(exc, OSError):
        where = f" {exc.filename!r}" if exc.filename else ""
        hint = _OS_HINTS.get(exc.errno or -1)
        reason = exc.strerror or _first_line(exc) or type(exc).__name__
        return f"{reason}:{where}" + (f" ({hint})" if hint else "")
    return f"internal error ({type(exc).__name__}: {_first_line(exc)}); {DEBUG_ENV}=1 shows the traceback"


def _compose_error(exc: BaseException) -> str:
    """Hydra's multi-line messages on one line: the problem, then any listed options comma-separated."""
    text = str(exc).split("See https://")[0].split("Config search path:")[0]
    text = text or str(exc.__cause__ or "") or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 2:  # "Could not find 'x'" / "Available options in 'x':" / one option a line
        return f"{lines[0]} {lines[1]} {', '.join(lines[2:])}"
    return " ".join(lines)


def report(exc: BaseException) -> None:
    """Print the one ``error:`` line of ``exc`` on stderr."""
    print(f"error: {describe(exc)}", file=sys.stderr)


def report_interrupt(exc: Interrupted) -> None:
    """The one line of a command a signal ended (:class:`evalharness.core.interrupts.Interrupted`)."""
    print(
        f"error: interrupted by {exc.signal}; every process it started has ended "
        "(loop.resume=true continues an interrupted run)",
        file=sys.stderr,
    )


class ArgumentParser(argparse.ArgumentParser):
    """argparse keeping the contract: a usage mistake is one ``error:`` line with the way out, not
    argparse's usage block followed by ``prog: error: ...``. Subcommand parsers inherit it."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {message}; see {self.prog} --help", file=sys.stderr)
        sys.exit(EXIT_USER_ERROR)


def guarded(body: Callable[[], int | None]) -> int:
    """Run an entry point's ``body`` inside the boundary and return its exit code: whatever escapes
    it (an OS error on an output path, a damaged input, a bug) is one ``error:`` line and exit 2; a
    signal is one line and exit 1, its children ended (:mod:`evalharness.core.interrupts`).
    Every command-line tool of the package enters through here or through ``__main__``'s own app."""
    from evalharness.core.interrupts import Interrupted, interrupt_policy

    try:
        with interrupt_policy():
            return body() or EXIT_OK
    except Interrupted as exc:
        if debug():
            raise
        report_interrupt(exc)
        return EXIT_STOPPED
    except SystemExit as exc:  # argparse's --help (0) and usage errors (2) keep their code
        return exc.code if isinstance(exc.code, int) else EXIT_USER_ERROR
    except Exception as exc:
        if debug():
            raise
        report(exc)
        return EXIT_USER_ERROR
