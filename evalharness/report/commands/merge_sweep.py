"""Merging the shard runs of a multirun automatically when it ends (called by the sweep callback).

Jobs of one sweep whose overrides differ only in ``dataset.shard.index`` form one group; a group
with every shard complete is merged into ``<sweep dir>/merged_<dir of its shard-0 job>`` (which the
sweep report then lists as a row of its own). A group that cannot be merged (a shard failed or is
missing) is reported with the reason and left alone; the shard runs themselves are never touched.
A merged directory that already exists (a resumed sweep) is kept.
"""

from __future__ import annotations

import os
from typing import Any

from evalharness.core.errors import EvalHarnessError
from evalharness.report.commands.merge import merge_loaded
from evalharness.report.commands.sweep import collect
from evalharness.report.runs import ReportError
from evalharness.rundir.files import METRICS_FILE
from evalharness.rundir.reader import Run

MERGED_PREFIX = "merged_"
SHARD_INDEX = "dataset.shard.index"  # the override that tells a group's jobs apart


def _shard_count(run: Run) -> int:
    shard = run.provenance.dataset.shard
    return (shard.count if shard is not None else None) or 1


def _shard_index(run: Run) -> int:
    """A shard group's runs all record their index (a shard count above 1 says so)."""
    shard = run.provenance.dataset.shard
    return (shard.index if shard is not None else None) or 0


def shard_groups(sweep_dir: str) -> dict[tuple[Any, ...], list[Run]]:
    """Sharded runs of ``sweep_dir`` grouped by their overrides without the shard index."""
    try:
        jobs = collect(sweep_dir)
    except ReportError:  # no job directories: nothing to merge
        return {}
    groups: dict[tuple[Any, ...], list[Run]] = {}
    for job in jobs:
        run = job["doc"]
        if job["run"].startswith(MERGED_PREFIX) or run is None or _shard_count(run) <= 1:
            continue
        key = tuple(sorted((k, v) for k, v in job["params"].items() if k != SHARD_INDEX))
        groups.setdefault(key, []).append(run)
    return groups


def merge_sweep(sweep_dir: str) -> tuple[list[str], list[str]]:
    """Merge every complete shard group of a multirun: (merged run dirs, reasons for groups left alone)."""
    merged, problems = [], []
    for runs in shard_groups(sweep_dir).values():
        first = min(runs, key=_shard_index)
        out = os.path.join(sweep_dir, MERGED_PREFIX + os.path.basename(first.dir))
        if os.path.isfile(os.path.join(out, METRICS_FILE)):
            continue
        try:
            merge_loaded(runs, out)
        except EvalHarnessError as exc:
            problems.append(f"{os.path.basename(first.dir)}: {exc}")
            continue
        merged.append(out)
    return merged, problems
