"""The config files a user adds (``hydra.searchpath=[file://...]``, ``--config-dir``) checked before
Hydra composes: Hydra reads them with no limits (a FIFO blocks it, an alias bomb never finishes, a
binary file or a deep nesting is an "internal error"), so each ``.yaml`` there is first read as
untrusted data (:func:`evalharness.core.yaml_guard.load_yaml`) and a bad one is one line naming it.
The project's own ``conf/`` is not re-read: it ships with the package.
"""

from __future__ import annotations

from pathlib import Path

from evalharness.core.errors import ConfigError
from evalharness.core.escape import terminal
from evalharness.core.yaml_guard import read_yaml_file
from evalharness.run.cli import conf_dirs

MAX_CONFIG_FILES = 10_000  # a config folder is tens of files; a home directory given by mistake is not
_CONFIG_DIR_FLAGS = ("--config-dir", "-cd")


def user_config_dirs(args: list[str]) -> list[Path]:
    """The folders of ``hydra.searchpath`` and ``--config-dir`` (``-cd``, ``--config-dir=X``)."""
    dirs = conf_dirs(args)[1:]
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if flag in _CONFIG_DIR_FLAGS:
            if eq:
                dirs.append(Path(value))
            elif i + 1 < len(args):
                dirs.append(Path(args[i + 1]))
    return dirs


def config_file_problem(args: list[str]) -> str | None:
    """One line naming the first user config file that is not plain YAML within limits, or None
    (a precheck of ``python -m evalharness``, as ``unknown_key`` is)."""
    try:
        for folder in user_config_dirs(args):
            for path in _yaml_files(folder):
                read_yaml_file(path, "config file")
    except ConfigError as exc:
        return str(exc)
    return None


def _yaml_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []  # Hydra's own message names a search path that is not a folder
    found = []
    for path in folder.rglob("*.yaml"):  # rglob follows no symlinked folder: a loop cannot recurse
        found.append(path)
        if len(found) > MAX_CONFIG_FILES:
            raise ConfigError(
                f"{terminal(folder, '')}: over {MAX_CONFIG_FILES} .yaml files; give the config folder itself"
            )
    return sorted(found)
