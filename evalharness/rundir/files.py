"""The files of a run directory and how they are written: atomic files, the streamed predictions.

``predictions.jsonl`` has one JSON object per scored sample, written and flushed as it is scored,
so an interrupted run keeps everything finished. Every other file (``metrics.json``, ``results.txt``,
artifacts, ``run_state.json``, caches) is replaced atomically (temp file, fsync, rename) so a reader
never sees half a file. The rest of evalharness writes files through this module only.
"""

from __future__ import annotations

import glob
import itertools
import json
import logging
import os
import time
from collections.abc import Iterator
from typing import IO, Any

from evalharness.core.atomic_io import (
    atomic_write_chunks,
    atomic_write_text,
    dumps,
    no_nan,
    strict_json_line,
    sync_open_file,
    sync_paths,
)
from evalharness.core.collector import cycles_uncollected
from evalharness.core.fileguard import refuse_special_file
from evalharness.core.native_output import NATIVE_LOG
from evalharness.core.untrusted import check_json_limits
from evalharness.rundir.metrics_file import Document

log = logging.getLogger("evalharness")

METRICS_FILE = "metrics.json"
PREDICTIONS_FILE = "predictions.jsonl"
RESULTS_FILE = "results.txt"
STATE_FILE = "run_state.json"
RUN_FILES = (METRICS_FILE, PREDICTIONS_FILE, RESULTS_FILE, STATE_FILE)
FLUSH_S = 0.1  # the longest a written prediction line waits in the buffer (a hard kill's loss)


def parse_predictions(
    data: bytes, source: str = PREDICTIONS_FILE
) -> tuple[list[dict[str, Any]], int | None, int]:
    """The one parser of predictions.jsonl: (records up to the first line that is not a complete
    JSON object, that line's number or None, the byte offset where it starts). Blank lines are
    skipped; a last line without its newline counts as torn. A line over the limits of untrusted
    files (nesting, number length) was never written by a run: DataError naming ``source``."""
    records: list[dict[str, Any]] = []
    end = 0
    with cycles_uncollected():
        for number, line in enumerate(data.splitlines(keepends=True), start=1):
            record = _record(line, f"{source} line {number}") if line.endswith(b"\n") else None
            if record is None and line.strip():
                return records, number, end
            if isinstance(record, dict):  # neither torn (None) nor blank
                records.append(record)
            end += len(line)
    return records, None, end


def read_predictions(path: str, repair: bool = False) -> list[dict[str, Any]]:
    """Records of a predictions.jsonl up to its first torn line (for a resume).

    A hard kill can cut the last line; a crash of the disk or of a copy can damage one anywhere.
    Everything from the first line that is not a complete JSON object on is dropped (the samples it
    held run again on resume), and with ``repair`` truncated away, with a warning saying where, so
    appending continues on a clean line boundary and never after a hole.
    """
    if not os.path.exists(path):
        return []
    refuse_special_file(path, "predictions file")
    with open(path, "rb") as f:
        data = f.read()
    records, torn, end = parse_predictions(data, path)
    if torn is not None:
        dropped = data[end:].count(b"\n") + (not data.endswith(b"\n"))
        log.warning(
            "%s: line %d is torn; resuming from the %d records before it (%d line(s) dropped, "
            "their samples run again)",
            path,
            torn,
            len(records),
            dropped,
        )
    if repair and end < len(data):
        with open(path, "r+b") as f:
            f.truncate(end)
    return records


_BLANK = object()


def _record(line: bytes, where: str) -> object:
    """The JSON object on ``line``, ``_BLANK`` for an empty line, None when the line is torn."""
    if not line.strip():
        return _BLANK
    check_json_limits(line, where)
    try:
        value = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


