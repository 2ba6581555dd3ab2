"""``python -m evalharness ...`` for the tests, forked from a process that has already imported it.

About 400 tests run the command as a user does, in its own process: exit code, stdout, stderr,
files. Each process spent most of its ~1 s of CPU importing Python (Hydra, numpy, the package)
before reading its first argument. A zygote (``python tests/cli_fork.py``, one per test worker)
imports that once and forks one child per command; the child sets the command's working directory,
environment, ``sys.argv`` and ``sys.path[0]`` as ``python -m`` would, points fds 0-2 at the
command's files, reseeds what a fresh interpreter would seed, runs the module with :mod:`runpy`,
then exits as the interpreter does (non-daemon threads joined, ``atexit`` handlers run, streams
flushed). The child is a real process: its exit status, signals and native output are its own.

What it cannot be is a process whose *imports* see the command's environment: a module the zygote
imported read its environment then (none of the preloaded ones reads the variables the tests set),
and an interpreter option (``-X``, ``-W``) is not available. :func:`run` takes any command and
forks only ``[sys.executable, "-m", "evalharness" | "evalharness.report", ...]``; anything else,
and every command when ``EVALHARNESS_TEST_FORK=0``, is :func:`subprocess.run` as before.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

MODULES = ("evalharness", "evalharness.report")
PRELOAD = ("evalharness.__main__", "evalharness.report.__main__", "evalharness.runtime.litert", "PIL.Image")
_lock = threading.Lock()
_zygote: subprocess.Popen | None = None
_pending = b""  # what the zygote wrote past the last reply read


IMPORTS = ("PYTHONHOME", "PYTHONSAFEPATH", "PYTHONNOUSERSITE", "PYTHONUSERBASE")


def _added_path(env: dict[str, str] | None) -> list[str] | None:
    """The folders the command's PYTHONPATH puts before this process's (plug-in folders), or None
    when they could import other code than the zygote has: another evalharness (an install
    elsewhere), or a module of a name the zygote may have imported already."""
    mine = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    theirs = [p for p in (env or os.environ).get("PYTHONPATH", "").split(os.pathsep) if p]
    added = theirs[: len(theirs) - len(mine)]
    if theirs[len(added) :] != mine:
        return None
    for folder in added:
        names = {n.removesuffix(".py") for n in (os.listdir(folder) if os.path.isdir(folder) else [])}
        if "evalharness" in names or names & {m.split(".")[0] for m in sys.modules}:
            return None
    return added


def _forkable(cmd: list[str], env: dict[str, str] | None, added: list[str] | None) -> bool:
    """The evalharness CLI, importing what the zygote imported (``added``: :func:`_added_path`)."""
    return (
        os.environ.get("EVALHARNESS_TEST_FORK", "1") != "0"
        and all((env or os.environ).get(k) == os.environ.get(k) for k in IMPORTS)
        and added is not None
        and len(cmd) >= 3
        and cmd[0] == sys.executable
        and cmd[1] == "-m"
        and cmd[2] in MODULES
    )


def _start() -> subprocess.Popen:
    global _zygote
    if _zygote is None or _zygote.poll() is not None:
        _zygote = subprocess.Popen(
            [sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        atexit.register(_zygote.kill)
    return _zygote


def _reply(zygote: subprocess.Popen, timeout: float | None) -> dict | None:
    """The zygote's next reply line, or None when ``timeout`` passes first."""
    global _pending
    assert zygote.stdout is not None
    fd = zygote.stdout.fileno()
    while b"\n" not in _pending:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            raise RuntimeError("the CLI zygote (tests/cli_fork.py) ended; run with EVALHARNESS_TEST_FORK=0")
        _pending += chunk
    line, _pending = _pending.split(b"\n", 1)
    return json.loads(line)


def run(
    cmd: list[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    stdin: int | None = None,
    capture_output: bool = True,
    text: bool = False,
    **kwargs: object,
) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` of ``cmd`` (output captured, as text or bytes), forked from the zygote
    when it runs the evalharness CLI."""
    added = _added_path(env)
    if (
        kwargs
        or not capture_output
        or stdin not in (None, subprocess.DEVNULL)
        or not _forkable(cmd, env, added)
    ):
        return subprocess.run(
            cmd,
            cwd=cwd,
            env=env,
            timeout=timeout,
            stdin=stdin,
            capture_output=capture_output,
            text=text,
            **kwargs,
        )
    with _lock, tempfile.TemporaryDirectory(prefix="cli-fork-") as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        request = {
            "module": cmd[2],
            "args": cmd[3:],
            "cwd": os.path.abspath(cwd or os.getcwd()),
            "env": dict(os.environ if env is None else env),
            "path": added,
            "stdout": out,
            "stderr": err,
        }
        zygote = _start()
        assert zygote.stdin is not None
        zygote.stdin.write((json.dumps(request) + "\n").encode())
        started = _reply(zygote, None)
        assert started is not None
        done = _reply(zygote, timeout)
        if done is None:
            os.kill(started["pid"], signal.SIGKILL)
            _reply(zygote, None)
            raise subprocess.TimeoutExpired(cmd, timeout or 0, Path(out).read_bytes(), Path(err).read_bytes())
        code = done["returncode"]
        if not text:
            return subprocess.CompletedProcess(cmd, code, Path(out).read_bytes(), Path(err).read_bytes())
        read = [Path(f).read_text(errors="replace") for f in (out, err)]
        return subprocess.CompletedProcess(cmd, code, *read)


# --- the zygote ----------------------------------------------------------------------------------


def _serve() -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    requests, replies = sys.stdin, sys.stdout
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request, (requests.fileno(), replies.fileno()))
        replies.write(json.dumps({"pid": pid}) + "\n")
        replies.flush()
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()


def _child(request: dict, pipes: tuple[int, int]) -> None:
    """Become ``python -m MODULE ARGS`` in ``cwd`` with ``env`` and never return."""
    import atexit as exits
    import random
    import runpy
    import traceback

    code = 1
    try:
        stdin = os.open(os.devnull, os.O_RDONLY)
        stdout = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        stderr = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
            os.close(fd)
        for fd in pipes:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        encoding = os.environ.get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
        sys.stdin = sys.__stdin__ = open(0, closefd=False, encoding=encoding)  # noqa: SIM115
        sys.stdout = sys.__stdout__ = open(1, "w", closefd=False, encoding=encoding)  # noqa: SIM115
        sys.stderr = sys.__stderr__ = open(  # noqa: SIM115
            2, "w", buffering=1, closefd=False, encoding=encoding, errors="backslashreplace"
        )  # line-buffered, as a non-interactive stderr is
        sys.path[:1] = [request["cwd"], *request["path"]]  # python -m: the working directory, PYTHONPATH
        random.seed()
        if "numpy" in sys.modules:
            sys.modules["numpy"].random.seed()
        sys.argv = [request["module"], *request["args"]]
        for name in PRELOAD:  # run as __main__ afresh (its imports stay loaded), as `python -m` does
            if name.endswith(".__main__"):
                sys.modules.pop(name, None)
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 128 + signal.SIGINT
    except BaseException:  # what the interpreter prints for an uncaught exception, then exit 1
        traceback.print_exc()
        code = 1
    finally:
        try:
            threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's own join at exit
            exits._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # not tests/: the zygote imports as `python -m` would
    _serve()
