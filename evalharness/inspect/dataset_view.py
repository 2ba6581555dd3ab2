"""``evalharness inspect DATASET``: what evalharness finds at a dataset path (a folder, a YOLO
data.yaml, a COCO instances JSON) — the format, the samples, the classes, the first ids and what a run
would score — before a run is spent on it. The facts come from :func:`evalharness.data.describe.
describe_dataset` (one describer per format); this module only renders them, escaped for the terminal."""

from __future__ import annotations

import os
from pathlib import Path

from evalharness.core.escape import terminal
from evalharness.data.dataset_reader import detect
from evalharness.data.describe import DatasetView

DATASET_SUFFIXES = (".yaml", ".yml", ".json")


def is_dataset_path(path: str) -> bool:
    """A folder, a data.yaml, an instances JSON or container shards (a file, glob or brace pattern
    named as parquet, tar or TFRecord shards) is a dataset; anything else is read as a model."""
    if os.path.isdir(path) or Path(path).suffix.lower() in DATASET_SUFFIXES:
        return True
    return detect(path)[0] != "folder"


def render_dataset(view: DatasetView) -> list[str]:
    names = " | ".join(view.class_names) + (" | ..." if view.classes > len(view.class_names) else "")
    lines = [
        f"{view.path}: {view.format}",
        f"samples: {view.samples}",
        f"classes: {view.classes or 'none'}" + (f" ({names})" if names else ""),
        f"first ids: {', '.join(view.first_ids) or 'none'}",
        f"ground truth: {view.ground_truth}",
        f"a run scores: {view.scores}",
        f"  python -m evalharness {view.run}",
    ]
    for key, value in view.details.items():
        if key == "notes":
            lines += [f"note: {note}" for note in value]
        elif value or not isinstance(value, (dict, list)):  # an empty count by reason says nothing
            lines.append(f"{key}: {value}")
    return [terminal(line, "") for line in lines]
