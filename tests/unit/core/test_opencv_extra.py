"""OpenCV is the ``masks`` extra: where it is missing, a seg model's decoder and the OpenCV resize
are one line naming the extra, said when they are set up (before the first image)."""

from __future__ import annotations

import importlib.util

import pytest

from evalharness.core import opencv
from evalharness.core.errors import ConfigError
from evalharness.data.preprocess import PreprocessSpec, validate_spec


@pytest.fixture
def no_opencv(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "cv2" else real(n, *a))


def test_the_opencv_resize_names_the_extra_when_it_is_missing(no_opencv):
    with pytest.raises(ConfigError) as exc:
        validate_spec(PreprocessSpec(resize="opencv_bilinear"))
    assert str(exc.value) == (
        "model.preprocess.resize=opencv_bilinear needs OpenCV, which is not installed: "
        "pip install 'evalharness[masks]'"
    )


def test_the_seg_decoder_names_the_extra_when_it_is_missing(no_opencv):
    from evalharness.core.tensors import TensorInfo
    from evalharness.decoders.yolo_seg import YoloSegDecoder

    outputs = [
        TensorInfo("rows", 0, (1, 116, 1344), "float32"),
        TensorInfo("protos", 1, (1, 64, 64, 32), "float32"),
    ]
    with pytest.raises(
        ConfigError, match=r"m.tflite: decoding its masks .*pip install 'evalharness\[masks\]'"
    ):
        YoloSegDecoder().bind(outputs, (256, 256), "m.tflite")


def test_with_opencv_installed_the_module_is_given():
    pytest.importorskip("cv2")
    assert opencv.require_opencv("x").__name__ == "cv2"


def test_the_opencv_resize_looks_for_opencv_once_not_at_every_image(monkeypatch):
    pytest.importorskip("cv2")
    import numpy as np

    from evalharness.data import preprocess

    asked = []
    monkeypatch.setattr(
        preprocess, "require_opencv", lambda what: asked.append(what) or opencv.require_opencv(what)
    )
    preprocess._opencv.cache_clear()
    spec, inp = PreprocessSpec(crop="none", resize="opencv_bilinear"), preprocess.InputSpec(8, 8, 3, "uint8")
    for size in (10, 12, 14):
        preprocess.crop_and_resize(np.zeros((size, size, 3), np.uint8), spec, inp)
    assert asked == ["model.preprocess.resize=opencv_bilinear"]
    preprocess._opencv.cache_clear()
