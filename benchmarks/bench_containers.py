"""Containers vs a folder: throughput and peak RSS of the same images (not a unit test).

    python benchmarks/bench_containers.py [--images 1000 | --sizes 1000,20000] [--repeats 3]
        [--image-kb 0] [--model mobilenet_v1_0.25_128_quant]

val50 repeated to ``--images`` as distinct files (a JPEG comment naming each), written once as real
files in a folder (with a val.txt-style list), as one Hugging Face parquet file (row groups of 100,
as ``datasets`` writes), as webdataset tar shards (4) and as TFDS TFRecord shards (4). Each run is
its own process (``python -m evalharness``, tensor cache off, default loop settings); ``--repeats``
rounds in rotating order; reported per format: the median ``throughput.images_per_s`` of
metrics.json, its ratio to the folder's median and the median of each round's ratio to that round's
folder run (paired), the loop's peak RSS (metrics.json ``memory_mb.peak_rss``) and the whole
process's (``/usr/bin/time``: start-up, listing, loop, scoring), the wall time and the process's CPU
time per image (what a loaded machine does not move). Also: the listing
alone (index + sha256 of every image) per format. With ``--sizes``, all of it at each size, then
each format's process peak RSS as a multiple of its own at the smallest size (flat: about 1).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from bench_ilsvrc_scale import run_evalharness  # noqa: E402
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


def run(model: str, overrides: list[str], run_dir: Path) -> dict[str, float]:
    """One run in its own process (bench_ilsvrc_scale.run_evalharness: loop img/s, loop and process
    peak RSS, wall and CPU s)."""
    data = [f"paths.models_dir={ASSETS / 'models'}", f"paths.data_dir={ASSETS}"]
    return run_evalharness([f"model={model}", "dataset=imagenet_val50", *data, *overrides], run_dir)


def listing_seconds(fmt: str, root: str, gt: str | None) -> float:
    from evalharness.data.dataset_reader import ReadRequest, reader_for

    start = time.perf_counter()
    reader, _ = reader_for(fmt, ReadRequest(root, gt, str(REPO / "datasets/sample/imagenet_classes.txt")))
    reader.samples()
    return time.perf_counter() - start


def write_formats(items, base: Path) -> tuple[dict[str, list[str]], dict[str, tuple[str, str, str | None]]]:
    """The same images as a folder, parquet, webdataset and TFRecord under ``base``: each format's
    run overrides, and its (reader, root, ground truth) for the listing alone."""
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
        "tfrecord": [f"dataset.root={write_tfrecord(items, base / 'tfr', shards=4)}", "dataset.format=auto"],
    }
    roots = {
        "folder": ("val_txt", str(images), str(val_txt)),
        "parquet": ("parquet", str(base / "parquet"), None),
        "webdataset": ("webdataset", str(base / "wds" / "val-{0000..0003}.tar"), None),
        "tfrecord": ("tfrecord", str(base / "tfr"), None),
    }
    return formats, roots


def run_rounds(model: str, formats: dict[str, list[str]], base: Path, repeats: int) -> dict[str, list[dict]]:
    """Every format once a round, each round starting one format later (paired, rotating)."""
    figures: dict[str, list[dict]] = {name: [] for name in formats}
    names = list(formats)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            figures[name].append(run(model, formats[name], base / f"run-{name}-{r}"))
    return figures


def print_size(n: int, figures: dict[str, list[dict]], listing: dict[str, float], items, model: str) -> None:
    repeats = len(figures["folder"])
    mean_kb = sum(len(d) for _, d, _ in items) / len(items) / 1024
    print(
        f"\n{n} images (mean {mean_kb:.0f} KB), {model}, {repeats} rounds (medians), {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("format        img/s x folder  paired  loop RSS  process x folder  wall s  CPU ms/img  listing s")
    med = {fmt: {k: statistics.median(f[k] for f in runs) for k in runs[0]} for fmt, runs in figures.items()}
    folder = med["folder"]
    for name, m in med.items():
        paired = statistics.median(
            f["ips"] / g["ips"] for f, g in zip(figures[name], figures["folder"], strict=True)
        )  # each round's ratio to the folder run of the same round
        print(
            f"{name:<11} {m['ips']:7.1f} {m['ips'] / folder['ips']:8.3f} {paired:7.3f} {m['loop_rss']:9.1f} "
            f"{m['process_rss']:8.1f} {m['process_rss'] / folder['process_rss']:8.3f} {m['wall']:7.2f} "
            f"{m['cpu'] * 1000 / n:11.3f} {listing[name]:10.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument(
        "--sizes", default=None, help="e.g. 1000,20000: peak RSS at each size (replaces --images)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="mobilenet_v1_0.25_128_quant")
    parser.add_argument("--image-kb", type=int, default=0, help="pad each image to this size (0: as val50's)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [args.images]
    rss: dict[int, dict[str, float]] = {}
    for n in sizes:
        items = distinct(val50_items(repeat=-(-n // 50))[:n], args.image_kb)
        with tempfile.TemporaryDirectory(prefix="bench-containers-") as tmp:
            base = Path(tmp)
            formats, roots = write_formats(items, base)
            listing = {name: listing_seconds(*roots[name]) for name in formats}
            figures = run_rounds(args.model, formats, base, args.repeats)
        print_size(n, figures, listing, items, args.model)
        rss[n] = {name: statistics.median(f["process_rss"] for f in runs) for name, runs in figures.items()}
        del items
    if len(sizes) > 1:
        print(f"\nprocess peak RSS at each size as a multiple of the same format's at {sizes[0]:,} images")
        for name in rss[sizes[0]]:
            ratios = ", ".join(f"{n:,}: {rss[n][name] / rss[sizes[0]][name]:.3f}" for n in sizes[1:])
            print(f"{name:<11} {ratios}")


if __name__ == "__main__":
    main()
