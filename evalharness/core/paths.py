"""Locate ``conf/`` and the bundled sample whether evalharness runs from a checkout or an install.

In the repository they sit at the top level (``conf/``, ``datasets/sample/``); ``pip install .``
copies them into the package (``evalharness/conf``, ``evalharness/bundled``). Nothing here
depends on the current working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # evalharness/


def _locate(installed: str, checkout: str) -> Path:
    inside = _PACKAGE / installed
    return inside if inside.is_dir() else _PACKAGE.parent / checkout


CONF_DIR = _locate("conf", "conf")
BUNDLED_DIR = _locate("bundled", "datasets/sample")


def bundled(relative: str) -> str:
    """OmegaConf resolver ``${bundled:file}``: absolute path of a file of the bundled sample."""
    return str(BUNDLED_DIR / relative)


def model_stem(path: str) -> str:
    """OmegaConf resolver ``${model_stem:path}``: a model file's name without ``.tflite`` (the run's
    model name when only ``model.path`` is given)."""
    return os.path.splitext(os.path.basename(str(path)))[0] or "model"


def quant_tag(name: object) -> str:
    """OmegaConf resolver ``${quant_tag:${quant.name}}``: ``_int8`` for a quantized variant, nothing
    for the float model, so a quantization sweep's job directories say which variant each holds."""
    return "" if name in (None, "none") else f"_{name}"


def default_cache_dir() -> str:
    """``paths.cache_dir``'s default (conf/paths/default.yaml), for callers that plan a delegate
    without a composed config (explain, inspect)."""
    return os.path.expanduser(os.environ.get("EVALHARNESS_CACHE") or "~/.cache/evalharness")


# paths.<key> -> the environment variable conf/paths/default.yaml reads it from
PATH_VARIABLES = {
    "models_dir": "EVALHARNESS_MODELS",
    "data_dir": "EVALHARNESS_DATA",
    "cache_dir": "EVALHARNESS_CACHE",
}


def check_path_variables(paths: object) -> None:
    """Refuse a folder set by its environment variable that cannot be a folder (a FIFO, a file, a
    path under a file), naming the variable: the error a file read beneath it gives would name only
    a derived path. A folder that is not there yet is left to its reader (the cache makes it).
    ``paths``: the validated ``paths`` group (its folders read by attribute)."""
    from evalharness.core.errors import ConfigError

    for key, variable in PATH_VARIABLES.items():
        given = os.environ.get(variable)
        if not given or os.path.expanduser(given) != os.path.expanduser(str(getattr(paths, key, ""))):
            continue  # not from the variable: a paths.<key>= override names itself where it fails
        where, path = f"{variable}={given} (paths.{key})", Path(os.path.expanduser(given))
        blocker = next((p for p in (path, *path.parents) if os.path.lexists(p)), None)
        if blocker is not None and not blocker.is_dir():
            what = "is not a folder" if blocker == path else f"is under {blocker}, which is not a folder"
            raise ConfigError(f"{where} {what}; point {variable} at a folder, or unset it")
