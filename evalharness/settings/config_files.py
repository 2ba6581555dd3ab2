"""The config files a user adds (``hydra.searchpath=[file://...]``, ``--config-dir``) checked before
Hydra composes: Hydra reads them with no limits (an alias bomb never finishes; binary bytes, deep
nesting or a ``!!python`` tag is an "internal error"), so each ``.yaml`` there is first read as
untrusted data (:func:`evalharness.core.untrusted.read_yaml`), a bad one one line naming it.
The project's own ``conf/`` is not re-read: it ships with the package.
"""

from __future__ import annotations

from pathlib import Path

from evalharness.core.errors import ConfigError
from evalharness.core.escape import terminal
from evalharness.core.untrusted import read_yaml

MAX_CONFIG_FILES = 10_000  # a config folder is tens of files; a home directory given by mistake is not


def config_file_problem(dirs: list[Path]) -> str | None:
    """One line naming the first config file under the user's config folders ``dirs`` (those of
    ``hydra.searchpath`` and ``--config-dir``) that is not plain YAML within limits, or None: a
    precheck, run before Hydra composes as the did-you-mean check of keys is."""
    try:
        for folder in dirs:
            for path in _yaml_files(Path(folder)):
                read_yaml(path, "config file", (dict, type(None)), ConfigError, "fix or remove it")
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
