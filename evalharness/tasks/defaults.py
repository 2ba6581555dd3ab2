"""A task's defaults, declared once: in its ``conf/task/<name>.yaml``, where every default lives
(docs/architecture.md). The definition's settings schema declares each field's type, bounds and
meaning, and takes its default from that file (:func:`from_conf`), so the two cannot drift apart;
tests/unit/tasks/test_task_defaults.py refuses a default written in both.

A run recorded before a setting existed is read as it was made (:func:`setting`): the value runs
had then, pinned by the task (``recorded_before``: COCO's runs had no analysis before
``task.analysis``, and TIDE in it before ``task.tide``), never today's default, which may change;
any other missing key reads conf's default.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


@functools.cache
def conf_task(name: str) -> Mapping[str, Any]:
    """The ``task`` group of ``conf/task/<name>.yaml`` (a file in ``@package _global_`` form holds
    it under ``task:``)."""
    from evalharness.core.paths import CONF_DIR
    from evalharness.core.untrusted import read_yaml

    found = read_yaml(os.path.join(CONF_DIR, "task", f"{name}.yaml"), "task config") or {}
    node = found.get("task", found) if "name" not in found else found
    if not isinstance(node, dict):
        raise TypeError(f"conf/task/{name}.yaml: no task group")
    return node


def from_conf(name: str) -> Callable[[type[T]], type[T]]:
    """Class decorator under ``@dataclass``: each field of the schema that ``conf/task/<name>.yaml``
    sets gets that value as its default (a list or mapping as a fresh copy per instance). A field
    that declares a default of its own besides is a TypeError at import: one place each."""

    def apply(cls: type[T]) -> type[T]:
        values = conf_task(name)
        for key in getattr(cls, "__annotations__", {}):
            if key not in values:
                continue
            value, given = values[key], cls.__dict__.get(key, dataclasses.MISSING)
            if _declares_default(given):
                raise TypeError(f"{cls.__name__}.{key}: its default is conf/task/{name}.yaml's; give it once")
            target = given if isinstance(given, dataclasses.Field) else dataclasses.field()
            setattr(cls, key, target)
            if isinstance(value, (dict, list)):
                target.default_factory = functools.partial(copy.deepcopy, value)
            else:
                target.default = value
        return cls

    return apply


def _declares_default(given: Any) -> bool:
    """A class attribute that is a default: a value, or a ``field()`` with a default (factory)."""
    if isinstance(given, dataclasses.Field):
        return given.default is not dataclasses.MISSING or given.default_factory is not dataclasses.MISSING
    return given is not dataclasses.MISSING


def setting(
    settings: Mapping[str, Any], task: str, key: str, recorded_before: Mapping[str, Any] | None = None
) -> Any:
    """A run's setting ``key`` of built-in ``task``: as recorded, else as runs made before it existed
    had it (``recorded_before``), else conf's default (module docstring)."""
    if key in settings:
        return settings[key]
    if recorded_before and key in recorded_before:
        return recorded_before[key]
    return conf_task(task)[key]
