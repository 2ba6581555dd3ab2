"""Task definitions (see :mod:`evalharness.tasks.definition`), found by discovery, never by a list.

:func:`task_definitions` imports the ``definition`` module of every task folder of this package
(``tasks/<task>/definition.py``; never its live half), the modules named in the
``EVALHARNESS_PLUGINS`` environment variable (comma-separated) and those of the
``evalharness.plugins`` entry-point group; each registers its definitions as it is imported. So a
new task is a new folder here (or an installed plug-in): nothing else names it.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import pkgutil
from typing import cast

import evalharness.tasks as tasks_package
from evalharness.core.registry import import_plugin, load_object

PLUGINS_ENV = "EVALHARNESS_PLUGINS"
ENTRY_POINTS = "evalharness.plugins"
_loaded = False


def plugin_modules() -> list[str]:
    """Module names of the plug-ins outside this package, in the order they are imported."""
    named = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    installed = [ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINTS)]
    return list(dict.fromkeys([*named, *installed]))


def task_definitions():
    """The registry of task definitions (name -> TaskDefinition class), every plug-in imported."""
    global _loaded
    from evalharness.tasks.definition import DEFINITIONS

    if not _loaded:
        for info in pkgutil.iter_modules(tasks_package.__path__):
            if info.ispkg:
                importlib.import_module(f"{tasks_package.__name__}.{info.name}.definition")
        for module in plugin_modules():
            import_plugin(module, f"plug-in (from {PLUGINS_ENV} or the {ENTRY_POINTS} entry points)")
        _loaded = True
    return DEFINITIONS


def definition_for(name: str | None, settings: dict | None = None):
    """An instance of the definition of task ``name`` (with the run's ``task`` settings)."""
    return task_definitions().get(name)(settings or {})


def listed(names_of=lambda d: True) -> list[str]:
    """Task names whose definition satisfies ``names_of``, in listing order (for help and errors)."""
    defs = task_definitions()
    chosen = [defs.get(n) for n in defs.names() if names_of(defs.get(n))]
    return [d.name for d in sorted(chosen, key=lambda d: (d.listing_order, d.name))]


def and_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def live_class(definition) -> type:
    """The live task class a definition names (``module:Class``), imported on demand: only a job
    calls this, so reports never import a live half."""
    return cast(type, load_object(definition.live, f"task {definition.name}'s live half"))
