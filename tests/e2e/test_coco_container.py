"""task=coco over a container of its images (webdataset shards of the images alone, the instances
JSON beside them), run as loop.parallel shard processes: each image's record and the COCO stats
equal those of the same images in a folder run in one process (the session's shared run)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from conftest import ASSETS, run_cli, runs_fixture
from test_report_coco import COCO

from evalharness.stats.coco_eval import COCO_STAT_NAMES

folder_runs = runs_fixture(COCO, {"cpu": ["delegate=cpu"]})  # test_report_coco's run: made once


def _records(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_a_container_of_the_images_scores_as_the_folder_with_parallel_shards(tmp_path, folder_runs):
    shards = tmp_path / "wds"
    shards.mkdir()
    images = sorted((ASSETS / "coco/val25").glob("*.jpg"))
    half = len(images) // 2
    for i, part in enumerate((images[:half], images[half:])):  # two shards: one a shard process
        with tarfile.open(shards / f"val-{i:04d}.tar", "w") as tar:
            for path in part:
                tar.add(path, arcname=f"val2017/{path.name}")
    quick = ["task.tide=false", "task.bootstrap_resamples=0", "task.analysis=false"]
    overrides = [*COCO, "delegate=cpu", *quick, f"dataset.root={shards}", "loop.parallel=2x1"]
    proc = run_cli([*overrides, f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)  # children: a CLI's
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "run" / "metrics.json").read_text())
    folder = json.loads((folder_runs["cpu"] / "metrics.json").read_text())
    assert doc["status"] == "complete" and doc["merged"]["processes"] == 2
    assert {k: doc["metrics"][k] for k in COCO_STAT_NAMES} == {
        k: folder["metrics"][k] for k in COCO_STAT_NAMES
    }
    dataset = doc["provenance"]["dataset"]
    assert dataset["container"] == "webdataset" and dataset["labels_read"] is False
    assert dataset["count"] == len(images) and dataset["manifest_kind"] == "relative path + sha256"
    ours, theirs = _records(tmp_path / "run"), _records(folder_runs["cpu"])
    assert sorted(ours) == sorted(theirs) == [p.name for p in images]
    same = ("image_id", "detections", "unmapped", "input_sha256", "input_float_sha256")
    assert all({k: ours[i].get(k) for k in same} == {k: theirs[i].get(k) for k in same} for i in ours)
