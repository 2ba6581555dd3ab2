"""The run directory's claim is atomic and its files never disagree: two processes cannot both claim
one directory, and a failed write never leaves a human-readable figure beside a record that lacks it."""

from __future__ import annotations

import errno
import json
import subprocess
import sys

import pytest

from evalharness.core.atomic_io import atomic_create_text
from evalharness.core.errors import EvalHarnessError
from evalharness.rundir.document import write_failure, write_run
from evalharness.rundir.files import METRICS_FILE, RESULTS_FILE, STATE_FILE, RunWriter
from evalharness.rundir.metrics_file import parse_document
from evalharness.rundir.state import claim, release

CONFIG = {"task": {"name": "toy"}, "loop": {}}
OTHER_PROCESS = """
import sys
from evalharness.core.errors import EvalHarnessError
from evalharness.rundir.state import claim
try:
    config = {"task": {"name": "toy"}, "loop": {}}
    claim(sys.argv[1], config, {}, resume=False, overwrite=False, can_resume=True)
except EvalHarnessError as exc:
    print(exc)
    sys.exit(2)
"""


def other_process_claims(run_dir) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", OTHER_PROCESS, str(run_dir)], capture_output=True, text=True, timeout=60
    )


def test_a_claimed_directory_is_refused_to_another_process_until_released(tmp_path):
    assert claim(tmp_path, CONFIG, {}, resume=False, overwrite=False, can_resume=True) == []
    try:
        held = other_process_claims(tmp_path)
        assert held.returncode == 2 and "in use by another running evalharness process" in held.stdout
    finally:
        release(tmp_path)
    after = other_process_claims(tmp_path)  # released: now the recorded run itself refuses
    assert after.returncode == 2 and "already holds a" in after.stdout


def test_a_failed_claim_releases_the_directory(tmp_path):
    claim(tmp_path, CONFIG, {}, resume=False, overwrite=False, can_resume=True)
    release(tmp_path)
    with pytest.raises(EvalHarnessError, match="already holds"):
        claim(tmp_path, CONFIG, {}, resume=False, overwrite=False, can_resume=True)
    assert other_process_claims(tmp_path).stdout.count("already holds") == 1  # not "in use"


def test_the_state_file_is_created_once(tmp_path):
    path = str(tmp_path / STATE_FILE)
    atomic_create_text(path, "first")
    with pytest.raises(FileExistsError):
        atomic_create_text(path, "second")
    assert (tmp_path / STATE_FILE).read_text() == "first"
    assert [p.name for p in tmp_path.iterdir()] == [STATE_FILE]  # no temporary file left behind


class FullDisk(RunWriter):
    def write_results(self, lines):
        raise OSError(errno.ENOSPC, "No space left on device", RESULTS_FILE)


def test_results_follow_the_committed_record(tmp_path):
    writer = FullDisk(str(tmp_path))
    with pytest.raises(OSError):
        record = parse_document({"status": "complete", "metrics": {"top1": 0.5}})
        write_run(writer, record, ["Top-1 Accuracy: 0.5"], {})
    assert json.loads((tmp_path / METRICS_FILE).read_text())["status"] == "complete"
    assert not (tmp_path / RESULTS_FILE).exists()


def test_a_failure_record_removes_figures_an_earlier_session_printed(tmp_path):
    write_run(RunWriter(str(tmp_path)), parse_document({"status": "partial"}), ["Top-1 Accuracy: 0.5"], {})
    write_failure(str(tmp_path), "the disk is full", {}, [])
    assert json.loads((tmp_path / METRICS_FILE).read_text())["status"] == "failed"
    assert not (tmp_path / RESULTS_FILE).exists()
