"""Hydra callback: write the sweep report when a multirun ends, so every sweep leaves its table.

It first merges the shard runs of the sweep (``merge_shards``, see :mod:`.merge_sweep`), so the
report lists each merged run too. Enabled by ``conf/hydra/callbacks/sweep_report.yaml``
(``hydra/callbacks=sweep_report`` on the command line, or in the defaults of
``conf/hydra/default.yaml``). A report that cannot be written
is a warning, never a failed sweep: the runs themselves are intact.
"""

from __future__ import annotations

import logging
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from evalharness.core.errors import EvalHarnessError

log = logging.getLogger("evalharness.report")


class SweepReportCallback(Callback):
    def __init__(self, baseline: list[str] | None = None, out: str | None = None, merge_shards: bool = True):
        self.baseline = list(baseline or [])
        self.out = out
        self.merge_shards = merge_shards

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        from evalharness.report.sweep import parse_baseline, write_report

        sweep_dir = str(config.hydra.sweep.dir)
        if self.merge_shards:
            self._merge(sweep_dir)
        try:
            report = write_report(sweep_dir, self.out, parse_baseline(self.baseline))
        except (EvalHarnessError, OSError) as exc:
            log.warning("sweep report not written: %s", exc)
            return
        print(f"sweep report: {report['paths']['sweep.md']}")

    @staticmethod
    def _merge(sweep_dir: str) -> None:
        """Shard jobs of this sweep -> one merged run per complete group (report/merge_sweep.py)."""
        from evalharness.report.merge_sweep import merge_sweep

        try:
            merged, problems = merge_sweep(sweep_dir)
        except (EvalHarnessError, OSError) as exc:
            log.warning("shard runs not merged: %s", exc)
            return
        for path in merged:
            print(f"merged shards: {path}")
        for problem in problems:
            log.warning("shard runs not merged: %s", problem)
