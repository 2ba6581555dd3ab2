"""Which pip extra a ``hydra/launcher=...`` choice needs, checked before Hydra composes.

Without the plugin Hydra's own error is a multi-line "Could not find 'hydra/launcher/...'"; this
names the package instead. Presets in ``conf/hydra/launcher/`` extend the plugins' configs.
"""

from __future__ import annotations

import importlib.util
import re

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
_LAUNCHER = re.compile(r"^hydra/launcher=(?P<name>\w+)$")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the hydra_plugins namespace itself is absent
        return False


def missing_launcher_plugin(args: list[str]) -> str | None:
    """A one-line error when the chosen launcher's plugin is not installed, else None."""
    for arg in args:
        m = _LAUNCHER.match(arg)
        if m and m.group("name") in PLUGINS:
            module, extra = PLUGINS[m.group("name")]
            if not _installed(module):
                return f"{arg} needs the {module.split('.')[-1]} plugin: pip install 'evalharness[{extra}]'"
    return None
