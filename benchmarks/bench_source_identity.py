"""What the tensor cache's source identity costs per image (data/tensor_cache.py), on the val50 JPEGs.

    python benchmarks/bench_source_identity.py [--dir ../shared/assets/imagenet/val50]

Printed, in microseconds per image (best of 20 passes): a stat of the file (what a warm read pays to
know its source is unchanged), a sha256 of its bytes (what a cold build, or a read after the stat
moved, pays), a CRC-32 of the bytes for scale, a decode + resize (what the cache saves), and a
warm ``TensorCache.get`` of a 224x224x3 uint8 tensor (stat + CRC-32 + copy) against the same read
when every stat differs (re-hashed).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from evalharness.core.checksum import crc32_bytes
from evalharness.data.tensor_cache import TensorCache


def per_image_us(fn, files, passes: int = 20) -> float:
    best = float("inf")
    for _ in range(passes):
        started = time.perf_counter()
        for i, path in enumerate(files):
            fn(i, path)
        best = min(best, time.perf_counter() - started)
    return best / len(files) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=str(Path(__file__).parents[1] / "../shared/assets/imagenet/val50"))
    files = sorted(str(p) for p in Path(parser.parse_args().dir).glob("*.JPEG"))
    mean_kb = sum(os.path.getsize(p) for p in files) / len(files) / 1024
    print(f"{len(files)} files, mean {mean_kb:.1f} KiB")
    sha = lambda i, p: hashlib.sha256(Path(p).read_bytes())  # noqa: E731
    crc = lambda i, p: crc32_bytes(Path(p).read_bytes())  # noqa: E731
    print(f"stat             {per_image_us(lambda i, p: os.stat(p), files):8.1f} us/img")
    print(f"sha256 of bytes  {per_image_us(sha, files):8.1f} us/img")
    print(f"crc32 of bytes   {per_image_us(crc, files):8.1f} us/img")

    def decode(i, path):
        with Image.open(path) as im:
            np.asarray(im.convert("RGB").resize((224, 224)))

    print(f"decode + resize  {per_image_us(decode, files, 3):8.1f} us/img")
    cache = TensorCache(tempfile.mkdtemp(), {"bench": 1}, len(files), (224, 224, 3), "uint8")
    for i, path in enumerate(files):
        cache.put(i, np.zeros((224, 224, 3), np.uint8), cache.source_identity(path))
    print(f"warm get         {per_image_us(cache.get, files):8.1f} us/img")

    def moved(i, path):
        cache.source_state[i] = 0  # the stat no longer matches: the read hashes the file again
        cache.get(i, path)

    print(f"get, stat moved  {per_image_us(moved, files):8.1f} us/img")


if __name__ == "__main__":
    main()
