"""Locate ``conf/`` and the bundled sample whether evalharness runs from a checkout or an install.

In the repository they sit at the top level (``conf/``, ``datasets/sample/``); ``pip install .``
copies them into the package (``evalharness/conf``, ``evalharness/bundled``). Nothing here
depends on the current working directory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

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


SWEPT_ENV = "EVALHARNESS_SWEPT"  # the keys a multirun sweeps, comma-separated: set by the command
# keys swept_tag never repeats: those the job directory already names (task, model, quant, delegate),
# and a shard's index (the job number tells shards apart; their merge is named after shard 0's folder)
UNTAGGED_KEYS = frozenset(
    {"task", "task.name", "model", "model.name", "quant", "quant.name", "delegate", "delegate.name"}
    | {"dataset.shard.index"}
)


def swept_tag(overrides: Iterable[object], named: object = "") -> str:
    """OmegaConf resolver ``${swept_tag:${hydra.overrides.task},${model.name}}``: the job's values of
    the keys the multirun sweeps (:data:`SWEPT_ENV`, set by ``python -m evalharness -m`` and by
    ``compare``), as ``_num_threads-2``, so ``delegate.num_threads=1,2`` gives two directories that
    say which is which; nothing for a key the directory already names, a value ``named`` already
    holds (``model.path``'s stem, when it is the model's name) or a command that sweeps nothing. A
    path is its file's stem; a character a folder name should not hold becomes ``-``."""
    from evalharness.core.override_grammar import override_parts

    swept = [k for k in os.environ.get(SWEPT_ENV, "").split(",") if k and k not in UNTAGGED_KEYS]
    if not swept:
        return ""
    values = {}
    for text in overrides:
        parts = override_parts(str(text))
        if parts.key:
            values[parts.key] = parts.value
    tags = []
    for key in (k for k in swept if k in values):
        value = values[key]
        value = model_stem(value) if "/" in value else value
        if value == str(named):
            continue
        tags.append(f"_{key.rsplit('.', 1)[-1]}-{re.sub(r'[^A-Za-z0-9._+-]', '-', value)[:32]}")
    return "".join(tags)


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


# Where a preset's file comes from when its folder is not set up: the page that says, per file.
EXAMPLE_SOURCES = 'docs/getting-started.md, "Where the examples find models and data"'


def _empty_folder(folder: str) -> str | None:
    """'missing' or 'empty' for a folder that holds nothing here; None for a folder with contents
    or anything else there (a file, an unreadable folder: left to the check or reader that names it)."""
    if not os.path.lexists(folder):  # missing, unless under a file (check_path_variables names that)
        parent = next(p for p in Path(folder).parents if os.path.lexists(p))
        return "missing" if parent.is_dir() else None
    try:
        with os.scandir(folder) as entries:
            return None if any(True for _ in entries) else "empty"
    except OSError:
        return None


def check_example_folders(
    paths: Mapping[str, Any], model: Mapping[str, Any], dataset: Mapping[str, Any]
) -> None:
    """A preset's model or dataset file under ``paths.models_dir`` / ``paths.data_dir`` while that
    folder is missing or empty (a fresh clone, a new directory): one line naming the file, the
    folder and where such files come from, instead of a bare 'not found' that leaves the reader to
    guess the project's test layout. A folder with contents is the user's own: a file missing there
    is left to its reader's message. ``paths``/``model``/``dataset``: the resolved groups."""
    from evalharness.core.errors import ConfigError

    models_dir, data_dir = str(paths.get("models_dir") or ""), str(paths.get("data_dir") or "")
    files = [("model.path", model.get("path"), models_dir)]
    files += [(f"dataset.{k}", dataset.get(k), data_dir) for k in ("root", "ground_truth", "annotations")]
    for key, value, folder in files:
        if not isinstance(value, str) or not folder or os.path.lexists(os.path.expanduser(value)):
            continue
        top = os.path.abspath(os.path.expanduser(folder))
        if os.path.commonpath([top, os.path.abspath(os.path.expanduser(value))]) != top:
            continue  # not under the presets' folder: its reader names it
        state = _empty_folder(top)
        if state is None:
            continue
        group = "models_dir" if key.startswith("model.") else "data_dir"
        source = (
            "the bundled model needs none: python -m evalharness"
            if group == "models_dir"
            else f"the bundled samples need none; {_prepare_script(dataset)} checks a download "
            "(datasets/README.md)"
        )
        raise ConfigError(
            f"{key}={value} not found, and paths.{group} ({folder}) is {state} here: presets find your own "
            f"copies there, and {EXAMPLE_SOURCES} says where each file comes from ({source}); or set "
            f"paths.{group}=<folder> or {PATH_VARIABLES[group]}"
        )


def _prepare_script(dataset: Mapping[str, Any]) -> str:
    """The datasets/ script that checks a download of this dataset's kind: detection data is an
    annotations json (COCO's layout), classification data an image folder with ground truth."""
    return "datasets/prepare_coco.py" if dataset.get("annotations") else "datasets/prepare_imagenet.py"


def inside_root(root: str | os.PathLike[str] | None, relative: object) -> str | None:
    """``relative`` (a sample id read from a run directory or a bundle: data) as a path under ``root``,
    or None when it is no such path: absolute, climbing out with ``..``, empty, holding a NUL. The
    one way an id becomes a file name: a record's id names the sample it was made from, and a run
    directory sent by someone else must not make a report read (or embed) a file outside the dataset.
    Checked on the normalised path, so ``sub/../a.png`` is ``a.png``; a link the dataset itself holds
    is the dataset's (the run read it too)."""
    text = str(relative) if isinstance(relative, str | int) else ""
    if not root or not text or "\x00" in text or os.path.isabs(text):
        return None
    base = os.path.normpath(os.path.abspath(os.fspath(root)))
    path = os.path.normpath(os.path.join(base, text))
    return path if path.startswith(base.rstrip(os.sep) + os.sep) else None
