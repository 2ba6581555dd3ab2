"""Merging the shard runs of a multirun automatically when it ends (called by the sweep callback).

Jobs of one sweep whose overrides differ only in ``dataset.shard.index`` form one group; a group
with every shard complete is merged into ``<sweep dir>/merged_<dir of its shard-0 job>`` (which the
sweep report then lists as a row of its own). A group that cannot be merged (a shard failed or is
missing) is reported with the reason and left alone; the shard runs themselves are never touched.
A merged directory that already exists (a resumed sweep) is kept.
"""

from __future__ import annotations

import os

from evalharness.errors import EvalHarnessError
from evalharness.report.merge import merge_runs
from evalharness.report.runs import load_run
from evalharness.report.writer import METRICS_FILE

MERGED_PREFIX = "merged_"


def shard_groups(sweep_dir: str) -> dict[tuple, list[str]]:
    """Sharded job dirs of ``sweep_dir`` grouped by their overrides without the shard index."""
    groups: dict[tuple, list[str]] = {}
    for name in sorted(os.listdir(sweep_dir)):
        job_dir = os.path.join(sweep_dir, name)
        if name.startswith(MERGED_PREFIX) or not os.path.isfile(os.path.join(job_dir, METRICS_FILE)):
            continue
        run = load_run(job_dir, name)
        if (run.prov("dataset.shard.count") or 1) <= 1:
            continue
        key = tuple(sorted(o for o in run.prov("overrides", []) if not o.startswith("dataset.shard.index=")))
        groups.setdefault(key, []).append(job_dir)
    return groups


def merge_sweep(sweep_dir: str) -> tuple[list[str], list[str]]:
    """Merge every complete shard group of a multirun: (merged run dirs, reasons for groups left alone)."""
    merged, problems = [], []
    for jobs in shard_groups(sweep_dir).values():
        first = min(jobs, key=lambda d: load_run(d, d).prov("dataset.shard.index"))
        out = os.path.join(sweep_dir, MERGED_PREFIX + os.path.basename(first))
        if os.path.isfile(os.path.join(out, METRICS_FILE)):
            continue
        try:
            merge_runs(jobs, out)
        except EvalHarnessError as exc:
            problems.append(f"{os.path.basename(first)}: {exc}")
            continue
        merged.append(out)
    return merged, problems
