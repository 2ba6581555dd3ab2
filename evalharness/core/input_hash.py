"""How a prediction record's input hashes are made, and which records can be compared by them.

Every record carries two hashes of what its model was fed (``loop/input_identity.py`` says what each
one proves). What a hash proves there is *equality against accident*: the same pixels through the
same (or an equivalent) preprocessing give the same hash; another crop, resize, normalisation,
layout, dtype or image gives another. It proves nothing against whoever writes the file: a record
is a line anyone can edit, hash included. So cryptographic strength over every byte bought nothing
it could prove, at sha256's 0.35 ms per float32 224x224x3 tensor (4 % of a MobileNet v2 quant
sample's CPU here; docs/benchmarks.md, *Input identity*).

The method, :data:`METHOD` (``crc32-8k+sha256``): the tensor's bytes in 8 KiB blocks, a CRC-32 of
each block (ISA-L's carry-less-multiply kernel, the polynomial of ``zlib.crc32``: tens of GB/s), and
one sha256 over the tensor's dtype and shape and its list of block CRCs. What that guarantees:

- a difference that leaves some block with 1 to 3 differing bits, or confines a block's difference
  to a burst of at most 32 bits, is always detected: CRC-32 (IEEE 802.3) has Hamming distance 4 up
  to 91,607 data bits (its first 3-bit codeword is 1 + x^41678 + x^91639; a block is 65,536 bits),
  and any degree-32 CRC detects every burst of <= 32 bits. A 1-ulp change, a flipped bit, one
  changed value;
- any other difference goes unseen only if every block it touches has a CRC collision: 2^-32 for a
  difference inside one block, 2^-32k across k blocks (another image or another resize touches them
  all), so two different images of one run (content pairing sorts by the hash) do not collide
  either. The sha256 over the block CRCs, dtype and shape adds no collision that matters.

Records made before carry no :data:`FIELD`; their hashes are :data:`LEGACY`, the sha256 of the bytes
themselves, still computed here so ``report diff`` can rebuild an old run's input and check it. Two
runs hashed by different methods are never compared hash to hash (:func:`methods_differ`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from evalharness.core.checksum import crc32_bytes
from evalharness.core.tensors import TensorInfo, nhwc, real_nhwc, tensors_sha256

FIELD = "input_hash"  # a record's method of its input hashes; absent: LEGACY
METHOD = "crc32-8k+sha256"
LEGACY = "sha256"  # the sha256 of the bytes: records made before FIELD
BLOCK = 8192  # bytes per CRC-32: 65,536 bits, inside CRC-32's Hamming distance 4 (91,607 bits)
_WINDOW = 32 * BLOCK // 4  # float32 values dequantised at a time (256 KiB): whole blocks, in cache


def method_of(record: Mapping[str, Any]) -> str:
    """How ``record``'s input hashes were computed."""
    return str(record.get(FIELD) or LEGACY)


def _bytes(array: np.ndarray) -> memoryview:
    """A C-contiguous array's bytes, uncopied."""
    return array.reshape(-1).view(np.uint8).data


class _BlockDigest:
    """sha256 over each tensor's dtype and shape and the CRC-32 of each BLOCK of its bytes."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()

    def add(self, dtype: np.dtype, shape: Sequence[int], pieces: Iterable[memoryview]) -> None:
        """One tensor, its bytes in ``pieces`` (each a whole number of blocks but the last)."""
        crcs: list[int] = []
        for piece in pieces:
            crcs += [crc32_bytes(piece[i : i + BLOCK]) for i in range(0, len(piece), BLOCK)]
        self._sha.update(f"{dtype.str}{list(shape)};".encode())
        self._sha.update(np.asarray(crcs, dtype="<u4").tobytes())

    def hexdigest(self) -> str:
        return self._sha.hexdigest()


def tensors_digest(tensors: Sequence[np.ndarray], method: str = METHOD) -> str:
    """The hash of ``tensors`` (each one's dtype, shape and C-order bytes, in order) by ``method``:
    a record's ``input_sha256``."""
    if method == LEGACY:
        return tensors_sha256(list(tensors))
    digest = _digest(method)
    for t in tensors:
        a = np.ascontiguousarray(t)
        digest.add(a.dtype, a.shape, [_bytes(a)])
    return digest.hexdigest()


def real_is_exact(tensor: np.ndarray, info: TensorInfo, layout: str | None) -> bool:
    """Whether ``tensor`` is its own real values in NHWC (float32, not quantised, not NCHW): then its
    two hashes are one digest."""
    nchw = layout == "nchw" and tensor.ndim == 4
    return tensor.dtype == np.float32 and not info.quantized and not nchw


def real_digest(
    tensors: Sequence[np.ndarray], infos: Sequence[TensorInfo], layout: str | None, method: str = METHOD
) -> str:
    """The hash of the real values ``tensors`` stand for, as float32 in NHWC (an integer input
    dequantised with its own scale and zero point, an NCHW image input transposed back): a record's
    ``input_float_sha256``. Equal to :func:`tensors_digest` of those values as a float32 tensor."""
    if method == LEGACY:
        return tensors_sha256([real_nhwc(t, i, layout) for t, i in zip(tensors, infos, strict=True)])
    digest = _digest(method)
    for t, info in zip(tensors, infos, strict=True):
        if info.quantized:  # dequantised a window at a time: no float32 copy of the whole tensor
            q = np.asarray(t)
            q = nhwc(q) if layout == "nchw" and q.ndim == 4 else np.ascontiguousarray(q)
            digest.add(np.dtype(np.float32), q.shape, _dequantised(q.reshape(-1), info))
        else:
            real = np.ascontiguousarray(real_nhwc(t, info, layout))
            digest.add(real.dtype, real.shape, [_bytes(real)])
    return digest.hexdigest()


def _dequantised(q: np.ndarray, info: TensorInfo) -> Iterator[memoryview]:
    """``info.dequantize(q)`` as float32 bytes, :data:`_WINDOW` values at a time in one buffer (each
    window is hashed before the next overwrites it); the same arithmetic, so the same bits."""
    window = np.empty(min(q.size, _WINDOW), np.float32)
    zero, scale = np.float32(info.zero_point), np.float32(info.scale)
    for start in range(0, q.size, _WINDOW):
        part = q[start : start + _WINDOW]
        out = window[: part.size]
        out[...] = part  # as np.asarray(q, np.float32), then (q - zp) * scale in float32
        out -= zero
        out *= scale
        yield _bytes(out)


def _digest(method: str) -> _BlockDigest:
    if method != METHOD:
        raise ValueError(f"input hash method {method!r}: this evalharness knows {METHOD!r} and {LEGACY!r}")
    return _BlockDigest()


def methods_differ(*runs: tuple[str, Iterable[Mapping[str, Any]]]) -> str | None:
    """Why the records of the runs given as (run label, its records) cannot be compared by their
    input hashes (made by different methods), or None when they can."""
    found = [(label, sorted({method_of(r) for r in records})) for label, records in runs]
    if len({tuple(m) for _, m in found}) == 1 and all(len(m) <= 1 for _, m in found):
        return None
    said = ", ".join(f"run {label}'s {' and '.join(m)}" for label, m in found)
    return f"the input hashes were made by different methods ({said})"
