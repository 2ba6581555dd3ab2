"""Runtime layer: the only package that imports ``ai_edge_litert`` or ``tensorflow``.

``delegates`` checks a delegate config against the delegate's schema; a runner (``runners``: host,
or ``android``'s adb) turns it into a :class:`DelegatePlan` (pure Python, no runtime import, so
unavailable delegates fail before anything loads); the backend registered for ``plan.backend``
loads the model as a :class:`Model` (``contract``). Plug-in modules register themselves and are
imported on first use (lazy registries), never just to validate a config.

May import: core, rundir, data, stats.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from evalharness.core.registry import Registry
from evalharness.core.tensors import TensorInfo
from evalharness.runtime.contract import BACKENDS, Coverage, Model
from evalharness.runtime.delegates import DelegatePlan, check_delegate
from evalharness.runtime.runners import RUNNERS, Runner, RunnerSettings

__all__ = [
    "Coverage",
    "DelegatePlan",
    "Model",
    "TensorInfo",
    "backends",
    "check_runner",
    "load_model",
    "plan_delegate",
    "runners",
]


def runners() -> Registry[Runner]:
    """Every runner (``host`` lives in runners.py; the others are imported when first named)."""
    return RUNNERS


def backends() -> Registry[type[Model]]:
    """Every backend, by the ``DelegatePlan.backend`` name it serves (imported when first named)."""
    return BACKENDS


def plan_delegate(
    raw: Mapping[str, Any], runner: str = "host", variant_dir: str | None = None, key: str = "delegate"
) -> DelegatePlan:
    """Check a delegate config (a plain dict from Hydra) and plan it for ``runner``; ``variant_dir``:
    the run's ``paths.cache_dir``, where a backend caches the model files it derives (AOT builds);
    ``key``: where the config sits (a task's reference delegate: ``task.reference_delegate``)."""
    plan = runners().get(runner).plan(check_delegate(raw, key))
    return dataclasses.replace(plan, variant_dir=variant_dir) if variant_dir else plan


def check_runner(runner_cfg: Mapping[str, Any], latency_only_task: bool) -> RunnerSettings:
    """The ``runner`` config group checked against its runner's schema (config time, nothing touched).

    ``latency_only_task``: the task measures only latency (task=benchmark), which runner=adb refuses."""
    return runners().get(runner_cfg.get("name", "host")).check(runner_cfg, latency_only_task)


def load_model(
    model_path: str, plan: DelegatePlan, runtime: str = "litert", runner: RunnerSettings | None = None
) -> Model:
    """Load ``model_path`` with the delegate ``plan`` on ``runtime`` (litert | tensorflow), or on an
    Android phone when the plan was made for ``runner=adb`` (``runner``: its checked settings).
    Every LiteRT backend stands on ai-edge-litert (its schema reads the file): its version is checked
    first. A source model (ONNX, .pt2: ``source_formats``) goes to its own backend, whatever the plan."""
    from evalharness.runtime.litert import check_litert_version
    from evalharness.runtime.source_formats import source_format

    if (fmt := source_format(model_path)) is not None:
        fmt.require(model_path)
        return backends().get(fmt.backend).load(model_path, plan, runtime, runner)
    check_litert_version()
    return backends().get(plan.backend).load(model_path, plan, runtime, runner)
