"""Checksums: sha256 of files (content identity), and CRC-32 of arrays: the value ``zlib.crc32``
gives, computed by ISA-L's folding kernel.

Why not zlib: a cached run checks the CRC of every tensor it reads before that tensor is scored, and
zlib's table-driven CRC-32 was the largest piece of a warm loop's own time (figures: docs/benchmarks.md,
*Throughput*). ISA-L (the ``isal`` package) computes the same polynomial with carry-less multiplies,
much faster. The values are identical (tests compare them with zlib on many sizes and alignments),
so caches written with zlib stay valid.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
from isal.isal_zlib import crc32 as _crc32

_CHUNK = 1 << 20


def crc32_bytes(data: bytes | memoryview | np.ndarray, value: int = 0) -> int:
    """CRC-32 of a bytes-like object (a contiguous buffer), continuing from ``value``."""
    return _crc32(data, value)


def crc32_array(array: np.ndarray) -> int:
    """CRC-32 of an array's bytes in C order (any dtype, contiguous or not)."""
    return _crc32(np.ascontiguousarray(array).view(np.uint8).reshape(-1))


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_lines(lines: list[str]) -> str:
    """sha256 over text lines joined by newlines (UTF-8): the identity of an ordered list of names."""
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def optional_sha256(path: str | None) -> str | None:
    return sha256_file(path) if path and os.path.isfile(path) else None
