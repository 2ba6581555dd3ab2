"""The records' input hashes (loop/input_identity.py): the exact tensors fed, and their real values
in NHWC, so two layouts of the same pixels compare equal and any other change does not."""

from __future__ import annotations

import numpy as np

from evalharness.core.tensors import TensorInfo
from evalharness.loop.input_identity import InputIdentity

NHWC = np.random.default_rng(0).random((1, 4, 5, 3), dtype=np.float32)


def _identity(shape, dtype="float32", scale=0.0, zero_point=0, layout="nhwc"):
    return InputIdentity([TensorInfo("x", 0, shape, dtype, scale, zero_point)], layout)


def test_the_same_pixels_in_two_layouts_share_the_float_hash_only():
    nhwc = _identity((1, 4, 5, 3)).of([NHWC])
    nchw = _identity((1, 3, 4, 5), layout="nchw").of([np.ascontiguousarray(NHWC.transpose(0, 3, 1, 2))])
    assert nhwc["input_float_sha256"] == nchw["input_float_sha256"]
    assert nhwc["input_sha256"] != nchw["input_sha256"]


def test_one_changed_value_changes_both_hashes():
    changed = NHWC.copy()
    changed[0, 1, 2, 0] += 1e-6
    a, b = _identity((1, 4, 5, 3)).of([NHWC]), _identity((1, 4, 5, 3)).of([changed])
    assert a["input_sha256"] != b["input_sha256"] and a["input_float_sha256"] != b["input_float_sha256"]


def test_an_integer_input_is_compared_by_its_dequantised_values():
    q = np.array([[[[0, 128, 255]]]], np.uint8)
    int_side = _identity((1, 1, 1, 3), "uint8", scale=0.5, zero_point=128).of([q])
    float_side = _identity((1, 1, 1, 3)).of([np.array([[[[-64.0, 0.0, 63.5]]]], np.float32)])
    assert int_side["input_float_sha256"] == float_side["input_float_sha256"]
    assert int_side["input_sha256"] != float_side["input_sha256"]


def test_dtype_and_shape_are_part_of_the_exact_hash():
    zeros = np.zeros((1, 2, 2, 3), np.float32)
    a = _identity((1, 2, 2, 3)).of([zeros])["input_sha256"]
    b = _identity((1, 2, 2, 3), "float16").of([zeros.astype(np.float16)])["input_sha256"]
    c = _identity((1, 2, 6, 1)).of([zeros.reshape(1, 2, 6, 1)])["input_sha256"]
    assert len({a, b, c}) == 3
