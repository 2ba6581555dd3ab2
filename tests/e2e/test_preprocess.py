"""Preprocessing: bit-exact TFLite resize, crops, dtype conversion, image mode conversion."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from conftest import ASSETS, CLASSIFIERS, EXPECTED, MODELS, run_inprocess
from PIL import Image

from evalharness.core.errors import DataError, ModelMismatchError
from evalharness.data.preprocess import (
    InputSpec,
    PreprocessSpec,
    central_crop,
    crop_and_resize,
    decode_rgb,
    image_input_spec,
    resize_bilinear_tflite,
    short_side_padded_crop,
    to_input_tensor,
)


def _scalar_reference_resize(img: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Independent oracle: the kernel's loops written out with float32 scalars, one op at a time."""
    f = np.float32
    in_h, in_w, ch = img.shape
    out = np.zeros((out_h, out_w, ch), np.float32)
    sy, sx = f(in_h) / f(out_h), f(in_w) / f(out_w)
    for y in range(out_h):
        iy = f(y) * sy
        y0 = max(int(np.floor(iy)), 0)
        y1 = min(int(np.ceil(iy)), in_h - 1)
        dy = f(iy - f(y0))
        for x in range(out_w):
            ix = f(x) * sx
            x0 = max(int(np.floor(ix)), 0)
            x1 = min(int(np.ceil(ix)), in_w - 1)
            dx = f(ix - f(x0))
            for c in range(ch):
                p = img.astype(np.float32)
                v = f(f(p[y0, x0, c] * f(f(1) - dy)) * f(f(1) - dx))
                v = f(v + f(f(p[y1, x0, c] * dy) * f(f(1) - dx)))
                v = f(v + f(f(p[y0, x1, c] * f(f(1) - dy)) * dx))
                v = f(v + f(f(p[y1, x1, c] * dy) * dx))
                out[y, x, c] = v
    return out


@pytest.mark.parametrize(
    ("shape", "out"), [((13, 17, 3), (7, 5)), ((9, 9, 3), (16, 21)), ((31, 7, 3), (12, 12))]
)
def test_resize_matches_scalar_kernel_bit_for_bit(shape, out):
    img = np.random.default_rng(sum(shape)).integers(0, 256, shape, dtype=np.uint8)
    fast = resize_bilinear_tflite(img, *out)
    ref = _scalar_reference_resize(img, *out)
    assert fast.dtype == np.float32
    assert np.array_equal(fast.view(np.uint32), ref.view(np.uint32))


def test_resize_of_strided_views_and_float_pixels_is_bit_exact():
    """Crops are views into the decoded image, and letterboxed inputs may be float: same bits."""
    big = np.random.default_rng(7).integers(0, 256, (40, 50, 3), dtype=np.uint8)
    view = big[3:30:2, 5:45]  # non-contiguous rows
    for img in (view, view.astype(np.float32)):
        fast = resize_bilinear_tflite(img, 11, 19)
        assert np.array_equal(fast.view(np.uint32), _scalar_reference_resize(img, 11, 19).view(np.uint32))


def test_central_crop_uses_c_rounding():
    img = np.zeros((227, 227, 3), np.uint8)
    img[14, 14] = 255
    crop = central_crop(img, 0.875)
    assert crop.shape == (199, 199, 3) and crop[0, 0, 0] == 255  # offset (14, 14), as the recipe says
    assert central_crop(np.zeros((10, 5, 3), np.uint8), 0.5).shape[:2] == (5, 3)  # 2.5 rounds up, not to even


