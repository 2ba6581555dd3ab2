"""task=coco over a container of its images (webdataset shards of the images alone, the instances
JSON beside them), run as loop.parallel shard processes: each image's record, the metrics and the
content manifest equal those of the same images in a folder run in one process."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from conftest import MODELS, run_cli, run_inprocess

SAMPLE = Path(__file__).resolve().parents[2] / "datasets" / "sample" / "coco" / "images"
COCO = ["task=coco", f"paths.models_dir={MODELS}", "task.bootstrap_resamples=0", "task.analysis=false"]


def _records(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / "predictions.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}


def test_a_container_of_the_images_scores_as_the_folder_with_parallel_shards(tmp_path):
    shards = tmp_path / "wds"
    shards.mkdir()
    images = sorted(SAMPLE.glob("*.jpg"))
    for i, part in enumerate((images[:2], images[2:])):  # two shards: files scheme has two to split
        with tarfile.open(shards / f"val-{i:04d}.tar", "w") as tar:
            for path in part:
                tar.add(path, arcname=f"val2017/{path.name}")
    folder = run_inprocess([*COCO, "dataset.manifest=content"], tmp_path / "folder")
    proc = run_cli(
        [*COCO, f"dataset.root={shards}", "loop.parallel=2x1", f"hydra.run.dir={tmp_path / 'wds_run'}"],
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "wds_run" / "metrics.json").read_text())
    assert doc["metrics"] == folder["metrics"] and doc["merged"]["processes"] == 2
    dataset = doc["provenance"]["dataset"]
    assert dataset["container"] == "webdataset" and dataset["labels_read"] is False
    assert dataset["count"] == 4 and dataset["manifest_kind"] == "relative path + sha256"
    assert dataset["manifest_sha256"] == folder["provenance"]["dataset"]["manifest_sha256"]
    ours, theirs = _records(tmp_path / "wds_run"), _records(tmp_path / "folder")
    assert sorted(ours) == sorted(theirs) == [p.name for p in images]
    same = ("image_id", "detections", "unmapped", "input_sha256", "input_float_sha256")
    assert all({k: ours[i].get(k) for k in same} == {k: theirs[i].get(k) for k in same} for i in ours)
