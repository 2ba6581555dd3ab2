"""Input files truncated, replaced or removed while a run is in progress: the run never reports a
number as if nothing happened, and a resume refuses to mix the old files with the new."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ASSETS, MODELS
from test_resume import _wait_for_lines

VAL50 = ASSETS / "imagenet" / "val50"  # ground truth: ASSETS/imagenet/val.txt (covers any subset)


def _start(data: Path, run_dir: Path, *extra: str) -> subprocess.Popen:
    args = [
        f"paths.models_dir={MODELS}",
        "model=mobilenet_v2_1.0_224_quant",
        f"paths.data_dir={ASSETS}",
        "dataset=imagenet_val50",
        f"dataset.root={data}",
        "delegate=reference",
        "delegate.op_resolver=builtin_ref",  # ~0.2 s an image: slow enough to act mid-run
        "loop.workers=0",
        "loop.progress=false",
        f"hydra.run.dir={run_dir}",
        *extra,
    ]
    return subprocess.Popen(
        [sys.executable, "-m", "evalharness", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("action", ["truncate", "remove", "replace"])
def test_a_file_changed_mid_run_is_never_a_silent_result(tmp_path, action):
    data = tmp_path / "images"
    data.mkdir()
    images = sorted(VAL50.glob("*.JPEG"))[:12]
    for image in images:
        shutil.copy(image, data / image.name)
    run_dir = tmp_path / "run"
    proc = _start(data, run_dir)
    _wait_for_lines(run_dir / "predictions.jsonl", 3, proc)
    victim = data / images[-1].name
    if action == "truncate":
        victim.write_bytes(victim.read_bytes()[:1000])
    elif action == "remove":
        victim.unlink()
    else:
        shutil.copy(images[0], victim)  # another valid image under the same name
    _, err = proc.communicate(timeout=300)
    doc = json.loads((run_dir / "metrics.json").read_text())
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert proc.returncode == 1 and len(errors) == 1 and "Traceback" not in err, err
    if action == "replace":
        assert (
            doc["status"] == "invalid"
            and "dataset_files_stat changed while the run ran" in doc["stop_reason"]
        )
    else:
        assert doc["status"] == "partial" and victim.name in doc["stop_reason"]
    resumed = _start(data, run_dir, "loop.resume=true")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 2 and "dataset_files_stat" in err and "Traceback" not in err, err
