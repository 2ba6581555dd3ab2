"""The fast CRC-32 is zlib's CRC-32: caches and output checks written before it stay valid."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from evalharness.core.checksum import crc32_array, crc32_bytes

RNG = np.random.default_rng(22)


@pytest.mark.parametrize("size", [0, 1, 3, 15, 16, 17, 63, 64, 65, 255, 1001, 4096, 150_528, 1_000_003])
@pytest.mark.parametrize("offset", [0, 1, 7])
def test_bytes_equal_zlib_at_every_size_and_alignment(size, offset):
    buf = RNG.integers(0, 256, size + offset, dtype=np.uint8)[offset:]  # unaligned starts too
    assert crc32_bytes(buf) == zlib.crc32(buf)
    assert crc32_bytes(buf.tobytes(), 0xDEADBEEF) == zlib.crc32(buf.tobytes(), 0xDEADBEEF)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.float16, np.float32, np.int64])
def test_arrays_of_any_dtype_and_layout_equal_zlib_of_their_c_order_bytes(dtype):
    arr = (RNG.standard_normal((7, 224, 5, 3)) * 50).astype(dtype)
    for view in (arr, arr[:, ::3], arr.transpose(0, 2, 1, 3), arr[3, 100, 2, 1]):
        assert crc32_array(view) == zlib.crc32(np.ascontiguousarray(view).tobytes())


def test_a_single_flipped_bit_changes_the_checksum():
    arr = RNG.integers(0, 256, (224, 224, 3), dtype=np.uint8)
    before = crc32_array(arr)
    arr[111, 57, 2] ^= 0x10
    assert crc32_array(arr) != before
