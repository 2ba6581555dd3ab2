"""A detector whose classes mostly map to no annotated category fails, naming model.class_map,
instead of reporting an AP near 0 as a result."""

from __future__ import annotations

import json

from conftest import MODELS, run_cli

from evalharness.core.paths import BUNDLED_DIR


def test_unmapped_detections_fail_the_run_naming_the_class_map(tmp_path):
    args = [
        "task=coco",
        f"paths.models_dir={MODELS}",
        "model.class_map=labels",
        f"model.labels={BUNDLED_DIR / 'imagenet_labels_1001.txt'}",  # no COCO category name in it
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    proc = run_cli(args, tmp_path)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 1 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "model.class_map=labels maps to no annotated category" in errors[0]
    assert "annotation category ids 1.." in errors[0]
    doc = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert doc["metrics"]["num_detections"] == 0 and doc["metrics"]["num_unmapped_detections"] > 0


def test_a_higher_limit_lets_such_a_run_complete(tmp_path):
    args = [
        "task=coco",
        f"paths.models_dir={MODELS}",
        "model.class_map=labels",
        f"model.labels={BUNDLED_DIR / 'imagenet_labels_1001.txt'}",
        "task.max_unmapped_fraction=1.0",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    proc = run_cli(args, tmp_path)
    assert proc.returncode == 0, proc.stderr
