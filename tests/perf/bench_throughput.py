"""Throughput benchmark: is evalharness limited by the model, not by Python? (not a unit test)

    python tests/perf/bench_throughput.py [--images 1000] [--threads 2] [--coco-images 5000]

All figures are measured in this one run on this machine, MobileNet v2 quant, delegate=cpu:

- ceiling A, pure invoke: pre-made input tensors, invoke() only;
- ceiling B, input preparation alone on all cores (decode + crop + exact resize), no model;
- naive loop: PIL open -> preprocess -> invoke, one image at a time (what a user would write);
- evalharness cold (pipelined input, no cache) and warm (preprocessed-tensor cache);
- peak RSS of a 1000-image run vs a 50-image run (separate processes);
- COCO scoring of a replicated val25 set with the SSD model's low-threshold detections (~128 per
  image, see ssd_low_threshold.py): pycocotools vs faster-coco-eval, stats compared;
- the bootstrap interval of that set's AP/AP50/AP75/per-class AP (B resamples, ``--bootstrap``):
  keeping pycocotools' matching, then re-accumulating it with resampling weights, vs one scoring.

Images are val50 repeated (symlinks under fresh names) to ``--images``; labels from val50's csv.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ASSETS = REPO.parent / "shared" / "assets"
MODEL = "mobilenet_v2_1.0_224_quant"


def make_dataset(root: Path, n: int) -> Path:
    with open(ASSETS / "imagenet/val50/labels.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    (root / "images").mkdir(parents=True)
    with open(root / "labels.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["filename", "label"])
        for i in range(n):
            r = rows[i % len(rows)]
            name = f"img{i:06d}.JPEG"
            os.symlink(ASSETS / "imagenet/val50" / r["filename"], root / "images" / name)
            w.writerow([name, r["class_name"]])
    return root


def run_app(data: Path, threads: int, *extra: str) -> dict:
    """python -m evalharness in a fresh process (its own peak RSS); returns metrics.json."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "evalharness",
            f"model={MODEL}",
            f"paths.models_dir={ASSETS / 'models'}",
            f"dataset.root={data / 'images'}",
            f"dataset.ground_truth={data / 'labels.csv'}",
            "dataset.format=csv",
            f"delegate.num_threads={threads}",
            "loop.progress=false",
            f"hydra.run.dir={out}",
            *extra,
        ]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        return json.loads((Path(out) / "metrics.json").read_text())


def classification(n: int, threads: int) -> None:
    from evalharness.data.preprocess import PreprocessSpec, image_input_spec, preprocess_file
    from evalharness.runtime import load_model, plan_delegate

    model = load_model(
        str(ASSETS / "models" / f"{MODEL}.tflite"), plan_delegate({"name": "cpu", "num_threads": threads})
    )
    i = model.inputs[0]
    inp = image_input_spec(i.shape, i.dtype, (i.scale, i.zero_point), MODEL)
    spec = PreprocessSpec()
    with tempfile.TemporaryDirectory() as tmp:
        data = make_dataset(Path(tmp), n)
        paths = sorted(str(p) for p in (data / "images").iterdir())
        tensors = [preprocess_file(p, spec, inp) for p in paths[:50]]

        start, cpu = time.perf_counter(), time.process_time()
        for k in range(n):
            model.set_inputs([tensors[k % 50]])
            model.invoke()
        invoke_ips = n / (time.perf_counter() - start)
        invoke_cpu_ms = (time.process_time() - cpu) * 1000 / n  # all threads, XNNPACK's spin-waits included

        start, cpu = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(os.cpu_count()) as pool:
            list(pool.map(lambda p: preprocess_file(p, spec, inp), paths))
        prep_ips = n / (time.perf_counter() - start)
        prep_cpu_ms = (time.process_time() - cpu) * 1000 / n

        start = time.perf_counter()
        for p in paths:
            model.set_inputs([preprocess_file(p, spec, inp)])
            model.invoke()
            model.get_outputs()
        naive_ips = n / (time.perf_counter() - start)

        cold0 = run_app(data, threads, "loop.workers=0", "loop.cache=false")["throughput"]["images_per_s"]
        cold = run_app(data, threads, "loop.workers=1", "loop.cache=false")
        with tempfile.TemporaryDirectory() as cache:
            run_app(data, threads, "loop.cache=true", f"paths.cache_dir={cache}")
            warm = run_app(data, threads, "loop.cache=true", f"paths.cache_dir={cache}")
        small = run_app(data, threads, "task.num_images=50", "loop.cache=false")

    ceiling = min(invoke_ips, prep_ips)
    cold_ips, warm_ips = cold["throughput"]["images_per_s"], warm["throughput"]["images_per_s"]
    print(f"images={n} threads={threads} cpus={os.cpu_count()}")
    print(f"ceiling A  pure invoke            {invoke_ips:8.1f} img/s")
    print(
        f"ceiling B  input prep, all cores  {prep_ips:8.1f} img/s   -> binding ceiling: "
        f"{'invoke' if invoke_ips <= prep_ips else 'input preparation'}"
    )
    cpu_bound = (os.cpu_count() or 1) * 1000 / (invoke_cpu_ms + prep_cpu_ms)
    print(
        f"CPU budget: invoke {invoke_cpu_ms:.2f} ms + input prep {prep_cpu_ms:.2f} ms of CPU per image on "
        f"{os.cpu_count()} cores -> at most {cpu_bound:.1f} img/s for any cold run"
    )
    print(f"naive loop                        {naive_ips:8.1f} img/s")
    print(f"evalharness cold, workers=0       {cold0:8.1f} img/s")
    print(
        f"evalharness cold, workers=1       {cold_ips:8.1f} img/s   = {cold_ips / ceiling:.3f} x binding "
        f"ceiling, {cold_ips / cpu_bound:.3f} x CPU budget, {cold_ips / naive_ips:.2f} x naive"
    )
    print(
        f"evalharness warm cache            {warm_ips:8.1f} img/s   = {warm_ips / invoke_ips:.3f} x pure "
        f"invoke, {warm_ips / naive_ips:.2f} x naive"
    )
    mean = {name: doc["latency_ms"]["inference"]["mean"] for name, doc in (("cold", cold), ("warm", warm))}
    print(
        f"mean invoke: pure loop {1000 / invoke_ips:.2f} ms, in the cold run {mean['cold']:.2f} ms, "
        f"in the warm run {mean['warm']:.2f} ms (cores shared with input preparation slow invoke down)"
    )
    print(f"accuracy equal cold/warm: {cold['metrics'] == warm['metrics']}")
    rss_big, rss_small = cold["memory_mb"]["peak_rss"], small["memory_mb"]["peak_rss"]
    print(f"peak RSS {n} images {rss_big:.1f} MB vs 50 images {rss_small:.1f} MB = {rss_big / rss_small:.3f}")


