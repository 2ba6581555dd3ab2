"""``state.hold``: the claim's lock for writers that make a whole run directory (merge, a failure
record): re-entrant for the process that claimed the directory, refused to any other process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalharness.core.errors import EvalHarnessError
from evalharness.rundir.state import claim, hold, release

HOLDER = (
    "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDONLY); "
    "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"
)


def test_hold_is_reentrant_under_this_processes_claim(tmp_path):
    run = str(tmp_path)
    claim(run, {"task": {"name": "t"}}, {}, resume=False, overwrite=False, can_resume=True)
    try:
        with hold(run) as already:
            assert already  # a loop.parallel parent merging into the directory it claimed
        with hold(run) as already:  # still held: the claim outlives the inner hold
            assert already
    finally:
        release(run)
    with hold(run) as already:
        assert not already


def test_hold_is_refused_while_another_process_holds_the_directory(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, tmp_path], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(EvalHarnessError, match="in use by another running evalharness process"), hold(
            str(tmp_path)
        ):
            pass
    finally:
        holder.kill()
        holder.wait()
