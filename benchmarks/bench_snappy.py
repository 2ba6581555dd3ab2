"""Parquet snappy page decoding, MB/s of decoded bytes: the pure-Python stream decoder against the
path ``dataset.format=parquet`` takes (cramjam whole where the page compresses, else the stream).

    python benchmarks/bench_snappy.py [--mb 8] [--repeats 3]

Two pages: a compressible one (repeating integer columns and paths, about 6:1, where the Python
loop spends its time on copies) and a JPEG-like one (random bytes: literals, where it copies whole
blocks). Needs cramjam (the ``parquet`` extra) to build the pages.
"""

from __future__ import annotations

import argparse
import io
import os
import time

import cramjam

from evalharness.data.parquet import compression, snappy


def pages(mb: int) -> dict[str, bytes]:
    size = mb << 20
    rows = b"".join(b"train/n%08d/img_%06d.JPEG,%d;" % (i % 1000, i, i % 1000) for i in range(size // 30))
    return {"compressible": rows[:size], "jpeg-like": os.urandom(size)}


def rate(decode: object, block: bytes, size: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = decode(io.BytesIO(block).read, len(block), size)  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
        assert len(out) == size
    return size / best / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for name, page in pages(args.mb).items():
        block = bytes(cramjam.snappy.compress_raw(page))
        python = rate(lambda r, _n, s: snappy.decode(r, s), block, len(page), args.repeats)
        chosen = rate(
            lambda r, n, s: compression.decompress_stream(1, r, n, s, "bench"),
            block,
            len(page),
            args.repeats,
        )
        ratio = len(page) / len(block)
        print(f"{name:13s} {ratio:5.1f}:1  python {python:8.1f} MB/s   reader's path {chosen:8.1f} MB/s")


if __name__ == "__main__":
    main()
