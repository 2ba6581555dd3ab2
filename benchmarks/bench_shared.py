"""What several benchmarks measure the same way (not a benchmark itself): a default run of the app in
a fresh process, pure invoke on pre-made tensors, a naive loop one image at a time (Pillow's or
another preparation), and the machine's load average printed beside each figure. One definition,
so two benchmarks that report the same figure measure the same thing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO.parent / "shared" / "assets"
MODEL = "mobilenet_v2_1.0_224_quant"
sys.path.insert(0, str(REPO / "tests"))
from repeated_dataset import overrides  # noqa: E402


def run_app(data: Path, threads: int, *extra: str, model: str = MODEL, tree: Path | None = None) -> dict:
    """python -m evalharness in a fresh process (its own peak RSS); returns metrics.json. ``tree``:
    the checkout that runs (its ``PYTHONPATH`` and working folder; None: this process's)."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "evalharness",
            f"model={model}",
            f"paths.models_dir={ASSETS / 'models'}",
            *overrides(data),
            f"delegate.num_threads={threads}",
            "loop.progress=false",
            f"hydra.run.dir={out}",
            *extra,
        ]
        where = {} if tree is None else {"env": dict(os.environ, PYTHONPATH=str(tree)), "cwd": tree}
        subprocess.run(cmd, check=True, capture_output=True, text=True, **where)
        return json.loads((Path(out) / "metrics.json").read_text())


def naive_pillow(path: str, height: int, width: int):
    """What a user would write: Pillow decode, 87.5 % central crop, Pillow bilinear resize (not the
    TFLite tool's numbers: Pillow antialiases when downscaling), uint8 tensor."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as img:
        img = img.convert("RGB")
        w, h = img.size
        cw, ch = round(w * 0.875), round(h * 0.875)
        left, top = (w - cw) // 2, (h - ch) // 2
        img = img.crop((left, top, left + cw, top + ch)).resize((width, height), Image.BILINEAR)
        return np.asarray(img, dtype=np.uint8)[None]


def timed_loop(model, paths, make) -> float:
    """img/s of prepare -> set -> invoke -> get, one image at a time."""
    start = time.perf_counter()
    for p in paths:
        model.set_inputs([make(p)])
        model.invoke()
        model.get_outputs()
    return len(paths) / (time.perf_counter() - start)


def pure_invoke(model, tensors: list, n: int) -> tuple[float, float]:
    """img/s of set_inputs + invoke() on pre-made tensors, and CPU ms per invoke (all threads,
    XNNPACK's spin-waits included)."""
    start, cpu = time.perf_counter(), time.process_time()
    for k in range(n):
        model.set_inputs([tensors[k % len(tensors)]])
        model.invoke()
    return n / (time.perf_counter() - start), (time.process_time() - cpu) * 1000 / n


def load() -> str:
    """uptime's load averages (1, 5, 15 minutes)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
