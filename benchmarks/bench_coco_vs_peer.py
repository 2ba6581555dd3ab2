"""A whole COCO run of evalharness against the same run by Ultralytics' ``yolo val``, whole processes
in paired rounds on the same files.

    EVALHARNESS_PEER_VENV=/work/ultra-venv python benchmarks/bench_coco_vs_peer.py \
        [--images 500] [--rounds 3] [--model PATH] [--peer-venv DIR] [--keep DIR] [--before SRC]
        [-- OVERRIDES...]
    python benchmarks/bench_coco_vs_peer.py --phases [--images 500] [--keep DIR]

The data is the shared val25 linked under ``--images`` names (labels copied) in an Ultralytics YOLO
layout in a temporary folder: ``data.yaml``, ``images/val2017/<12 digits>.jpg`` and one
``labels/val2017/<same>.txt`` per image holding each non-crowd object's polygon (a segment line, so
a seg model's masks are scored by both tools). evalharness reads that layout itself
(``dataset=yolo``) with its defaults otherwise (pycocotools' stats, 1,000 bootstrap resamples, the
analysis, the TFLite tool's AP); the peer is ``yolo val`` with batch 1, plots off, on the CPU, from
the virtual environment ``--peer-venv`` (or ``EVALHARNESS_PEER_VENV``) where ``ultralytics`` is
installed — not this project's: its licence (AGPL) keeps it a thing measured, never a dependency.
Without it the benchmark says so and exits 0.

``--before SRC`` adds a third side: the same evalharness command with ``PYTHONPATH=SRC`` (another
checkout's package, e.g. ``git archive <commit> | tar -x -C SRC``), in the same rounds, so a change
is measured against the peer and its own past at once. Every side runs from the work folder, never
the checkout's root (``python -m`` would put that folder, and its package, before PYTHONPATH), with
this checkout's package or SRC's first on PYTHONPATH.

Each tool runs once unpaired first (its caches: Ultralytics writes ``labels/val2017.cache``, both
read the model and the images once), then ``--rounds`` rounds of one run each, the order reversed
every round (ABBA), each a fresh process timed from start to exit. Printed: each run's wall time,
the ratio evalharness / peer per round, and the median of the ratios (the figure: a ratio of runs
seconds apart on the same machine, which the load of a shared machine moves far less than the
times), of the wall times and of the CPU seconds each whole process used (its children included:
on a machine shared with other jobs the wall time is partly the scheduler's share, the CPU seconds
much less). The machine's load average is printed before and after.

``--phases`` (no peer needed) runs evalharness alone, once, with a timer around each phase's
function (wrapped in the child process, nothing changed in the package) and prints where the wall
time went: start-up (interpreter, imports, settings), listing (the ground truth read, the images
listed), the loop and inside it the input preparation, ``invoke()``, decoding with NMS and the masks,
then pycocotools' scoring (both iouTypes, and the matching a bootstrap reads), the TFLite tool's
AP, the bootstrap resamples, the analysis and the writing of the run. In the pipelined loop
preparation overlaps ``invoke()``, so the loop's parts add up to more than the loop.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]  # the checkout whose package is "evalharness"
ASSETS = REPO.parent / "shared" / "assets"
COCO = ASSETS / "coco"
MODEL = ASSETS / "yolo" / "yolov8n_seg_int8_256.tflite"
SPLIT = "val2017"
# (label, module, attribute path): the functions whose wall time --phases sums, outermost first
PHASES = (
    ("listing (ground truth, images)", "evalharness.run.prepare", "prepare"),
    ("loop (whole)", "evalharness.loop.engine", "run_loop"),
    ("  preparation (decode, letterbox)", "evalharness.tasks.coco.live", "CocoTask.prepare"),
    ("  invoke()", "evalharness.runtime.litert", "InterpreterModel.invoke"),
    ("  decode + NMS", "evalharness.decoders.yolo", "YoloDecoder._kept_rows"),
    ("  masks (RLE)", "evalharness.decoders.image_shapes", "mask_rles"),
    ("  record (whole, with the two above)", "evalharness.tasks.coco.live", "CocoEvaluator.record"),
    ("scoring (COCOeval, every call)", "evalharness.stats.coco_eval", "_score"),
    ("TFLite tool's AP", "evalharness.stats.coco_tool_ap", "tflite_tool_ap"),
    ("bootstrap resamples", "evalharness.stats.coco_bootstrap", "Matching.resampled"),
    ("analysis", "evalharness.stats.detection_analysis", "analyse"),
    ("analysis: per-class curves", "evalharness.stats.detection_analysis", "per_class_curves"),
    ("writing the run", "evalharness.rundir.document", "write_run"),
)
# run in the child: wrap each PHASES function with a timer, run evalharness, dump the sums as JSON
TIMERS = """
import functools, importlib, json, os, sys, time
born = time.perf_counter()
spent, phases = {}, json.loads(os.environ["PHASES"])
def timer(label, fn):
    @functools.wraps(fn)
    def timed(*a, **k):
        start = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - start
    return timed
