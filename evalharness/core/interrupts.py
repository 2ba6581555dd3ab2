"""The one interrupt policy of the process tree: SIGINT and SIGTERM end a command the same way,
wherever they land, and no process the command started outlives it.

Every entry point runs inside :func:`interrupt_policy`. The first SIGINT or SIGTERM raises
:class:`Interrupted` (a ``KeyboardInterrupt``, so the measured loop keeps what it scored, as Ctrl-C
always did); further ones are ignored while the partial record is written, so the cleanup itself
cannot be cut into a traceback. Children are started through :func:`start` (a session of their
own: a terminal's Ctrl-C reaches the parent only, which then ends them in order) or named with
:func:`adopt` (a worker pool's processes); :func:`stop_children` sends them SIGTERM (their own
policy writes their partial records), waits, then kills what is left, and :func:`interrupt_policy`
does it once more on the way out as a backstop. A process that is no longer ours is never signalled:
only tracked ids and this process's own direct children (``/proc``) are.

``EVALHARNESS_TEST_PAUSE=<stage>`` (tests only; stages ``start-up``, ``loop``, ``bootstrap``) makes
:func:`checkpoint` at that stage write ``<pid>`` into ``EVALHARNESS_TEST_PAUSE_DIR`` and wait there,
so a test can signal a command at an exact moment (during ``loop.parallel``'s shards, during COCO's
bootstrap) instead of sleeping and hoping.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

GRACE_S = 20.0  # how long a child has to write its own partial record after SIGTERM
PAUSE_ENV, PAUSE_DIR_ENV = "EVALHARNESS_TEST_PAUSE", "EVALHARNESS_TEST_PAUSE_DIR"
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the command stops, keeps what it has and exits 1."""

    def __init__(self, signum: int) -> None:
        self.signal = signal.Signals(signum).name
        super().__init__(self.signal)


_children: list[subprocess.Popen[Any] | int] = []  # started (own session) or adopted (a pool's worker)
_state: dict[str, str | None] = {"interrupted": None}  # the signal's name once one arrived


def _raise(signum: int, frame: FrameType | None) -> None:
    _state["interrupted"] = signal.Signals(signum).name
    for sig in _SIGNALS:  # once: the partial record is written without a second interruption
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signum)


@contextlib.contextmanager
def interrupt_policy() -> Iterator[None]:
    """Install the handlers for the command's lifetime; on the way out, end every child left. Off
    the main thread (where Python runs no handler) it only ends the children."""
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.getsignal(sig) for sig in _SIGNALS} if main else {}
    _state["interrupted"] = None
    for sig in previous:
        signal.signal(sig, _raise)
    try:
        yield
    finally:
        stop_children(sweep=bool(_state["interrupted"]))
        for sig, handler in previous.items():
            if not (_state["interrupted"] and handler is _raise):  # an outer policy's: stay deaf
                signal.signal(sig, handler)


def interrupted() -> str | None:
    """The signal that interrupted this command (``"SIGTERM"``), or None."""
    return _state["interrupted"]


def ignore_interrupts() -> None:
    """A worker process's initializer: its parent owns its lifetime (a terminal's Ctrl-C reaches the
    whole foreground group; the worker must not answer it with a traceback of its own). SIGTERM, the
    parent's way to end it, keeps its default."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start(cmd: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen`` in a session of its own, tracked until it is reaped."""
    proc = subprocess.Popen(cmd, start_new_session=True, **kwargs)
    _children.append(proc)
    return proc


def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run`` through :func:`start`: an interrupt while it runs ends it too."""
    capture = kwargs.pop("capture_output", False)
    if capture:
        kwargs.setdefault("stdout", subprocess.PIPE)
        kwargs.setdefault("stderr", subprocess.PIPE)
    kwargs.pop("check", None)
    proc = start(cmd, **kwargs)
    out, err = proc.communicate()
    forget(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def adopt(pid: int) -> None:
    """Track a process started by someone else (a worker pool's), ended with the others."""
    _children.append(pid)


def forget(child: subprocess.Popen[Any] | int) -> None:
    """A child that ended normally: never signalled again (its id may be reused)."""
    with contextlib.suppress(ValueError):
        _children.remove(child)


def _direct_children() -> list[int]:
    """This process's own children per ``/proc`` (none where there is no ``/proc``), but for
    multiprocessing's resource tracker: it ends by itself when this process does, and ended early it
    is relaunched with tracebacks of its own."""
    me, found = os.getpid(), []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with (
                    contextlib.suppress(OSError, IndexError, ValueError),
                    open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f,
                ):
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == me:  # the field after "(name)"
                        found.append(int(entry))
    return [pid for pid in found if b"resource_tracker" not in _command_line(pid)]


def _command_line(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _alive(child: subprocess.Popen[Any] | int) -> bool:
    if isinstance(child, subprocess.Popen):
        return child.poll() is None
    with contextlib.suppress(ChildProcessError):
        if os.waitpid(child, os.WNOHANG)[0] == child:
            return False
    try:
        os.kill(child, 0)
    except OSError:
        return False
    return True


def _signal(child: subprocess.Popen[Any] | int, sig: int) -> None:
    with contextlib.suppress(OSError):
        if isinstance(child, subprocess.Popen):
            os.killpg(child.pid, sig)  # its session: the shard's own children too
        else:
            os.kill(child, sig)


def stop_children(grace_s: float = GRACE_S, sweep: bool = True) -> None:
    """SIGTERM to every child (tracked, adopted, and with ``sweep`` any direct child found in
    ``/proc``), wait up to ``grace_s`` for them to record and exit, then SIGKILL what is left and
    reap it."""
    tracked = {c.pid if isinstance(c, subprocess.Popen) else c for c in _children}
    found = _direct_children() if sweep else []
    left = [*_children, *(pid for pid in found if pid not in tracked)]
    _children.clear()
    left = [c for c in left if _alive(c)]
    for child in left:
        _signal(child, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while (left := [c for c in left if _alive(c)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    for child in left:
        _signal(child, signal.SIGKILL)
    for child in left:
        with contextlib.suppress(Exception):
            if isinstance(child, subprocess.Popen):
                child.wait(timeout=5)
            else:
                os.waitpid(child, 0)


def pauses_at(stage: str) -> bool:
    """Whether a test asked to pause at ``stage`` (a loop asks once, not per sample: the lookup in
    ``os.environ`` was a few µs of every sample)."""
    return os.environ.get(PAUSE_ENV) == stage


def checkpoint(stage: str) -> None:
    """A test's pause point (see the module's docstring); nothing unless ``EVALHARNESS_TEST_PAUSE``
    names ``stage``."""
    if not pauses_at(stage):
        return
    folder = os.environ.get(PAUSE_DIR_ENV) or "."
    with open(os.path.join(folder, f"{stage}.{os.getpid()}"), "w", encoding="ascii") as f:
        f.write(str(os.getpid()))
    while True:  # until the test's signal raises Interrupted here
        time.sleep(0.05)
