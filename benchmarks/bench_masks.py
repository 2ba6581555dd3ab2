"""A YOLO-seg run's masks: what they cost beside the boxes, and that memory does not grow with the
run (not a unit test).

    python benchmarks/bench_masks.py [--images 250] [--repeats 5] [--rss-images 25 2500] [--rss-repeats 1]
        [--rss-kinds seg box pose] [--model yolov8n_seg_int8_256] [--threads 1] [--only ratio|rss]

Data: coco/val25's 25 images linked under ``--images`` fresh names (symlinks, cycling), with an
instances json whose images and annotations are val25's, renumbered (each copy its own image id).

- **seg vs box-only**, the same model file, each run its own process (``python -m evalharness
  task=coco model.path=...``, tensor cache off): the seg run as a user runs it (masks of the kept
  detections, RLE-coded at once, scored by pycocotools' segm beside the boxes), and the box-only run
  of the same head (its decoder's ``decode`` replaced in that process by the box decoder's: the rows
  alone dequantised, filtered and suppressed as in the seg run, so the same boxes; no prototypes, no
  mask made, none scored).
  ``--repeats`` rounds, the two runs in alternating order; reported: the median
  ``throughput.images_per_s`` of each, the median per-image postprocess ms, the image loop's CPU
  ms per image (its thread; the whole process), and the median of the per-round ratios seg / box
  of img/s (the acceptance: >= 0.85) and of the process's CPU time in the loop (box / seg), which a
  loaded machine disturbs less.
- **peak RSS** of seg, box-only and pose runs (``--rss-kinds``; pose: ``yolov8n_pose_uint8_256`` on
  ``person_keypoints_val25.json``'s images and people, renumbered alike) of each ``--rss-images`` size
  (``--rss-repeats`` rounds, alternating order): the whole process's (``/usr/bin/time``, scoring
  included) and metrics.json's ``memory_mb.peak_rss`` (the process's when the loop ends): flat means
  no mask is held at full size nor kept as RLE until the end; what grows with the run is the records
  kept for scoring (boxes, a seg run's per-image mask IoUs) and pycocotools' own structures when it
  scores them, the box-only run's growth beside it. ``--rss-where``: each run also samples its own
  RSS every 10 ms (a thread in the run's process) and prints each 8 MiB rise and the peak with the
  main thread's innermost frames at that moment: where the memory goes, phase by phase.

The machine may be shared: the ratio is taken within a round, whose two runs are seconds apart, and
the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_ilsvrc_scale import run_process
from bench_shared import load

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO.parent / "shared" / "assets"
VAL25 = ASSETS / "coco" / "val25"
INSTANCES = ASSETS / "coco" / "instances_val25.json"
KEYPOINTS = ASSETS / "coco" / "person_keypoints_val25.json"
POSE_MODEL = "yolov8n_pose_uint8_256"

# Every run goes through this: the loop over the images (engine.run_each, or the lanes' whole pass)
# timed in CPU seconds of the thread that runs it (invoke, decoding, masks, records) and of the
# whole process, written to $BENCH_CPU_FILE; with BENCH_BOX_ONLY set, the seg head is decoded as a
# box head (the rows alone dequantised, filtered and suppressed as in the seg run: the same boxes;
# no prototypes, no masks, none scored).
WRAPPER = """
import os, runpy, sys, time
import numpy as np
import evalharness.loop.engine as engine
from evalharness.decoders.base import Detections
from evalharness.decoders.yolo_seg import YoloSegDecoder

def boxes_only(self, outputs):
    rows = self.outputs[self._rows_at].dequantize(outputs[self._rows_at])
    kept = self._kept_rows(np.asarray(rows, dtype=np.float64)[0])
    return Detections(boxes=kept.boxes, scores=kept.scores, classes=kept.classes)

if os.environ.get("BENCH_BOX_ONLY"):
    YoloSegDecoder.decode = boxes_only
def timed(run):
    def timed_run(*args, **kwargs):
        thread, process = time.thread_time(), time.process_time()
        try:
            return run(*args, **kwargs)
        finally:
            spent = (time.thread_time() - thread, time.process_time() - process)
            with open(os.environ["BENCH_CPU_FILE"], "w") as f:
                f.write(" ".join(map(str, spent)))
    return timed_run

engine.run_each, engine.run_with_lanes = timed(engine.run_each), timed(engine.run_with_lanes)

