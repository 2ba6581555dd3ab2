"""datasets/prepare_*.py check a user's download with the run's own readers and write a manifest."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from conftest import ASSETS, REPO


def _prepare(script: str, args: list[str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "datasets" / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_prepare_imagenet_val50(tmp_path):
    proc = _prepare(
        "prepare_imagenet.py",
        ["--root", str(ASSETS / "imagenet/val50"), "--ground-truth", str(ASSETS / "imagenet/val.txt")],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "imagenet_val_manifest.json").read_text())
    assert manifest["count"] == 50 and manifest["classes"] == 47
    assert "dataset=ilsvrc2012_val" in proc.stdout


def test_prepare_coco_val25_and_missing_image(tmp_path):
    proc = _prepare(
        "prepare_coco.py",
        ["--images", str(ASSETS / "coco/val25"), "--annotations", str(ASSETS / "coco/instances_val25.json")],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((tmp_path / "coco_val2017_manifest.json").read_text())
    assert manifest["count"] == 25 and manifest["annotations"] == 198
    assert manifest["images_without_annotations"] >= 1
    partial = tmp_path / "images"
    shutil.copytree(ASSETS / "coco/val5", partial)
    proc = _prepare(
        "prepare_coco.py",
        ["--images", str(partial), "--annotations", str(ASSETS / "coco/instances_val25.json")],
        tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: 20 image(s) listed in ") and "are not in" in proc.stderr
