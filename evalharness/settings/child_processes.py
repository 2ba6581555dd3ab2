"""The settings that repeat the command line in child processes, checked before anything runs:
``loop.parallel`` (P shard processes of T threads, merged: :mod:`evalharness.run.parallel`) and
``task.start_up`` (cold and warm passes: :mod:`evalharness.run.start_up`). A value that cannot be
split and merged, or a delegate whose caches cannot be made cold and then warm, is refused here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from evalharness.core.errors import ConfigError
from evalharness.runtime.compile_cache import shader_cache_disabled
from evalharness.runtime.delegates import DelegatePlan, compile_cache_kinds, kind_of

if TYPE_CHECKING:  # for the type only
    from evalharness.tasks.definition import TaskDefinition

OFF, AUTO = "off", "auto"
_GIVEN = re.compile(r"^(\d+)x(\d+)$")
MODES = ("as_found", "cold", "warm", "both")  # task.start_up


def parse_parallel(value: str) -> tuple[int, int] | str:
    """``off``, ``auto`` or (processes, threads) from ``PxT``; anything else is a ConfigError."""
    text = str(value).strip().lower()
    if text in (OFF, AUTO):
        return text
    if (m := _GIVEN.match(text)) and int(m.group(1)) >= 1 and int(m.group(2)) >= 1:
        return int(m.group(1)), int(m.group(2))
    raise ConfigError(f"loop.parallel={value!r}: use off, auto or PxT (processes x threads, e.g. 2x1)")


def check_parallel(
    value: str, definition: TaskDefinition, shard_count: int, command_line: bool, accelerator: bool = False
) -> None:
    """Refuse, before anything runs, what cannot be split into shards and merged back, and ``auto``
    for a delegate that runs on an accelerator (it splits CPU cores, which an accelerator is not)."""
    asked = parse_parallel(value)
    if asked == OFF:
        return
    if asked == AUTO and accelerator:
        raise ConfigError(
            "loop.parallel=auto splits this machine's CPU cores between interpreters; the delegate runs "
            "on an accelerator: give the split, e.g. loop.parallel=2x1, or use loop.parallel=off"
        )
    if not definition.abilities.mergeable:
        raise ConfigError(
            f"loop.parallel={value}: task={definition.name} cannot be split into shards and merged "
            "(no per-sample records in dataset order); use loop.parallel=off"
        )
    if shard_count > 1:
        raise ConfigError(
            f"loop.parallel={value} shards the run itself: drop dataset.shard.count={shard_count} "
            "or use loop.parallel=off"
        )
    if not command_line:
        raise ConfigError(
            f"loop.parallel={value} repeats the command line in child processes; run it with "
            "python -m evalharness (this config was composed without one)"
        )


def check_start_up(mode: str, plan: DelegatePlan, command_line: bool) -> None:
    """Refuse, before anything runs, a mode that does not exist, a delegate whose caches the passes
    cannot make cold and then warm, or a run without a command line for the passes to repeat."""
    if mode not in MODES:
        raise ConfigError(f"task.start_up={mode!r}; valid: {', '.join(MODES)}")
    if mode == "as_found":
        return
    if not command_line:
        raise ConfigError(
            f"task.start_up={mode} repeats the command line in child processes; run it with "
            "python -m evalharness (this config was composed without one)"
        )
    if not kind_of(plan).compile_cache:
        raise ConfigError(
            f"task.start_up={mode} needs a compile cache to empty and fill; delegate={plan.name} has none "
            f"evalharness can point at (only {', '.join(compile_cache_kinds())}); use task.start_up=as_found"
        )
    if plan.shader_cache and shader_cache_disabled():
        raise ConfigError(
            f"task.start_up={mode} with MESA_SHADER_CACHE_DISABLE set: the driver caches nothing, so no "
            "pass can be warm; unset MESA_SHADER_CACHE_DISABLE or use task.start_up=as_found"
        )
