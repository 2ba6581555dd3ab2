"""``model.preprocess.resize=opencv_bilinear``: OpenCV's bilinear (``cv2.resize``, INTER_LINEAR), the
resize of Ultralytics' letterbox and of expected.json's reference recipe for the YOLO seg / pose
exports, placed in the letterbox canvas as every resize is."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from evalharness.core.errors import ConfigError
from evalharness.data.detection_input import detection_input
from evalharness.data.preprocess import InputSpec, PreprocessSpec, spec_from_config


def test_opencv_bilinear_is_cv2_resize_inside_the_letterbox(tmp_path):
    import cv2

    image = np.random.default_rng(0).integers(0, 256, (30, 50, 3), dtype=np.uint8)
    Image.fromarray(image).save(tmp_path / "a.png")
    spec = PreprocessSpec(
        crop="none", resize="opencv_bilinear", mean=(0.0,) * 3, std=(1.0,) * 3, letterbox=True
    )
    tensor, g = detection_input(str(tmp_path / "a.png"), spec, InputSpec(16, 16, 3, "float32"))
    assert (g.new_w, g.new_h, g.pad_x, g.pad_y) == (16, 10, 0, 3)
    inside = tensor[0, g.pad_y : g.pad_y + g.new_h, g.pad_x : g.pad_x + g.new_w]
    np.testing.assert_array_equal(inside, cv2.resize(image, (16, 10), interpolation=cv2.INTER_LINEAR))
    assert (tensor[0, : g.pad_y] == 114).all() and (tensor[0, g.pad_y + g.new_h :] == 114).all()


def test_an_unknown_resize_is_refused_naming_opencv_bilinear():
    with pytest.raises(ConfigError, match="opencv_bilinear"):
        spec_from_config({"resize": "cv2"})