class RunWriter:
    """Owns one run directory. ``resume`` appends to an existing predictions file."""

    def __init__(self, run_dir: str, resume: bool = False) -> None:
        self.run_dir = run_dir
        os.makedirs(run_dir, exist_ok=True)
        self.metrics_path = os.path.join(run_dir, METRICS_FILE)
        self.predictions_path = os.path.join(run_dir, PREDICTIONS_FILE)
        self._predictions: IO[Any] | None = None
        self._mode = "a" if resume else "w"
        self._flushed = 0.0  # time.monotonic() of the last flush of the predictions file
        self.count = len(read_predictions(self.predictions_path)) if resume else 0

    def append(self, record: dict[str, Any]) -> None:
        """One record as one line of strict JSON (NaN/Inf written as null; output_checks flags them).

        Lines reach the file at most :data:`FLUSH_S` after the previous flush, not one write each
        (the loop scores samples in blocks): a hard kill loses at most that much of the tail, which
        a resumed run scores again; ``close`` flushes and syncs the rest."""
        if self._predictions is None:
            self._predictions = open(self.predictions_path, self._mode, encoding="utf-8")  # noqa: SIM115
        self._predictions.write(strict_json_line(record))
        now = time.monotonic()
        if now - self._flushed >= FLUSH_S:
            self._predictions.flush()
            self._flushed = now
        self.count += 1

    def close(self) -> None:
        if self._predictions is not None:
            sync_open_file(self._predictions)  # flushed, then synced: never the other way round
            self._predictions.close()
            self._predictions = None

    def write_metrics(self, doc: Document) -> str:
        """The metrics.json document (built by :mod:`evalharness.rundir.document`), atomically: the
        run's commit point. Every file the document names (its predictions, artifacts) is flushed
        and synced first (:func:`referenced_files`), so a committed metrics.json never points at
        records a power cut can still take; every writer of a run directory commits here."""
        if self._predictions is not None:
            sync_open_file(self._predictions)
        sync_paths(referenced_files(self.run_dir, doc))
        atomic_write_text(self.metrics_path, dumps(doc.to_json()))
        return self.metrics_path

    def write_json(self, name: str, obj: object) -> str:
        """``obj`` as compact JSON; an iterator is streamed as a JSON array, row by row, never held whole."""
        path = os.path.join(self.run_dir, name)
        if isinstance(obj, Iterator):
            atomic_write_chunks(path, _json_array_chunks(obj))
        else:
            atomic_write_text(path, json.dumps(no_nan(obj), separators=(",", ":"), allow_nan=False) + "\n")
        return path

    def write_results(self, lines: list[str]) -> str:
        path = os.path.join(self.run_dir, RESULTS_FILE)
        atomic_write_text(path, "".join(line + "\n" for line in lines))
        return path


def referenced_files(run_dir: str, doc: Document) -> list[str]:
    """The files of ``run_dir`` that ``doc`` names: its predictions (a pattern, for the shards a
    ``loop.parallel`` interruption kept) and its artifacts. Only names inside the directory."""
    names = [doc.predictions.path, *doc.artifacts]
    root = os.path.realpath(run_dir)
    found: list[str] = []
    for name in filter(None, names):
        pattern = os.path.join(glob.escape(run_dir), name)
        paths = sorted(glob.glob(pattern)) if "*" in name else [os.path.join(run_dir, name)]
        found += [p for p in paths if os.path.realpath(p).startswith(root + os.sep)]
    return found


_ROWS_PER_CHUNK = 1000  # rows encoded by one json.dumps call: its set-up paid once per chunk


def _json_array_chunks(rows: Iterator[Any]) -> Iterator[str]:
    """Same bytes as ``json.dumps(no_nan(list(rows)), separators=(",", ":"))``, a chunk of rows at a
    time (a list's items are joined by the same separator); the walk that nulls NaN/Inf runs only
    for a chunk that holds one."""
    yield "["
    rows, separator = iter(rows), ""
    while chunk := list(itertools.islice(rows, _ROWS_PER_CHUNK)):
        try:
            text = json.dumps(chunk, separators=(",", ":"), allow_nan=False)
        except ValueError:
            text = json.dumps(no_nan(chunk), separators=(",", ":"), allow_nan=False)
        yield separator + text[1:-1]  # the chunk's rows without its brackets
        separator = ","
    yield "]\n"


def keep_native_log(run_dir: str, lines: list[str], session: str) -> str | None:
    """Add this session's native runtime output to the run's ``native.log`` (a resumed run keeps
    each session's, headed by when it started); returns its path, or None when there was none."""
    if not lines or not os.path.isdir(run_dir):
        return None
    path = os.path.join(run_dir, NATIVE_LOG)
    refuse_special_file(path, "the run's native.log")
    before = ""
    if os.path.isfile(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            before = f.read()
    atomic_write_text(path, before + f"# session started {session}\n" + "\n".join(lines) + "\n")
    return path
