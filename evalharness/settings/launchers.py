"""Which pip extra a ``hydra/launcher=...`` choice needs, checked before Hydra composes.

Without the plugin Hydra's own error is a multi-line "Could not find 'hydra/launcher/...'"; this
names the package instead. Presets in ``conf/hydra/launcher/`` extend the plugins' configs.
"""

from __future__ import annotations

import importlib.util

from hydra.core.override_parser.types import Override

from evalharness.settings.overrides import options

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
