"""OpenCV, for the few steps that need its exact arithmetic (a seg model's mask sampling,
``model.preprocess.resize=opencv_bilinear``): an extra, so its absence is one ``error:`` line
naming the extra, said before the first image, never an import error mid-run."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from evalharness.core.errors import ConfigError

INSTALL = "pip install 'evalharness[masks]'"


def require_opencv(what: str) -> ModuleType:
    """The ``cv2`` module; :class:`ConfigError` naming ``what`` needs it and the extra to install."""
    if importlib.util.find_spec("cv2") is None:
        raise ConfigError(f"{what} needs OpenCV, which is not installed: {INSTALL}")
    return importlib.import_module("cv2")
