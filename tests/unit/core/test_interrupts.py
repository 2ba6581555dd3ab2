"""The one interrupt policy (core/interrupts.py): a signal becomes Interrupted once, children end."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from evalharness.core import interrupts


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_a_signal_is_interrupted_once_and_the_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(interrupts.Interrupted) as caught, interrupts.interrupt_policy():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)
    assert caught.value.signal == "SIGTERM" and isinstance(caught.value, KeyboardInterrupt)
    assert signal.getsignal(signal.SIGTERM) is before


def test_stop_children_ends_a_child_and_its_own_children(tmp_path):
    """A child's session holds what it started: one SIGTERM to the group, SIGKILL after the grace."""
    code = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
        "print(p.pid, flush=True); time.sleep(60)"
    )
    child = interrupts.start([sys.executable, "-c", code], stdout=-1, text=True)
    grandchild = int(child.stdout.readline())
    assert os.getpgid(child.pid) == child.pid != os.getpgid(0)  # its own session, not our Ctrl-C's
    start = time.monotonic()
    interrupts.stop_children(grace_s=0.5)  # the child ignores SIGTERM: killed after the grace
    assert time.monotonic() - start < 5 and child.poll() is not None
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_run_returns_like_subprocess_run_and_forgets_the_child():
    done = interrupts.run([sys.executable, "-c", "print('x')"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout == "x\n" and not interrupts._children


def test_checkpoint_is_nothing_unless_a_test_names_its_stage(monkeypatch, tmp_path):
    monkeypatch.delenv(interrupts.PAUSE_ENV, raising=False)
    interrupts.checkpoint("loop")  # returns at once
    monkeypatch.setenv(interrupts.PAUSE_ENV, "bootstrap")
    interrupts.checkpoint("loop")
    assert list(tmp_path.iterdir()) == []
