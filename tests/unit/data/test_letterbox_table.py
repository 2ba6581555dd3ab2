"""A letterbox of a Pillow resize is looked up in a per-channel table (data/detection_input.py): the
tensor must be the float canvas + to_input_tensor's, bit for bit, for every input form."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PIL import Image

from evalharness.data.detection_input import _pixel_table, detection_geometry, detection_input
from evalharness.data.preprocess import InputSpec, PreprocessSpec, _resize, to_input_tensor

LETTERBOX = PreprocessSpec(
    crop="none", resize="pil_bilinear", mean=(0.0, 0.0, 0.0), std=(255.0, 255.0, 255.0),
    integer_input="quantize", letterbox=True,
)  # fmt: skip
INPUTS = [
    InputSpec(64, 64, 3, "int8", 1 / 255, -128),
    InputSpec(64, 48, 3, "uint8", 0.0173, 3),
    InputSpec(48, 64, 3, "float32"),
    InputSpec(64, 64, 3, "float16"),
    InputSpec(64, 64, 3, "int8", 1 / 255, -128, "nchw"),
]
SPECS = [
    LETTERBOX,
    dataclasses.replace(LETTERBOX, channel_order="bgr", mean=(10.0, 20.0, 30.0), std=(50.0, 60.0, 70.0)),
    dataclasses.replace(LETTERBOX, resize="pil_bicubic", pad_value=0.0),
    dataclasses.replace(LETTERBOX, integer_input="tool"),
]


def float_canvas(img: np.ndarray, spec: PreprocessSpec, inp: InputSpec) -> np.ndarray:
    """The letterbox as it is computed without the table: a float32 canvas, then to_input_tensor."""
    g = detection_geometry(img.shape[1], img.shape[0], spec, inp)
    pixels = np.full((inp.height, inp.width, 3), spec.pad_value, dtype=np.float32)
    pixels[g.pad_y : g.pad_y + g.new_h, g.pad_x : g.pad_x + g.new_w] = _resize(
        img, g.new_h, g.new_w, spec.resize
    )
    return to_input_tensor(pixels, spec, inp)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("inp", INPUTS, ids=lambda i: f"{i.dtype}-{i.layout}")
def test_the_table_gives_the_float_canvas_bits(tmp_path, spec, inp):
    rng = np.random.default_rng(7)
    for k, (h, w) in enumerate([(37, 101), (90, 31), (64, 64), (5, 200)]):
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        img[0, :4] = [[0, 0, 0], [255, 255, 255], [114, 114, 114], [1, 254, 128]]
        path = tmp_path / f"{k}.png"
        Image.fromarray(img).save(path)
        got, _ = detection_input(str(path), spec, inp)
        want = float_canvas(img, spec, inp)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_no_table_where_the_pixels_are_not_whole_values():
    inp = INPUTS[0]
    assert _pixel_table(dataclasses.replace(LETTERBOX, resize="tflite_bilinear"), inp) is None
    assert _pixel_table(dataclasses.replace(LETTERBOX, pad_value=114.5), inp) is None
    assert _pixel_table(LETTERBOX, inp) is not None
