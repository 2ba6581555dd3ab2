"""Where a cold evalharness run spends its time, thread by thread (py-spy; not a unit test).

    python benchmarks/thread_profile.py [--images 1000] [--threads 2] [--workers 1]

Samples every thread of ``python -m evalharness`` at 200 Hz with ``py-spy record --threads
--idle`` (install py-spy; it needs ptrace rights) and prints, per thread, the share of samples in
each activity: invoke, waiting for the next prepared sample, decode, resize, and so on. A main
thread that is mostly in ``invoke`` and a preparing thread that mostly waits mean the run is
bound by the interpreter; how much slower each invoke is than in the pure-invoke loop is then the
cost of sharing cores (bench_throughput.py prints that ceiling).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from bench_throughput import ASSETS, MODEL, make_dataset

ACTIVITIES = (  # first match from the innermost frame outwards names the sample
    ("invoke", "invoke (evalharness/runtime"),
    ("invoke", "Interpreter.invoke"),
    ("set/get tensors", "set_inputs"),
    ("set/get tensors", "get_outputs"),
    ("decode", "decode_rgb"),
    ("resize", "resize_bilinear_tflite"),
    ("crop", "crop_and_resize"),
    ("convert", "to_input_tensor"),
    ("score + write", "RunWriter"),
    ("score + write", "update (evalharness/tasks"),
    ("wait for a prepared sample", "prepared"),
    ("idle (queue full / thread pool)", "_worker"),
    ("idle (queue full / thread pool)", "wait (threading"),
)


def activity(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, marker in ACTIVITIES:
            if marker in frame:
                return name
    return "other (start-up, config, imports)"


def summarize(raw: Path) -> None:
    per_thread: dict[str, Counter] = defaultdict(Counter)
    for line in raw.read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")
        thread = frames[0].split(": ", 1)[-1]
        per_thread[thread][activity(frames[1:])] += int(count)
    for thread, counts in sorted(per_thread.items(), key=lambda kv: -sum(kv[1].values())):
        total = sum(counts.values())
        if total < 20 or thread.startswith("tqdm"):
            continue
        print(f"{thread}: {total} samples")
        for name, n in counts.most_common():
            print(f"    {100 * n / total:5.1f}%  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    if not shutil.which("py-spy"):
        sys.exit("error: py-spy is not installed (pip install py-spy)")
    with tempfile.TemporaryDirectory() as tmp:
        data = make_dataset(Path(tmp) / "data", args.images)
        raw = Path(tmp) / "profile.txt"
        cmd = [
            "py-spy", "record", "-r", "200", "--threads", "--idle", "-f", "raw", "-o", str(raw), "--",
            sys.executable, "-m", "evalharness", f"model={MODEL}", f"paths.models_dir={ASSETS / 'models'}",
            f"dataset.root={data / 'images'}", f"dataset.ground_truth={data / 'labels.csv'}",
            "dataset.format=csv", f"delegate.num_threads={args.threads}", f"loop.workers={args.workers}",
            "loop.progress=false", "loop.tensor_cache=false", f"hydra.run.dir={Path(tmp) / 'run'}",
        ]  # fmt: skip
        subprocess.run(cmd, check=True, capture_output=True)
        summarize(raw)


if __name__ == "__main__":
    main()
