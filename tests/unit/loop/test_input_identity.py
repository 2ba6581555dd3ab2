"""The records' input hashes (loop/input_identity.py): the exact tensors fed, and their real values
in NHWC, so two layouts of the same pixels compare equal and any other change does not."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from evalharness.core.input_hash import (
    BLOCK,
    FIELD,
    LEGACY,
    METHOD,
    methods_differ,
    real_digest,
    tensors_digest,
)
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


# --- the method (core/input_hash.py): one pass each, and what it must still tell apart --------------

IMAGE = np.random.default_rng(1).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)  # several windows
SCALE, ZERO = 0.0078125, 128


def _real(q: np.ndarray, zero_point: int = ZERO) -> np.ndarray:
    return ((q.astype(np.float32) - np.float32(zero_point)) * np.float32(SCALE)).astype(np.float32)


def test_every_record_names_its_method_and_the_same_inputs_give_the_same_identity():
    first = _identity(IMAGE.shape, "uint8", SCALE, ZERO).of([IMAGE])
    again = _identity(IMAGE.shape, "uint8", SCALE, ZERO).of([IMAGE.copy()])
    assert first == again and first[FIELD] == METHOD


@pytest.mark.parametrize("where", [0, 2047, 2048, 75_000, -1])  # block edges, a middle, the last value
def test_a_one_ulp_change_anywhere_changes_the_identity(where):
    real = _real(IMAGE)
    changed = real.copy().reshape(-1)
    changed[where] = np.nextafter(changed[where], np.float32(np.inf))
    a = _identity(real.shape).of([real])
    b = _identity(real.shape).of([changed.reshape(real.shape)])
    assert a["input_sha256"] != b["input_sha256"] and a["input_float_sha256"] != b["input_float_sha256"]


def test_an_int8_input_has_the_identity_of_its_dequantised_float_values():
    """uint8 (zero point 128) and int8 (zero point 0) of the same real values, NHWC and NCHW, and the
    float32 tensor of those values: one real-value identity; three exact ones."""
    real = _real(IMAGE)
    as_float = _identity(real.shape).of([real])
    as_uint8 = _identity(IMAGE.shape, "uint8", SCALE, ZERO).of([IMAGE])
    as_int8 = _identity(IMAGE.shape, "int8", SCALE, 0).of([(IMAGE.astype(np.int16) - 128).astype(np.int8)])
    nchw = np.ascontiguousarray(IMAGE.transpose(0, 3, 1, 2))
    as_nchw = _identity(nchw.shape, "uint8", SCALE, ZERO, layout="nchw").of([nchw])
    reals = {h["input_float_sha256"] for h in (as_float, as_uint8, as_int8, as_nchw)}
    assert reals == {as_float["input_sha256"]}  # a float32 NHWC input's two hashes are one digest
    assert len({h["input_sha256"] for h in (as_float, as_uint8, as_int8, as_nchw)}) == 4


def test_another_scale_or_zero_point_is_another_real_identity():
    base = _identity(IMAGE.shape, "uint8", SCALE, ZERO).of([IMAGE])["input_float_sha256"]
    assert base != _identity(IMAGE.shape, "uint8", SCALE * 2, ZERO).of([IMAGE])["input_float_sha256"]
    assert base != _identity(IMAGE.shape, "uint8", SCALE, ZERO - 1).of([IMAGE])["input_float_sha256"]


def test_the_legacy_method_is_the_sha256_of_the_bytes_old_records_hold():
    """Runs recorded before ``input_hash`` keep being rebuilt and checked (report diff's max abs diff)."""
    real = _real(IMAGE)
    old = hashlib.sha256(f"{real.dtype.str}{list(real.shape)};".encode() + real.tobytes()).hexdigest()
    assert tensors_digest([real], LEGACY) == old
    assert (
        real_digest([IMAGE], [TensorInfo("x", 0, IMAGE.shape, "uint8", SCALE, ZERO)], "nhwc", LEGACY) == old
    )
    assert tensors_digest([real]) != old  # the current method: never compared with it (methods_differ)


def test_records_of_two_methods_are_never_compared_hash_to_hash():
    old, new = [{"input_sha256": "x"}], [{"input_sha256": "y", FIELD: METHOD}]
    assert methods_differ(("A", old), ("B", old)) is None and methods_differ(("A", new), ("B", new)) is None
    said = methods_differ(("A", old), ("B", new))
    assert said is not None and f"run A's {LEGACY}, run B's {METHOD}" in said
    assert methods_differ(("A", old + new), ("B", old + new)) is not None  # a run of mixed records too


def test_a_block_is_short_enough_that_every_change_of_up_to_3_bits_is_caught():
    """No 3-bit codeword 1 + x^i + x^j of CRC-32's polynomial fits a block and its CRC (so none of
    x^a + x^b + x^c either): BLOCK stays inside the Hamming distance 4 the docs claim (~40 ms)."""
    poly, bits, first = 0x104C11DB7, BLOCK * 8 + 32, {}
    remainder = 1
    for k in range(bits):  # x^k mod the polynomial, k < the codeword length
        assert remainder ^ 1 not in first, (first.get(remainder ^ 1), k)
        first.setdefault(remainder, k)
        remainder <<= 1
        remainder ^= poly if remainder >> 32 else 0


def test_hashes_of_gives_the_identity_fields_or_none():
    """The scoring blocks' hashes of a sample: the identity's fields, {} without an identity."""
    from evalharness.loop.input_identity import hashes_of

    identity = _identity((1, 4, 5, 3), "uint8", 0.5, 3)
    image = np.full((1, 4, 5, 3), 7, np.uint8)
    assert hashes_of([image], identity) == identity.of([image]) and hashes_of([image], None) == {}


def test_hashed_ahead_the_very_arrays_are_handed_back_once():
    """A phase's preparing thread hashes its tensors (``ahead``); the loop gets those fields back for
    the very arrays, once; an equal but other array is not taken for them."""
    identity = _identity([1, 4, 5, 3])
    fed = NHWC.copy()
    identity.ahead("s0", [fed])
    assert identity.kept([fed.copy()], "s0") is None  # equal values, another array
    assert identity.kept([fed], "s0") == _identity([1, 4, 5, 3]).of([fed])
    assert identity.kept([fed], "s0") is None  # handed back once
