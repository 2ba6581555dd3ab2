"""The commit point is durable: when metrics.json is renamed into place, every file it refers to
(``predictions.path``, ``artifacts``) is already flushed and fsynced, whole.

Generated over every writer of a run directory: a run, a resume, a run stopped in its loop (the
partial record), an interruption's record, a failure record, and ``report merge`` (which the
``loop.parallel`` parent's merge goes through). ``os.fsync`` and
``os.replace`` are recorded in process: an fsync records the size the file had on disk then, a
commit of metrics.json records the size each referenced file has; a referenced file whose last
fsync before the commit saw fewer bytes (Python's buffer not yet flushed when it was synced) or
that was never synced is a commit that a power cut could leave pointing at lost records.
(Every candidate of ``compare`` and every step of ``compare --chain`` is one of these runs, in a
child process of its own.)
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from conftest import run_inprocess
from shared_runs import edit_document

from evalharness.core.errors import RunStopped
from evalharness.core.interrupts import Interrupted

SAMPLE = ["task.num_images=4", "loop.progress=false"]


class Recorder:
    """fsyncs and commits of metrics.json, in order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.synced: dict[str, int] = {}  # path -> its size on disk at its last fsync
        self.commits: list[tuple[str, dict[str, int], dict[str, int]]] = []
        fsync, replace = os.fsync, os.replace

        def recorded_fsync(fd: int) -> None:
            fsync(fd)
            path = os.readlink(f"/proc/self/fd/{fd}")
            if os.path.isfile(path):
                self.synced[path] = os.fstat(fd).st_size

        def recorded_replace(src: str, dst: str) -> None:
            if os.path.basename(str(dst)) == "metrics.json":
                self._commit(str(src), os.path.realpath(os.path.dirname(str(dst))))
            replace(src, dst)

        monkeypatch.setattr(os, "fsync", recorded_fsync)
        monkeypatch.setattr(os, "replace", recorded_replace)

    def _commit(self, tmp: str, run_dir: str) -> None:
        doc = json.loads(Path(tmp).read_text())
        named = [(doc.get("predictions") or {}).get("path"), *(doc.get("artifacts") or [])]
        on_disk = {}
        for name in filter(None, named):
            path = os.path.join(run_dir, name)
            if os.path.exists(path):
                on_disk[path] = os.path.getsize(path)
        self.commits.append((run_dir, on_disk, {p: self.synced.get(p, -1) for p in on_disk}))

    def check(self) -> int:
        """Every commit's referenced files synced whole before it; returns the files checked."""
        assert self.commits, "no metrics.json was committed"
        checked = 0
        for run_dir, on_disk, synced in self.commits:
            for path, size in on_disk.items():
                assert synced[path] == size, (
                    f"{run_dir}: metrics.json committed while {os.path.basename(path)} held {size} bytes "
                    f"but its last fsync saw {synced[path]} (-1: never synced)"
                )
                checked += 1
        return checked


def _run(tmp_path: Path) -> Path:
    run_inprocess(SAMPLE, tmp_path / "run")
    return tmp_path / "run"


def _resume(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    preds = run_dir / "predictions.jsonl"
    preds.write_text("".join(preds.read_text().splitlines(keepends=True)[:2]))
    edit_document(run_dir, status="partial")
    run_inprocess([*SAMPLE, "loop.resume=true"], run_dir)
    return run_dir


def _stopped_in_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A signal after two samples: the loop's own partial record."""
    from evalharness.rundir import files

    append = files.RunWriter.append

    def append_then_stop(self, record):
        append(self, record)
        if self.count == 2:
            raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr(files.RunWriter, "append", append_then_stop)
    with pytest.raises(RunStopped):
        run_inprocess(SAMPLE, tmp_path / "run")
    return tmp_path / "run"


def _stopped_while_scoring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException) -> Path:
    """``error`` after the loop (a signal: the ``interrupted`` record naming the predictions kept;
    another error: the failure record)."""
    from evalharness.run import job

    def stop(*args, **kwargs):
        raise error

    monkeypatch.setattr(job, "record_run", stop)
    with pytest.raises(RunStopped):
        run_inprocess(SAMPLE, tmp_path / "run")
    return tmp_path / "run"


def _merge(tmp_path: Path) -> Path:
    """``report merge`` (the ``loop.parallel`` parent merges its shards through the same function)."""
    from evalharness.report.commands.merge import merge_runs

    shards = [tmp_path / f"shard{i}" for i in range(2)]
    for i, shard in enumerate(shards):
        run_inprocess([*SAMPLE, "dataset.shard.count=2", f"dataset.shard.index={i}"], shard)
    merge_runs([str(s) for s in shards], str(tmp_path / "merged"))
    return tmp_path / "merged"


WRITERS = {  # writer -> the status its metrics.json records
    "run": "complete",
    "resume": "complete",
    "stopped in the loop": "partial",
    "interrupted while scoring": "interrupted",
    "failed while scoring": "failed",
    "merge": "complete",
}


@pytest.mark.parametrize("writer", WRITERS)
def test_every_file_a_committed_metrics_json_names_is_synced_whole_first(tmp_path, monkeypatch, writer):
    if writer == "resume":
        _run(tmp_path)
    recorder = Recorder(monkeypatch)
    if writer == "run":
        run_dir = _run(tmp_path)
    elif writer == "resume":
        run_dir = _resume(tmp_path)
    elif writer == "stopped in the loop":
        run_dir = _stopped_in_the_loop(tmp_path, monkeypatch)
    elif writer == "interrupted while scoring":
        run_dir = _stopped_while_scoring(tmp_path, monkeypatch, Interrupted(signal.SIGTERM))
    elif writer == "failed while scoring":
        run_dir = _stopped_while_scoring(tmp_path, monkeypatch, RuntimeError("scorer broke"))
    else:
        run_dir = _merge(tmp_path)
    assert json.loads((run_dir / "metrics.json").read_text())["status"] == WRITERS[writer]
    checked = recorder.check()
    if writer != "failed while scoring":  # a failure record names no file
        assert checked >= 1