for label, module, path in phases:
    owner = importlib.import_module(module)
    *outer, name = path.split(".")
    for part in outer:
        owner = getattr(owner, part)
    setattr(owner, name, timer(label, getattr(owner, name)))
spent["imports of the timed modules"] = time.perf_counter() - born
sys.argv = ["evalharness", *sys.argv[1:]]
from evalharness.__main__ import main  # what the process entry runs, before its fast exit
try:
    main()
finally:
    with open(os.environ["PHASES_OUT"], "w") as out:
        json.dump(spent, out)
"""


def yolo_layout(root: Path, images: int) -> Path:
    """val25 as ``images`` linked files with copied labels in a YOLO layout under ``root``; returns
    its data.yaml. Class i is COCO's i-th category by id (Ultralytics' 80-class order)."""
    doc = json.loads((COCO / "instances_val25.json").read_text())
    categories = sorted(doc["categories"], key=lambda c: int(c["id"]))
    index = {int(c["id"]): i for i, c in enumerate(categories)}
    lines: dict[int, list[str]] = {int(img["id"]): [] for img in doc["images"]}
    sizes = {int(img["id"]): (img["width"], img["height"]) for img in doc["images"]}
    for ann in doc["annotations"]:
        if ann["iscrowd"] or not isinstance(ann["segmentation"], list):
            continue  # the layout has no crowd regions
        w, h = sizes[ann["image_id"]]
        points = [v for polygon in ann["segmentation"] for v in polygon]  # every part, one outline
        xy = " ".join(f"{v / (w if k % 2 == 0 else h):.6f}" for k, v in enumerate(points))
        lines[int(ann["image_id"])].append(f"{index[int(ann['category_id'])]} {xy}\n")
    sources = sorted(doc["images"], key=lambda i: int(i["id"]))
    (root / "images" / SPLIT).mkdir(parents=True)
    (root / "labels" / SPLIT).mkdir(parents=True)
    for k in range(images):
        img = sources[k % len(sources)]
        name = f"{k + 1:012d}"
        (root / "images" / SPLIT / f"{name}.jpg").symlink_to(COCO / "val25" / img["file_name"])
        (root / "labels" / SPLIT / f"{name}.txt").write_text("".join(lines[int(img["id"])]))
    names = "".join(f"  {i}: {c['name']}\n" for i, c in enumerate(categories))
    data = root / "data.yaml"
    data.write_text(f"path: {root}\ntrain: images/{SPLIT}\nval: images/{SPLIT}\nnames:\n{names}")
    return data


def peer_python(venv: str | None) -> str | None:
    """The peer venv's python when ``ultralytics`` is importable there (found, not imported)."""
    if not venv:
        return None
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        return None
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('ultralytics') is None)"
    return str(python) if subprocess.run([str(python), "-c", probe]).returncode == 0 else None


