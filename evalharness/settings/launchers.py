"""Which pip extra a ``hydra/launcher=...`` choice needs, checked before Hydra composes; and Hydra's
scan for plug-ins, which leaves out the launchers a command does not choose.

Without the plugin Hydra's own error is a multi-line "Could not find 'hydra/launcher/...'"; this
names the package instead. Presets in ``conf/hydra/launcher/`` extend the plugins' configs.
"""

from __future__ import annotations

import argparse
import importlib.util
import pkgutil
from collections.abc import Callable, Iterable, Iterator

from hydra.core.override_parser.types import Override

from evalharness.settings.overrides import options, parse, split

PLUGINS = {  # launcher choice -> (plugin module, pip extra)
    "joblib": ("hydra_plugins.hydra_joblib_launcher", "launchers"),
    "local_processes": ("hydra_plugins.hydra_joblib_launcher", "launchers"),
    "submitit_local": ("hydra_plugins.hydra_submitit_launcher", "launchers"),
    "submitit_slurm": ("hydra_plugins.hydra_submitit_launcher", "launchers"),
    "local_submitit": ("hydra_plugins.hydra_submitit_launcher", "launchers"),
    "slurm": ("hydra_plugins.hydra_submitit_launcher", "launchers"),
    "ray": ("hydra_plugins.hydra_ray_launcher", "ray"),
    "ray_aws": ("hydra_plugins.hydra_ray_launcher", "ray"),
    "ray_local": ("hydra_plugins.hydra_ray_launcher", "ray"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the hydra_plugins namespace itself is absent
        return False


def missing_launcher_plugin(overrides: list[Override]) -> str | None:
    """A one-line error when the chosen launcher's plugin is not installed, else None."""
    for o in overrides:
        for name in (options(o) or []) if o.key_or_group == "hydra/launcher" else []:
            module, extra = PLUGINS.get(name, (None, None))
            if module and not _installed(module):
                plugin = module.split(".")[-1]
                return f"hydra/launcher={name} needs the {plugin} plugin: pip install 'evalharness[{extra}]'"
    return None


_left_out: frozenset[str] = frozenset()  # the launcher plug-ins this process's scan left out


def scan_plugins(args: list[str]) -> None:
    """Hydra's plug-in registry made before Hydra makes it, without the launcher plug-ins of
    :data:`PLUGINS` that the command line does not choose. Hydra finds plug-ins by importing every
    module under ``hydra_plugins`` when it first needs one (its search-path plug-ins, on every run):
    with the Ray launcher installed that is ~50 ms of each run's start-up (its config module reads
    package versions), and the others' ~10 ms, though a plain run uses none of them. Every other
    package under ``hydra_plugins`` (a search-path plug-in, a sweeper, another launcher) is scanned
    as Hydra scans it. Where the launcher may be chosen elsewhere than by a ``hydra/launcher=``
    override naming one of :data:`PLUGINS` (a config of the user's, a search path, a sweeper, a
    ``_target_``, Hydra's own ``--info``), nothing is left out: Hydra scans as it always does."""
    from hydra.core.plugins import Plugins
    from hydra.core.singleton import Singleton

    global _left_out
    needed = _launchers_needed(args)
    skip = frozenset() if needed is None else frozenset(m for m, _ in PLUGINS.values()) - needed
    if Plugins in Singleton._instances:
        if not _left_out - skip:  # made here before, leaving out nothing this command uses (or by Hydra)
            return
        del Singleton._instances[Plugins]  # an earlier command's scan left out what this one uses
    _left_out = frozenset()
    if not skip:
        return  # Hydra scans everything when it first needs a plug-in, as always
    walk = pkgutil.walk_packages

    def walk_without(
        path: Iterable[str] | None = None, prefix: str = "", onerror: Callable[[str], object] | None = None
    ) -> Iterator[pkgutil.ModuleInfo]:
        inside = tuple(f"{m}." for m in skip)
        return (
            m for m in walk(path, prefix, onerror) if m.name not in skip and not m.name.startswith(inside)
        )

    pkgutil.walk_packages = walk_without  # type: ignore[assignment]  # Hydra's scan walks with it
    try:
        Plugins.instance()
    finally:
        pkgutil.walk_packages = walk
    _left_out = skip


def _launchers_needed(args: list[str]) -> frozenset[str] | None:
    """The plug-in modules of the launchers the command line chooses; None: it may use any."""
    try:
        flags, given = split(args)
        overrides = parse(given)
    except Exception:  # noqa: BLE001 - precheck has said it, or Hydra will: scan as Hydra does
        return None
    if _elsewhere(flags):
        return None
    needed: set[str] = set()
    for o in overrides:
        key = o.key_or_group
        if key == "hydra/launcher":
            names = options(o)
            if names is None:
                return None
            for name in names:
                if name == "basic":
                    continue
                if name not in PLUGINS:
                    return None
                needed.add(PLUGINS[name][0])
        elif key.startswith(("hydra/launcher", "hydra/sweeper", "hydra.searchpath")) or (
            key.startswith(("hydra.launcher", "hydra.sweeper")) and "_target_" in key
        ):
            return None
    return frozenset(needed)


def _elsewhere(flags: argparse.Namespace) -> bool:
    """Hydra's flags under which a launcher may be chosen or listed beyond the command line's."""
    named = (flags.config_path, flags.config_name, flags.config_dir, flags.experimental_rerun, flags.info)
    return any(v is not None for v in named) or flags.shell_completion or flags.hydra_help
