"""Task definitions (see :mod:`evalharness.tasks.definition`), found by discovery, never by a list.

The registry lists the task folders of this package (``tasks/<task>/definition.py``; never a live
half) and imports the outside plug-ins through the one discovery path of every plug-in kind
(:func:`evalharness.core.registry.discover_plugins`: ``EVALHARNESS_PLUGINS`` and the
``evalharness.plugins`` entry-point group); each definition registers itself as it is imported. So a
new task is a new folder here (or an installed plug-in): nothing else names it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from evalharness.core.registry import PLUGINS_ENV, load_object

if TYPE_CHECKING:
    from evalharness.core.registry import Registry
    from evalharness.tasks.definition import TaskDefinition

__all__ = ["PLUGINS_ENV", "and_list", "definition_for", "listed", "live_class", "task_definitions"]


def task_definitions() -> Registry[type[TaskDefinition]]:
    """The registry of task definitions (name -> TaskDefinition class)."""
    from evalharness.tasks.definition import DEFINITIONS

    return DEFINITIONS


def definition_for(name: str, settings: dict[str, Any] | None = None) -> TaskDefinition:
    """An instance of the definition of task ``name`` (with the run's ``task`` settings)."""
    return task_definitions().get(name)(settings or {})


def listed(names_of: Callable[[type[TaskDefinition]], bool] = lambda d: True) -> list[str]:
    """Task names whose definition satisfies ``names_of``, in listing order (for help and errors)."""
    defs = task_definitions()
    chosen = [defs.get(n) for n in defs.names() if names_of(defs.get(n))]
    return [d.name for d in sorted(chosen, key=lambda d: (d.listing_order, d.name))]


def and_list(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def live_class(definition: TaskDefinition) -> type:
    """The live task class a definition names (``module:Class``), imported on demand: only a job
    calls this, so reports never import a live half."""
    return cast(type, load_object(definition.live, f"task {definition.name}'s live half"))
