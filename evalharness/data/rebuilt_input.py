"""A finished run's input for one of its images, rebuilt exactly as the run fed it: the one way
every part that feeds or compares a run's inputs again (``explain``'s traces, ``report diff``'s
values of the first differing input) makes them.

Why one way: a detector's input is the whole image stretched or letterboxed
(:func:`~evalharness.data.detection_input.detection_input`), a classifier's a crop
(:func:`~evalharness.data.preprocess.preprocess_bytes`); remaking a letterboxed YOLO input with the
classifier's recipe gives another tensor, and every number computed on it would be silently wrong.
So the image comes through the run's own lookup (:func:`~evalharness.data.run_images.recorded_images`),
the recipe from the run's recorded ``provenance.preprocessing`` (a letterbox is a detector's; a crop
of ``none`` is a stretch either way), and the tensor made is checked against the hash the run
recorded for that image (``input_float_sha256``, else ``input_sha256``, by the record's own method:
``core/input_hash.py``). The recipe that reproduces the hash is what the run fed; when none does,
:class:`InputNotRebuilt` says so in one line and the tensor is never handed on. A record with no
hash (a run made before hashes existed) is rebuilt by the recorded recipe and marked unverified.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from evalharness.core.errors import DataError
from evalharness.core.input_hash import method_of, real_digest, tensors_digest
from evalharness.core.tensors import TensorInfo, real_nhwc
from evalharness.data.decode import decode_rgb_bytes
from evalharness.data.detection_input import detection_input
from evalharness.data.fed_input import recorded_spec
from evalharness.data.preprocess import InputSpec, PreprocessSpec, preprocess_bytes
from evalharness.data.run_images import RunImages

FLOAT, EXACT = "input_float_sha256", "input_sha256"  # a prediction record's input hashes


class InputNotRebuilt(DataError):
    """A run's input for an image could not be made again as the run fed it (one line: why)."""


class ImageAbsent(InputNotRebuilt):
    """The run's dataset holds no image for the id (moved root, an id outside it, a member gone)."""


@dataclass(frozen=True)
class RunRecipe:
    """How a run made its input from an image: its recorded recipe, the input it filled and, where
    the run recorded its model's inputs, the input tensor (for the real values and their hash)."""

    spec: PreprocessSpec
    inp: InputSpec
    info: TensorInfo | None

    def makers(self, data: bytes, where: str) -> list[Callable[[], np.ndarray]]:
        """The recipes that may have made the input, the recorded one first: the detector's whole
        image (stretched or letterboxed) where the recipe letterboxes or crops nothing, else the
        classifier's crop. The other is tried only to match a recorded hash."""
        crop = partial(preprocess_bytes, data, where, self.spec, self.inp)
        whole = partial(_whole_image, data, where, self.spec, self.inp)
        return [whole, crop] if self.spec.letterbox or self.spec.crop == "none" else [crop, whole]

    def real(self, tensor: np.ndarray) -> np.ndarray:
        """The real values ``tensor`` stands for, float32 NHWC (as it is without a recorded input)."""
        return tensor if self.info is None else real_nhwc(tensor, self.info, self.inp.layout)

    def digests(self, tensor: np.ndarray, record: Mapping[str, Any]) -> dict[str, str]:
        """``tensor``'s hashes as the record's fields, by the record's method."""
        method = method_of(record)
        if self.info is not None and record.get(FLOAT):
            return {FLOAT: real_digest([tensor], [self.info], self.inp.layout, method)}
        return {EXACT: tensors_digest([tensor], method)}


def _whole_image(data: bytes, where: str, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    return detection_input(decode_rgb_bytes(data, where), spec, inp)[0]


def recipe_input(data: bytes, where: str, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    """The input ``spec`` makes of an image's bytes, as a run with that recipe feeds it: a detector's
    whole image (letterboxed or stretched) or a classifier's crop. Int8 calibration feeds the float
    model this, so a letterboxed YOLO export is calibrated on letterboxes, not on crops."""
    return RunRecipe(spec, inp, None).makers(data, where)[0]()


def run_recipe(preprocessing: Mapping[str, Any], model_inputs: Sequence[Mapping[str, Any]]) -> RunRecipe:
    """A run's :class:`RunRecipe` from its ``provenance.preprocessing`` and ``provenance.model.inputs``
    (a :class:`DataError` when it recorded no image recipe)."""
    recorded = recorded_spec(preprocessing)
    if recorded is None:
        raise DataError("no image preprocessing recorded (provenance.preprocessing.input)")
    try:
        infos = [TensorInfo(**{**t, "shape": tuple(t["shape"])}) for t in model_inputs]
    except (KeyError, TypeError, ValueError):  # inputs not recorded as a model's: the exact hash alone
        infos = []
    return RunRecipe(*recorded, infos[0] if len(infos) == 1 else None)


@dataclass(frozen=True)
class RebuiltInput:
    """The tensor the run fed for an image (``verified``: its hash equals the record's)."""

    tensor: np.ndarray
    verified: bool


def rebuilt_input(
    images: RunImages, sample_id: str, recipe: RunRecipe, record: Mapping[str, Any] | None
) -> RebuiltInput:
    """The input the run fed for ``sample_id`` (its prediction ``record`` holds the hashes), made
    again from its image; :class:`InputNotRebuilt` when no recipe reproduces the recorded hash."""
    why = images.absent(sample_id)
    if why is not None:
        raise ImageAbsent(why)
    image = images.image(sample_id)
    data = image.read()  # a folder's file refused as a run refuses it (special files included)
    makers = recipe.makers(data, image.where)
    wanted = {k: str(record[k]) for k in (FLOAT, EXACT) if record and record.get(k)}
    if not wanted:
        return RebuiltInput(makers[0](), verified=False)
    assert record is not None
    for make in makers:
        tensor = make()
        if recipe.digests(tensor, record).items() <= wanted.items():
            return RebuiltInput(tensor, verified=True)
    raise InputNotRebuilt(
        f"the input rebuilt for {sample_id} does not match its recorded hash (the image or the "
        "recorded preprocessing changed since the run): not used"
    )
