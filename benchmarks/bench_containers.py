"""Containers vs a folder: throughput and peak RSS of the same images (not a unit test).

    python benchmarks/bench_containers.py [--images 1000] [--repeats 3] [--image-kb 0]
        [--model mobilenet_v1_0.25_128_quant]

val50 repeated to ``--images`` as distinct files (a JPEG comment naming each), written once as real
files in a folder (with a val.txt-style list), as one Hugging Face parquet file (row groups of 100,
as ``datasets`` writes), as webdataset tar shards (4) and as TFDS TFRecord shards (4). Each run is
its own process (``python -m evalharness``, tensor cache off, default loop settings); ``--repeats``
rounds in rotating order; reported per format: the median ``throughput.images_per_s`` of
metrics.json, the median peak RSS of the process (metrics.json ``memory_mb.peak_rss``), the wall
time, and the ratios to the folder measured in the same rounds. Also: the listing alone (index +
sha256 of every image) per format.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from pack_containers import ASSETS, val50_items, write_parquet, write_tfrecord, write_webdataset  # noqa: E402


def distinct(items, size_kb: int = 0):
    """Each repeat made a different file: a JPEG comment (COM segment) naming it, right after SOI;
    with ``size_kb``, more comment segments of random bytes until the file is that large (val50's
    files are ~32 KB, ILSVRC's average ~130 KB: what a parquet page holds scales with it).
    Byte-identical repeats would let parquet's dictionary encoding store each image once, which no
    real dataset allows."""
    rng = random.Random(0)
    out = []
    for name, data, label in items:
        assert data[:2] == b"\xff\xd8", name
        segments = [name.encode()]
        while sum(len(s) + 4 for s in segments) + len(data) < size_kb * 1024:
            segments.append(rng.randbytes(min(60000, size_kb * 1024 - len(data))))
        comments = b"".join(b"\xff\xfe" + (len(s) + 2).to_bytes(2, "big") + s for s in segments)
        out.append((name, data[:2] + comments + data[2:], label))
    return out


def write_folder(items, folder: Path) -> tuple[Path, Path]:
    (folder / "images").mkdir(parents=True)
    lines = []
    for name, data, label in items:
        (folder / "images" / name).write_bytes(data)
        lines.append(f"{name} {label}")
    (folder / "val.txt").write_text("\n".join(lines) + "\n")
    return folder / "images", folder / "val.txt"


def run(model: str, overrides: list[str], run_dir: Path) -> tuple[float, float, float]:
    """(images/s of the loop, peak RSS MiB as metrics.json's memory_mb records it, wall s) of one run
    in its own process."""
    command = [
        sys.executable, "-m", "evalharness", f"model={model}", "dataset=imagenet_val50",
        f"paths.models_dir={ASSETS / 'models'}", f"paths.data_dir={ASSETS}", "loop.progress=false",
        "loop.tensor_cache=false", f"hydra.run.dir={run_dir}", *overrides,
    ]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    status = proc.wait()
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(
            f"run failed ({status}): {' '.join(overrides)}\n{proc.stderr.read().decode()[-2000:]}"
        )
    doc = json.loads((run_dir / "metrics.json").read_text())
    return doc["throughput"]["images_per_s"], doc["memory_mb"]["peak_rss"], wall


def listing_seconds(fmt: str, root: str, gt: str | None) -> float:
    from evalharness.data.dataset_reader import ReadRequest, reader_for

    start = time.perf_counter()
    reader, _ = reader_for(fmt, ReadRequest(root, gt, str(REPO / "datasets/sample/imagenet_classes.txt")))
    reader.samples()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="mobilenet_v1_0.25_128_quant")
    parser.add_argument("--image-kb", type=int, default=0, help="pad each image to this size (0: as val50's)")
    args = parser.parse_args()
    items = distinct(val50_items(repeat=-(-args.images // 50))[: args.images], args.image_kb)
    with tempfile.TemporaryDirectory(prefix="bench-containers-") as tmp:
        base = Path(tmp)
        images, val_txt = write_folder(items, base / "folder")
        formats = {
            "folder": [f"dataset.root={images}", f"dataset.ground_truth={val_txt}"],
            "parquet": [
                f"dataset.root={write_parquet(items, base / 'parquet', group=100)}",
                "dataset.format=auto",
            ],
            "webdataset": [
                f"dataset.root='{write_webdataset(items, base / 'wds', shards=4)}'",
                "dataset.format=auto",
            ],
            "tfrecord": [
                f"dataset.root={write_tfrecord(items, base / 'tfr', shards=4)}",
                "dataset.format=auto",
            ],
        }
        roots = {
            "folder": ("val_txt", str(images), str(val_txt)),
            "parquet": ("parquet", str(base / "parquet"), None),
            "webdataset": ("webdataset", str(base / "wds" / "val-{0000..0003}.tar"), None),
            "tfrecord": ("tfrecord", str(base / "tfr"), None),
        }
        listing = {name: listing_seconds(*roots[name]) for name in formats}
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in formats}
        names = list(formats)
        for r in range(args.repeats):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                figures[name].append(run(args.model, formats[name], base / f"run-{name}-{r}"))
        mean_kb = sum(len(d) for _, d, _ in items) / len(items) / 1024
        print(
            f"{args.images} images (mean {mean_kb:.0f} KB), {args.model}, {args.repeats} rounds (medians), "
            f"{os.cpu_count()} CPUs"
        )
        print(
            f"{'format':<11} {'img/s':>7} {'x folder':>8} {'peak RSS MiB':>13} {'x folder':>8} "
            f"{'wall s':>7} {'listing s':>10}"
        )
        med = {n: [statistics.median(f[i] for f in figures[n]) for i in range(3)] for n in names}
        for n in names:
            ips, rss, wall = med[n]
            print(
                f"{n:<11} {ips:7.1f} {ips / med['folder'][0]:8.3f} {rss:13.1f} "
                f"{rss / med['folder'][1]:8.3f} {wall:7.2f} {listing[n]:10.3f}"
            )


if __name__ == "__main__":
    main()
