"""Live tasks: ``load_tasks()`` maps each task definition's name to its live class."""

from __future__ import annotations

import importlib

from evalharness.registry import Registry


def load_tasks() -> Registry:
    """Name -> live task class, for every task definition found (see :mod:`evalharness.scoring`)."""
    from evalharness.scoring import task_definitions

    live: Registry = Registry("task")
    definitions = task_definitions()
    for name in definitions.names():
        live.register(name)(live_class(definitions.get(name)))
    return live


def live_class(definition) -> type:
    """The live task class a definition names (``module:Class``), imported on demand."""
    module, _, attr = definition.live.partition(":")
    return getattr(importlib.import_module(module), attr)
