"""A run's input rebuilt as it fed it (data/rebuilt_input.py), on one tiny synthetic image: a
letterboxing detector's input is the letterbox, never the classifier's crop; a classifier's is its
crop; whichever is made must reproduce the recorded hash or is refused; the one way explain and
report diff rebuild inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from evalharness.core.tensors import TensorInfo
from evalharness.data.decode import decode_rgb
from evalharness.data.detection_input import detection_input
from evalharness.data.preprocess import InputSpec, PreprocessSpec, preprocess_file, preprocessing_provenance
from evalharness.data.rebuilt_input import ImageAbsent, InputNotRebuilt, rebuilt_input, run_recipe
from evalharness.data.run_images import FolderImages
from evalharness.loop.input_identity import InputIdentity

LETTERBOX = PreprocessSpec(
    crop="none", resize="pil_bilinear", mean=(0.0,) * 3, std=(255.0,) * 3, letterbox=True
)
CROP = PreprocessSpec(crop="central_fraction", crop_fraction=0.5)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """One 40x24 image (wider than tall: a letterbox pads it, a crop cuts it)."""
    pixels = np.random.default_rng(0).integers(0, 256, (24, 40, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "a.png")
    return tmp_path


def _run(spec: PreprocessSpec, dtype: str = "float32", layout: str = "nhwc"):
    """(recipe, fed): a run's recorded recipe and the tensor it fed for a.png, made as it made it."""
    inp = InputSpec(16, 16, 3, dtype, scale=1 / 255 if dtype != "float32" else 0.0, layout=layout)
    shape = [1, 3, 16, 16] if layout == "nchw" else [1, 16, 16, 3]
    model_input = {
        "name": "x",
        "index": 0,
        "shape": shape,
        "dtype": dtype,
        "scale": inp.scale,
        "zero_point": 0,
    }
    return run_recipe(preprocessing_provenance(spec, inp), [model_input]), inp


def _record(root: Path, spec: PreprocessSpec, inp: InputSpec, recipe) -> tuple[np.ndarray, dict]:
    path = str(root / "a.png")
    fed = detection_input(path, spec, inp)[0] if spec.letterbox else preprocess_file(path, spec, inp)
    info: TensorInfo = recipe.info
    return fed, {"id": "a.png", **InputIdentity([info], inp.layout).of([fed])}


@pytest.mark.parametrize("dtype, layout", [("float32", "nhwc"), ("uint8", "nchw")])
def test_a_letterboxed_input_is_rebuilt_as_the_detector_fed_it(root, dtype, layout):
    recipe, inp = _run(LETTERBOX, dtype, layout)
    fed, record = _record(root, LETTERBOX, inp, recipe)
    rebuilt = rebuilt_input(FolderImages(str(root)), "a.png", recipe, record)
    assert rebuilt.verified and np.array_equal(rebuilt.tensor, fed)
    crop = preprocess_file(str(root / "a.png"), LETTERBOX, inp)  # what explain used to feed
    assert not np.array_equal(crop, fed)
    assert np.allclose(recipe.real(rebuilt.tensor)[0, 0, 0], 114 / 255)  # the pad's corner


def test_a_classifier_input_is_its_crop(root):
    recipe, inp = _run(CROP)
    fed, record = _record(root, CROP, inp, recipe)
    rebuilt = rebuilt_input(FolderImages(str(root)), "a.png", recipe, record)
    assert rebuilt.verified and np.array_equal(rebuilt.tensor, fed)
    assert not np.array_equal(fed, detection_input(decode_rgb(str(root / "a.png")), CROP, inp)[0])


def test_an_input_that_no_longer_matches_its_hash_is_refused(root):
    recipe, inp = _run(LETTERBOX)
    _, record = _record(root, LETTERBOX, inp, recipe)
    Image.fromarray(np.zeros((24, 40, 3), np.uint8)).save(root / "a.png")  # the image changed since
    with pytest.raises(InputNotRebuilt, match="a.png does not match its recorded hash .*: not used"):
        rebuilt_input(FolderImages(str(root)), "a.png", recipe, record)
    exact_only = {"id": "a.png", "input_sha256": "0" * 64}  # a stand-in model's record: the exact hash
    with pytest.raises(InputNotRebuilt):
        rebuilt_input(FolderImages(str(root)), "a.png", recipe, exact_only)


def test_a_record_without_hashes_is_rebuilt_by_its_recipe_unverified(root):
    recipe, inp = _run(LETTERBOX)
    fed, _ = _record(root, LETTERBOX, inp, recipe)
    rebuilt = rebuilt_input(FolderImages(str(root)), "a.png", recipe, {"id": "a.png"})
    assert not rebuilt.verified and np.array_equal(rebuilt.tensor, fed)


def test_an_absent_image_is_said(root):
    recipe, _ = _run(LETTERBOX)
    with pytest.raises(ImageAbsent, match="not found"):
        rebuilt_input(FolderImages(str(root)), "b.png", recipe, None)
    with pytest.raises(ImageAbsent, match="names no file under"):
        rebuilt_input(FolderImages(str(root)), "../a.png", recipe, None)


@pytest.mark.parametrize("spec", [LETTERBOX, CROP], ids=["letterbox", "crop"])
def test_calibration_feeds_what_the_run_feeds(root, spec):
    """Int8 calibration's tensors (transforms/calibration.py) are the run's own recipe: a letterboxing
    detector is calibrated on letterboxes, a classifier on its crops."""
    from evalharness.data.rebuilt_input import recipe_input

    inp = InputSpec(16, 16, 3, "float32")
    path = str(root / "a.png")
    fed = detection_input(path, spec, inp)[0] if spec.letterbox else preprocess_file(path, spec, inp)
    np.testing.assert_array_equal(recipe_input((root / "a.png").read_bytes(), "a.png", spec, inp), fed)