def coco(n_images: int, resamples: int) -> None:
    from ssd_low_threshold import detect

    from evalharness.metrics import COCO_STAT_NAMES, evaluate_bbox

    gt = json.loads((ASSETS / "coco/instances_val25.json").read_text())
    model = str(ASSETS / "models/ssd_mobilenet_v1_coco_quant_postprocess.tflite")
    dets, decode_error = detect(model, gt["images"], ASSETS / "coco/val25", 0.01, 128)
    reps = -(-n_images // len(gt["images"]))
    big = {**gt, "images": [], "annotations": []}
    results = []
    ann_id = 1
    for r in range(reps):
        offset = (r + 1) * 10_000_000
        big["images"] += [{**im, "id": im["id"] + offset} for im in gt["images"]]
        for a in gt["annotations"]:
            big["annotations"].append({**a, "id": ann_id, "image_id": a["image_id"] + offset})
            ann_id += 1
        results += [{**d, "image_id": d["image_id"] + offset} for d in dets]
    timings, stats = {}, {}
    for backend in ("pycocotools", "faster_coco_eval"):
        start = time.perf_counter()
        stats[backend] = evaluate_bbox(big, results, backend=backend)["stats"]
        timings[backend] = time.perf_counter() - start
    worst = max(abs(stats["pycocotools"][k] - stats["faster_coco_eval"][k]) for k in COCO_STAT_NAMES)
    print(
        f"COCO scoring: {len(big['images'])} images, {len(results)} detections (SSD raw outputs, "
        f"score > 0.01, {len(dets) / len(gt['images']):.0f}/image; decoding check {decode_error:.1e}), "
        f"AP {stats['pycocotools']['AP']:.4f}"
    )
    print(
        f"pycocotools {timings['pycocotools']:.2f} s, faster_coco_eval {timings['faster_coco_eval']:.2f} s "
        f"= {timings['faster_coco_eval'] / timings['pycocotools']:.3f} x; max |stat diff| {worst:.2e}"
    )
    bootstrap(big, results, resamples, timings["pycocotools"])


def bootstrap(gt: dict, results: list, resamples: int, plain_s: float) -> None:
    from evalharness.metrics import evaluate_bbox
    from evalharness.scoring.coco_stats import bootstrap_intervals
    from evalharness.scoring.intervals import CONFIDENCE

    start = time.perf_counter()
    scored = evaluate_bbox(gt, results, keep_matching=True)
    keep_s = time.perf_counter() - start
    start = time.perf_counter()
    intervals = bootstrap_intervals(scored["matching"], resamples, 0, CONFIDENCE)
    boot_s = time.perf_counter() - start
    print(
        f"COCO bootstrap: {len(gt['images'])} images, B={resamples}: {boot_s:.2f} s "
        f"({boot_s / plain_s:.3f} x one pycocotools scoring); keeping the matching costs "
        f"{keep_s - plain_s:+.2f} s over plain scoring; AP {scored['stats']['AP']:.4f} "
        f"95 % interval [{intervals['AP'][0]:.4f}, {intervals['AP'][1]:.4f}]"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--coco-images", type=int, default=5000)
    ap.add_argument("--bootstrap", type=int, default=1000, help="COCO bootstrap resamples")
    ap.add_argument("--only", choices=("classification", "coco"), help="run one half")
    args = ap.parse_args()
    if args.only != "coco":
        classification(args.images, args.threads)
    if args.only != "classification":
        coco(args.coco_images, args.bootstrap)


if __name__ == "__main__":
    main()