def test_short_side_padded_crop():
    img = np.arange(300 * 400, dtype=np.uint32).reshape(300, 400, 1)
    crop = short_side_padded_crop(img, 224, 32)
    c = 263  # 224 / 256 * 300 = 262.5 rounds half away from zero, as C does
    assert crop.shape[:2] == (c, c)
    assert crop[0, 0, 0] == img[(300 - c + 1) // 2, (400 - c + 1) // 2, 0]


def test_resize_shorter_then_crop_shape():
    spec = PreprocessSpec(crop="resize_shorter_then_crop", resize="pil_bilinear")
    out = crop_and_resize(np.zeros((300, 450, 3), np.uint8), spec, InputSpec(224, 224, 3, "float32"))
    assert out.shape == (224, 224, 3) and out.dtype == np.float32


def test_input_dtype_conversions():
    px = np.array([[[0.0, 127.5, 254.99]]], np.float32)
    spec = PreprocessSpec()
    assert to_input_tensor(px, spec, InputSpec(1, 1, 3, "uint8")).tolist() == [[[[0, 127, 254]]]]
    assert to_input_tensor(px, spec, InputSpec(1, 1, 3, "int8")).tolist() == [[[[-128, 0, 126]]]]
    f = to_input_tensor(px, spec, InputSpec(1, 1, 3, "float32"))
    assert f.dtype == np.float32 and f[0, 0, 0, 0] == -1.0 and f[0, 0, 0, 1] == 0.0
    q = to_input_tensor(
        px, PreprocessSpec(integer_input="quantize"), InputSpec(1, 1, 3, "int8", 1 / 127.5, 0)
    )
    assert q.tolist() == [[[[-127, 0, 127]]]]  # (x - 127.5) / 127.5 / scale, rounded, clipped
    bgr = to_input_tensor(px, PreprocessSpec(channel_order="bgr"), InputSpec(1, 1, 3, "uint8"))
    assert bgr.tolist() == [[[[254, 127, 0]]]]


def test_non_image_model_input_is_rejected():
    with pytest.raises(ModelMismatchError, match=r"not one NHWC RGB image"):
        image_input_spec((1, 128), "float32", (0.0, 0), "m.tflite")
    with pytest.raises(ModelMismatchError, match="dtype int32"):
        image_input_spec((1, 8, 8, 3), "int32", (0.0, 0), "m.tflite")


def test_int16_input_needs_the_models_own_quantization():
    with pytest.raises(ModelMismatchError, match="integer_input=quantize"):  # before the loop
        image_input_spec((1, 1, 1, 3), "int16", (0.5, 0), "m.tflite", PreprocessSpec())
    quantize = PreprocessSpec(integer_input="quantize")
    inp = image_input_spec((1, 1, 1, 3), "int16", (0.5, 0), "m.tflite", quantize)
    px = np.array([[[0.0, 127.5, 255.0]]], np.float32)
    with pytest.raises(ModelMismatchError, match="integer_input=quantize"):
        to_input_tensor(px, PreprocessSpec(), inp)  # the tool's uint8/int8 rule has no int16 form
    q = to_input_tensor(px, PreprocessSpec(integer_input="quantize"), inp)
    assert q.dtype == np.int16 and q.tolist() == [[[[-2, 0, 2]]]]  # (x - 127.5) / 127.5 / 0.5


@pytest.mark.parametrize("mode", ["L", "CMYK", "RGBA", "P", "LA"])
def test_convertible_modes_decode_to_rgb(tmp_path, mode):
    rgb = np.random.default_rng(1).integers(0, 256, (8, 6, 3), dtype=np.uint8)
    img = Image.fromarray(rgb).convert(mode)
    path = tmp_path / f"x.{'jpg' if mode in ('L', 'CMYK') else 'png'}"
    img.save(path, quality=100) if mode in ("L", "CMYK") else img.save(path)
    out = decode_rgb(str(path))
    assert out.shape == (8, 6, 3) and out.dtype == np.uint8
    if mode in ("RGBA", "P", "LA"):  # lossless: the visible colour is kept exactly
        assert np.array_equal(out, np.asarray(Image.open(path).convert("RGB")))
    if mode == "L":
        assert np.array_equal(out[..., 0], out[..., 1])


def test_undecodable_file_is_a_data_error(tmp_path):
    bad = tmp_path / "bad.JPEG"
    bad.write_bytes(b"not an image")
    with pytest.raises(DataError, match="bad.JPEG: cannot decode image"):
        decode_rgb(str(bad))


@pytest.mark.parametrize("model", CLASSIFIERS)
def test_single_non_square_images_match_reference(tmp_path, model):
    """Six real photos (PNG/BMP/JPEG, non-square) through the whole run: top-5 as the reference."""
    expected = EXPECTED["single_images"][model]
    with open(tmp_path / "gt.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["filename", "label"])
        for name, ref in expected.items():
            w.writerow([name, ref["top1_label"]])
    overrides = [
        f"model={model}",
        f"paths.models_dir={MODELS}",
        f"dataset.root={ASSETS / 'images'}",
        f"dataset.ground_truth={tmp_path / 'gt.csv'}",
        "dataset.format=csv",
    ]
    doc = run_inprocess(overrides, tmp_path / "run")
    preds = [json.loads(line) for line in (tmp_path / "run/predictions.jsonl").read_text().splitlines()]
    assert {p["id"]: p["topk"][:5] for p in preds} == {n: r["top5_indices"] for n, r in expected.items()}
    assert {p["id"]: round(p["scores"][0], 6) for p in preds} == {
        n: r["top1_score"] for n, r in expected.items()
    }
    assert doc["metrics"]["top1"] == 1.0  # ground truth = the reference top-1 label
