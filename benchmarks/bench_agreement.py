"""A sweep's agreement matrix and ``report diff`` at ILSVRC scale, as times in one process (not a
unit test).

    python benchmarks/bench_agreement.py --template RUN_DIR [--runs 20] [--sizes 1000,10000,50000]

Writes ``--runs`` synthetic classification run directories per size (predictions.jsonl with the
fields a run writes: id, label, label_index, rank, topk, topk_labels, scores, latency_ms,
input_sha256; metrics.json is the template run's, its figures rescored from those records), then
times, per size: reading every run's records, the sweep's N×N agreement matrix with McNemar's p
over the runs read (:func:`evalharness.report.commands.sweep_pairs.agreement_sections`) and
``report diff`` and ``report sweep`` of two runs from disk (the document or table and its text, as
the command prints it).
Printed: seconds, and each time per image as a multiple of the first size's (linear: about 1).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time

import numpy as np

from evalharness.core.tables import render_text
from evalharness.report.commands.diff import build_diff
from evalharness.report.commands.sweep import sections, sweep_table
from evalharness.report.commands.sweep_pairs import agreement_sections
from evalharness.report.runs import comparability, definition_of
from evalharness.report.views import diff_view
from evalharness.rundir.reader import Run, load_run

CLASSES = 1000
TOP_K = 10


def write_runs(folder: str, template: dict, runs: int, images: int, seed: int = 0) -> list[str]:
    """``runs`` run directories on the same ``images`` ids: each run right on an image with a
    probability near 0.75, its mistakes partly shared with the others (as variants of one model)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, CLASSES, images)
    hard = rng.random(images)  # an image's difficulty, shared by every run
    ids = [f"n{t:08d}/ILSVRC2012_val_{i:08d}.JPEG" for i, t in enumerate(truth)]
    names = [f"class {c}" for c in range(CLASSES)]
    hashes = [f"{random.Random(i).getrandbits(256):064x}" for i in range(images)]
    dirs = []
    for r in range(runs):
        wrong = hard + 0.15 * rng.random(images) > 0.8
        others = rng.integers(0, CLASSES, (images, TOP_K))
        rank = np.where(wrong, rng.integers(1, TOP_K + 1, images), 0)  # TOP_K: not in the top-K
        path = os.path.join(folder, f"{images}_{r:02d}")
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "predictions.jsonl"), "w") as f:
            for i in range(images):
                topk = [int(c) for c in others[i]]
                if rank[i] < TOP_K:
                    topk[int(rank[i])] = int(truth[i])
                record = {
                    "id": ids[i], "input_sha256": hashes[i], "label": names[truth[i]],
                    "label_index": int(truth[i]), "latency_ms": 2.0 + 0.001 * (i % 97),
                    "rank": int(rank[i]) if rank[i] < TOP_K else None,
                    "scores": [round(1.0 / (k + 2), 6) for k in range(TOP_K)], "topk": topk,
                    "topk_labels": [names[c] for c in topk],
                }  # fmt: skip
                f.write(json.dumps(record) + "\n")
        doc = {**template, "predictions": {**template["predictions"], "count": images}}
        run = Run(path, path, doc)
        doc["metrics"] = definition_of(run).scorer().add_all(run.predictions).result()
        doc["provenance"]["dataset"] = {**doc["provenance"]["dataset"], "count": images}
        with open(os.path.join(path, "metrics.json"), "w") as f:
            json.dump(doc, f)
        dirs.append(path)
    return dirs


def time_matrix(dirs: list[str]) -> tuple[float, float]:
    """(seconds to read every run's records, seconds of the matrix on the runs read): a sweep reads
    them anyway (its latency columns and distributions)."""
    start = time.perf_counter()
    jobs = [{"run": os.path.basename(d), "doc": load_run(d, os.path.basename(d))} for d in dirs]
    for job in jobs:
        assert job["doc"].predictions
    read = time.perf_counter() - start
    start = time.perf_counter()
    sections = agreement_sections(jobs, lambda job: job["run"])
    assert sections, "no agreement matrix: the runs were not grouped"
    return read, time.perf_counter() - start


def time_sweep(dirs: list[str]) -> float:
    """``report sweep`` of two runs (a delegate sweep, the first the baseline): its table and text."""
    start = time.perf_counter()
    jobs = [
        {"run": os.path.basename(d), "dir": d, "params": {"delegate": f"d{n}"}, "doc": load_run(d, str(n))}
        for n, d in enumerate(dirs)
    ]
    columns, rows = sweep_table(jobs, {"delegate": "d0"})
    render_text("sweep", sections(os.path.dirname(dirs[0]), jobs, columns, rows))
    return time.perf_counter() - start


def time_diff(a_dir: str, b_dir: str) -> float:
    start = time.perf_counter()
    a, b = load_run(a_dir, "A"), load_run(b_dir, "B")
    doc = build_diff(a, b, comparability(a, b))
    render_text(diff_view.title(doc), diff_view.sections(doc))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", required=True, help="a finished imagenet run directory")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--folder", default=None, help="where the runs are written (default: a temp dir)")
    args = parser.parse_args()
    with open(os.path.join(args.template, "metrics.json")) as f:
        template = json.load(f)
    folder = args.folder or tempfile.mkdtemp(prefix="bench_agreement_")
    pairs = args.runs * (args.runs - 1) // 2
    print(f"{args.runs} runs ({pairs} pairs), runs in {folder}")
    heads = f"{'images':>8} {'read s':>7} {'matrix s':>9} {'diff s':>7} {'sweep s':>8}"
    print(f"{heads}  per image × the first size's")
    base = None
    for images in (int(s) for s in args.sizes.split(",")):
        dirs = write_runs(folder, template, args.runs, images)
        diff = time_diff(dirs[0], dirs[1])  # first: the matrix leaves every run's records in the heap
        sweep = time_sweep(dirs[:2])
        read, matrix = time_matrix(dirs)
        per_image = (read / images, matrix / images, diff / images, sweep / images)
        base = base or per_image
        names = ("read", "matrix", "diff", "sweep")
        ratios = ", ".join(f"{n} {v / first:.2f}" for n, v, first in zip(names, per_image, base, strict=True))
        print(f"{images:>8} {read:>7.2f} {matrix:>9.2f} {diff:>7.2f} {sweep:>8.2f}  {ratios}")

if __name__ == "__main__":
    main()
