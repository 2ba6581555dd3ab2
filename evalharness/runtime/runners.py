"""Runners: where a checked delegate config runs, each with its own settings schema.

Planning a delegate is the delegate's business; WHERE it runs is the runner's. ``host`` (this
process) asks the delegate's own plan function; ``adb`` (runtime/android/runner.py) plans
for benchmark_model on a phone. A runner checks its config group with :mod:`evalharness.core.schema`
before anything is loaded or touched. No runtime import here.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalharness.core.registry import Registry
from evalharness.core.schema import build
from evalharness.runtime.delegates import DELEGATES, DelegatePlan, DelegateSettings


@dataclass(frozen=True)
class RunnerSettings:
    """What every runner's settings hold; a runner's own schema (its ``runner`` config group)
    subclasses this, so a reader names the type and reads by attribute (``settings.runner.name``)."""

    name: str = "host"


class Runner(abc.ABC):
    """A place to run models; ``settings`` is the dataclass of its ``runner`` config group (a
    :class:`RunnerSettings`)."""

    settings: type[RunnerSettings]

    def check(self, cfg: Mapping[str, Any], latency_only_task: bool) -> RunnerSettings:
        """The runner config checked, as a frozen instance of ``settings``; ``latency_only_task``: the
        task measures nothing but latency (a runner whose every run already is a latency benchmark
        may refuse it)."""
        return build(self.settings, cfg, "config group 'runner'")

    @abc.abstractmethod
    def plan(self, delegate: DelegateSettings) -> DelegatePlan:
        """How to load the checked delegate config here (unavailable -> an error now)."""


# runner=adb registers itself when its module is imported
RUNNERS: Registry[Runner] = Registry(
    "runner", base=Runner, lazy={"adb": "evalharness.runtime.android.runner"}
)


@dataclass(frozen=True)
class HostSettings(RunnerSettings):
    name: str = "host"


class HostRunner(Runner):
    """The model runs in this process, with LiteRT on this host (the default)."""

    settings = HostSettings

    def plan(self, delegate: DelegateSettings) -> DelegatePlan:
        return DELEGATES.get(delegate.name).plan(delegate)


RUNNERS.register("host")(HostRunner())