def timed(cmd: list[str], env: dict[str, str], log: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole process and every process it waited for (Ultralytics'
    data-loading workers included); its output goes to ``log`` (shown if it fails)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("w") as out:  # run from the log's folder: ``-m`` puts the working folder first
        # on sys.path, so from a checkout's root every side would import that checkout's package
        code = subprocess.run(cmd, env=env, cwd=log.parent, stdout=out, stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if code:
        sys.exit(f"{cmd[0]} ... exited {code}:\n{log.read_text()[-3000:]}")
    return seconds, cpu


def with_package(env: dict[str, str], source: str) -> dict[str, str]:
    """``env`` with the evalharness package of the checkout ``source`` first on PYTHONPATH."""
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, (source, env.get("PYTHONPATH"))))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--imgsz", type=int, default=256, help="the model's input size, for yolo val")
    ap.add_argument("--peer-venv", default=os.environ.get("EVALHARNESS_PEER_VENV"))
    ap.add_argument("--keep", help="build the layout here and keep it (default: a temporary folder)")
    ap.add_argument("--phases", action="store_true", help="evalharness alone, phase by phase")
    ap.add_argument("--before", help="also run evalharness from this source folder (PYTHONPATH) each round")
    ap.add_argument("overrides", nargs="*", help="extra evalharness overrides")
    args = ap.parse_args()
    if args.phases:
        with tempfile.TemporaryDirectory(prefix="coco_phases_") as tmp:
            phases(args, Path(args.keep) if args.keep else Path(tmp))
        return
    python = peer_python(args.peer_venv)
    if python is None:
        print(
            f"skipped: no peer: ultralytics is not installed in --peer-venv / EVALHARNESS_PEER_VENV "
            f"({args.peer_venv or 'not set'}); make a separate venv with torch, torchvision and "
            "ultralytics and name it"
        )
        return
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="coco_vs_peer_"))
    try:
        run(args, python, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def layout(work: Path, images: int) -> Path:
    """The YOLO layout under ``work`` (made once, kept with --keep); returns its data.yaml."""
    root = work / "coco-yolo"
    return root / "data.yaml" if (root / "data.yaml").exists() else yolo_layout(root, images)


def our_command(args: argparse.Namespace, data: Path, work: Path, *head: str) -> list[str]:
    """evalharness's default COCO run of the layout (``head``: what runs it instead of ``-m``)."""
    return [
        sys.executable, *(head or ("-m", "evalharness")), "task=coco", "model=file",
        f"model.path={args.model}", "dataset=yolo", f"dataset.root={data.parent}",
        f"hydra.run.dir={work}/run", "loop.overwrite=true", "loop.progress=false", *args.overrides,
    ]  # fmt: skip


def phases(args: argparse.Namespace, work: Path) -> None:
    data = layout(work, args.images)
    out = work / "phases.json"
    env = with_package({**os.environ, "PHASES": json.dumps(PHASES), "PHASES_OUT": str(out)}, str(REPO))
    print(f"{args.images} images, {args.model}; load average before: {os.getloadavg()}")
    wall, cpu = timed(our_command(args, data, work, "-c", TIMERS), env, work / "phases.log")
    spent = json.loads(out.read_text())
    print(f"whole process: {wall:.2f} s wall, {cpu:.2f} s CPU")
    print("| phase | s | ms per image |\n|---|---|---|")
    for label, _, _ in PHASES:
        if label in spent:
            print(f"| {label.strip()} | {spent[label]:.2f} | {1000 * spent[label] / args.images:.2f} |")
    outside = wall - sum(spent[label] for label, _, _ in PHASES if label in spent and not label[0].isspace())
    print(f"| the rest (interpreter, imports, settings, run identity, checks) | {outside:.2f} | |")
    print(f"load average after: {os.getloadavg()}")


def run(args: argparse.Namespace, python: str, work: Path) -> None:
    data = layout(work, args.images)
    env = {**os.environ, "YOLO_OFFLINE": "1", "YOLO_VERBOSE": "true"}
    ours = our_command(args, data, work)
    peer = [
        str(Path(python).parent / "yolo"), "val", f"model={args.model}", f"data={data}", "batch=1",
        "plots=False", "device=cpu", f"imgsz={args.imgsz}", f"project={work}/peer", "exist_ok=True",
    ]  # fmt: skip
    sides = {"evalharness": ours, "yolo val": peer}
    envs = {"evalharness": with_package(env, str(REPO)), "yolo val": env}
    if args.before:  # the same command, another checkout's package: before / after in the same rounds
        sides["evalharness before"] = ours
        envs["evalharness before"] = {**env, "PYTHONPATH": args.before}
    print(f"{args.images} images, {args.model}; load average before: {os.getloadavg()}")
    for name, cmd in sides.items():
        wall, cpu = timed(cmd, envs[name], work / f"first {name}.log")
        print(f"  unpaired first run, {name}: {wall:.2f} s ({cpu:.2f} s CPU)", flush=True)
    ratios: dict[str, list[float]] = {"wall": [], "CPU": [], "wall, before": [], "CPU, before": []}
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(sides)[::-1]
        took = {name: timed(sides[name], envs[name], work / f"{r} {name}.log") for name in order}
        (ours_wall, ours_cpu), (peer_wall, peer_cpu) = took["evalharness"], took["yolo val"]
        ratios["wall"].append(ours_wall / peer_wall)
        ratios["CPU"].append(ours_cpu / peer_cpu)
        if args.before:
            ratios["wall, before"].append(took["evalharness before"][0] / peer_wall)
            ratios["CPU, before"].append(took["evalharness before"][1] / peer_cpu)
            print(
                f"  round {r + 1}: evalharness before {took['evalharness before'][0]:.2f} s "
                f"({took['evalharness before'][1]:.2f} s CPU)"
            )
        print(
            f"  round {r + 1} ({' then '.join(order)}): evalharness {ours_wall:.2f} s "
            f"({ours_cpu:.2f} s CPU), yolo val {peer_wall:.2f} s ({peer_cpu:.2f} s CPU), "
            f"ratio {ratios['wall'][-1]:.3f} (CPU {ratios['CPU'][-1]:.3f})",
            flush=True,
        )
    for kind, values in ratios.items():
        if not values:
            continue
        rounds = ", ".join(f"{x:.3f}" for x in values)
        print(f"evalharness / yolo val, {kind}: median {statistics.median(values):.3f} (rounds {rounds})")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