if os.environ.get("BENCH_RSS_STEPS"):  # where the RSS rises: a sampler beside the main thread
    import atexit, threading
    main_thread, page = threading.get_ident(), os.sysconf("SC_PAGE_SIZE") / 2**20
    steps, start = [], time.monotonic()

    def where():  # the main thread's innermost frames of ours or pycocotools' (no line cache read)
        frame, found = sys._current_frames().get(main_thread), []
        while frame is not None and len(found) < 4:
            name = frame.f_code.co_filename
            if "evalharness" in name or "pycocotools" in name:
                found.append(f"{name.rsplit('/', 1)[-1]}:{frame.f_lineno} {frame.f_code.co_name}")
            frame = frame.f_back
        return " <- ".join(found)

    def sample():
        peak = last = 0.0
        while True:
            with open("/proc/self/statm") as f:
                rss = int(f.read().split()[1]) * page
            if rss > peak + 0.5 or abs(rss - last) >= 8:
                steps.append([round(time.monotonic() - start, 2), round(rss, 1), where(), rss > peak])
                peak, last = max(peak, rss), rss
            time.sleep(0.01)

    threading.Thread(target=sample, daemon=True).start()
    atexit.register(lambda: open(os.environ["BENCH_RSS_STEPS"], "w").write(__import__("json").dumps(steps)))
sys.argv[0] = "evalharness"
runpy.run_module("evalharness", run_name="__main__", alter_sys=True)
"""


def make_dataset(root: Path, n: int, annotations_file: Path = INSTANCES) -> tuple[Path, Path]:
    """``root/images/img000000.jpg ...`` (n symlinks cycling through val25) and ``root/instances.json``
    with each copy's image and annotations (of ``annotations_file``) under fresh ids."""
    source = json.loads(annotations_file.read_text())
    by_image: dict[int, list[dict]] = {}
    for ann in source["annotations"]:
        by_image.setdefault(ann["image_id"], []).append(ann)
    (root / "images").mkdir(parents=True)
    images, annotations = [], []
    for i in range(n):
        image = source["images"][i % len(source["images"])]
        name = f"img{i:06d}.jpg"
        os.symlink(VAL25 / image["file_name"], root / "images" / name)
        images.append({**image, "id": i + 1, "file_name": name})
        for ann in by_image.get(image["id"], []):
            annotations.append({**ann, "id": len(annotations) + 1, "image_id": i + 1})
    doc = {**source, "images": images, "annotations": annotations}
    (root / "instances.json").write_text(json.dumps(doc))
    return root / "images", root / "instances.json"


def run(
    model: str,
    data: tuple[Path, Path],
    run_dir: Path,
    threads: int,
    box_only: bool,
    timed: bool = False,
    steps: bool = False,
) -> dict:
    """metrics.json of one run in its own process, with ``cpu``: the loop's CPU seconds (its thread,
    the whole process); ``timed``: run under ``/usr/bin/time``, with ``process_peak_rss``
    (MiB: start-up, loop, scoring and the files written, which metrics.json's loop-end figure misses)."""
    images, annotations = data
    command = [
        sys.executable, "-c", WRAPPER, "task=coco", f"model.path={ASSETS / 'yolo' / (model + '.tflite')}",
        f"dataset.root={images}", f"dataset.annotations={annotations}", "loop.progress=false",
        "loop.tensor_cache=false", "task.analysis=false", "task.tflite_tool_ap=false",
        "task.bootstrap_resamples=0", f"delegate.num_threads={threads}", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    cpu_file = run_dir.parent / f"{run_dir.name}.cpu"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BENCH_CPU_FILE": str(cpu_file)}
    if steps:
        env["BENCH_RSS_STEPS"] = str(run_dir.parent / f"{run_dir.name}.steps")
    if box_only:
        env["BENCH_BOX_ONLY"] = "1"
    process_peak = None
    if timed:
        _, process_peak, _ = run_process(command, env)
    else:
        proc = subprocess.run(command, capture_output=True, text=True, env=env)
        if proc.returncode != 0:
            raise SystemExit(f"run failed ({proc.returncode}): {' '.join(command)}\n{proc.stderr[-2000:]}")
    doc = json.loads((run_dir / "metrics.json").read_text())
    doc["cpu"] = [float(v) for v in cpu_file.read_text().split()]
    doc["process_peak_rss"] = process_peak
    if steps:
        doc["rss_steps"] = json.loads((run_dir.parent / f"{run_dir.name}.steps").read_text())
    return doc


def seg_vs_box(args: argparse.Namespace, base: Path) -> None:
    data = make_dataset(base / f"data{args.images}", args.images)
    figures: dict[str, list[dict]] = {"seg": [], "box": []}
    ratios = []
    for r in range(args.repeats):
        order = ["seg", "box"] if r % 2 == 0 else ["box", "seg"]
        for kind in order:
            figures[kind].append(run(args.model, data, base / f"{kind}-{r}", args.threads, kind == "box"))
        seg, box = (figures[k][-1]["throughput"]["images_per_s"] for k in ("seg", "box"))
        ratios.append(seg / box)
        print(f"  round {r + 1}: seg {seg:.2f} img/s, box {box:.2f} img/s, ratio {seg / box:.3f}", flush=True)
    print(f"{args.model}, {args.images} images, {args.threads} thread(s), {args.repeats} rounds (medians)")
    print(f"{'run':<5} {'img/s':>7} {'post ms/img':>12} {'loop thread CPU ms/img':>23} {'process CPU':>12}")
    for kind in ("seg", "box"):
        docs = figures[kind]
        ips = statistics.median(d["throughput"]["images_per_s"] for d in docs)
        post = statistics.median(d["throughput"]["per_image_ms"]["postprocess"] for d in docs)
        thread = statistics.median(d["cpu"][0] for d in docs) * 1000 / args.images
        process = statistics.median(d["cpu"][1] for d in docs) * 1000 / args.images
        print(f"{kind:<5} {ips:7.2f} {post:12.2f} {thread:23.2f} {process:12.2f}")
    segm = figures["seg"][0]["metrics"]
    # by the process's CPU time in the loop: the shape (auto, calibrated per run) decides which thread
    # prepares the inputs, so only the whole process's time counts the same work in both runs
    cpu = [b["cpu"][1] / s["cpu"][1] for s, b in zip(figures["seg"], figures["box"], strict=True)]
    print(
        f"seg / box img/s: median of the rounds' ratios {statistics.median(ratios):.3f} "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f}); by the process's CPU time in the loop "
        f"(box / seg): {statistics.median(cpu):.3f} (min {min(cpu):.3f}, max {max(cpu):.3f})"
    )
    print(f"segm_AP {segm['segm_AP']:.4f}, AP {segm['AP']:.4f}")


