"""``runner=adb``: its settings, its config checks and its delegate plans (no adb call, no runtime).

The delegate runs inside TFLite's ``benchmark_model`` on the phone, so a plan here is checked
against what benchmark_model can do (its registrar flags), not against this host.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from evalharness.core.errors import ConfigError
from evalharness.runtime.android import benchmark_model as bm
from evalharness.runtime.delegates import DelegatePlan, DelegateSettings, make_plan
from evalharness.runtime.runners import RUNNERS, Runner, RunnerSettings


@dataclass(frozen=True)
class AdbSettings(RunnerSettings):  # conf/runner/adb.yaml
    name: str = "adb"
    benchmark_binary: str = ""  # host path of benchmark_model built for Android (mandatory)
    adb: str = "adb"
    serial: str = ""
    device_dir: str = "/data/local/tmp/evalharness"
    batch_size: int = 256
    num_runs: int = 50
    warmup_runs: int = 1
    min_secs: float = 1.0
    warmup_min_secs: float = 0.5
    max_secs: float = 150.0
    delegate_serialize: bool = True
    keep_device_files: bool = False


class AdbRunner(Runner):
    """An attached Android phone runs the model in benchmark_model (runtime/android/backend.py)."""

    settings = AdbSettings

    def check(self, cfg: Mapping[str, Any], latency_only_task: bool) -> AdbSettings:
        runner = cast(AdbSettings, super().check(cfg, latency_only_task))
        binary = runner.benchmark_binary
        if not binary:
            raise ConfigError(
                "runner=adb needs runner.benchmark_binary=/path/to/android_aarch64_benchmark_model "
                "(TFLite's benchmark_model built for Android; see docs/android.md)"
            )
        if not os.path.isfile(binary):
            raise ConfigError(f"runner.benchmark_binary not found: {binary}")
        if not runner.device_dir.startswith("/"):
            raise ConfigError(f"runner.device_dir={runner.device_dir!r}: use an absolute path on the phone")
        if latency_only_task:
            raise ConfigError(
                "task=benchmark with runner=adb: every adb run's latency_ms already is benchmark_model's "
                "own standard run on the phone; use task=imagenet|coco|inference_diff, or runner=host"
            )
        if runner.batch_size < 1 or runner.num_runs < 1:
            raise ConfigError("runner.batch_size and runner.num_runs must be >= 1")
        return runner

    def plan(self, delegate: DelegateSettings) -> DelegatePlan:
        plan = make_plan(delegate, "benchmark_model", backend="adb")
        bm.device_flags(plan)  # bad values fail now, before anything is pushed
        return plan


RUNNERS.register("adb")(AdbRunner())