def rss_growth(args: argparse.Namespace, base: Path) -> None:
    sizes, kinds = args.rss_images, args.rss_kinds
    data = {n: make_dataset(base / f"rss{n}", n) for n in sizes if {"seg", "box"} & set(kinds)}
    if "pose" in kinds:
        data.update({-n: make_dataset(base / f"rss-pose{n}", n, KEYPOINTS) for n in sizes})
    runs = [(n, kind) for n in sizes for kind in kinds]
    figures: dict[tuple[int, str], list[dict]] = {run: [] for run in runs}
    for r in range(args.rss_repeats):
        for n, kind in runs if r % 2 == 0 else runs[::-1]:
            name = f"rss-{kind}-{n}-{r}"
            model, files = (POSE_MODEL, data[-n]) if kind == "pose" else (args.model, data[n])
            doc = run(model, files, base / name, args.threads, kind == "box", True, args.rss_where)
            figures[n, kind].append(doc)
            print(
                f"  {kind} {n}: process peak {doc['process_peak_rss']:.1f} MiB, load average {load()}",
                flush=True,
            )
            if args.rss_where:
                print_steps(doc["rss_steps"])
    print(f"{args.model} (pose: {POSE_MODEL}), peak RSS by run size ({args.rss_repeats} round(s), medians):")
    print("the whole process's (/usr/bin/time) and metrics.json's memory_mb.peak_rss (the process's peak")
    print("when the loop ends)")
    for kind in kinds:
        first = statistics.median(d["process_peak_rss"] for d in figures[sizes[0], kind])
        for n in sizes:
            docs = figures[n, kind]
            peak = statistics.median(d["process_peak_rss"] for d in docs)
            loop_peak = statistics.median(d["memory_mb"]["peak_rss"] for d in docs)
            print(
                f"  {kind} {n:>6} images: process peak RSS {peak:7.1f} MiB "
                f"({peak / first:.3f} x {sizes[0]}), "
                f"loop-end peak {loop_peak:7.1f} MiB, "
                f"{statistics.median(d['throughput']['images_per_s'] for d in docs):.2f} img/s"
            )


def print_steps(steps: list) -> None:
    """The sampled RSS (``--rss-where``): each rise of 8 MiB and the peak, with the main thread's
    innermost frames at that moment (seconds from start-up, MiB; the sampler's own RSS included)."""
    top, shown = max(steps, key=lambda step: step[1]), -8.0
    for t, rss, where, _ in steps:
        if abs(rss - shown) >= 8:
            print(f"    {t:7.2f} s {rss:7.1f} MiB  {where[:150]}")
            shown = rss
    print(f"    peak {top[1]:.1f} MiB at {top[0]:.2f} s: {top[2][:150]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=250)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rss-images", type=int, nargs="+", default=[25, 2500])
    parser.add_argument("--rss-repeats", type=int, default=1)
    parser.add_argument("--rss-kinds", nargs="+", choices=["seg", "box", "pose"], default=["seg", "box"])
    parser.add_argument("--model", default="yolov8n_seg_int8_256")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", choices=["ratio", "rss"])
    parser.add_argument(
        "--rss-where", action="store_true", help="sample each RSS run's memory: where it rises and peaks"
    )
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-masks-") as tmp:
        if args.only in (None, "ratio"):
            seg_vs_box(args, Path(tmp))
        if args.only in (None, "rss"):
            rss_growth(args, Path(tmp))
    print(f"load average {load()}")


if __name__ == "__main__":
    main()
