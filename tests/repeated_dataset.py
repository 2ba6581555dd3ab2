"""val50 repeated to any size under fresh names (symlinks) with a csv ground truth: large datasets
for the throughput and memory benchmarks and the calibration tests, without copying images."""

from __future__ import annotations

import csv
import os
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1].parent / "shared" / "assets"


def make_dataset(root: Path, n: int) -> Path:
    """``root/images/img000000.JPEG ...`` (n symlinks cycling through val50) + ``root/labels.csv``."""
    with open(ASSETS / "imagenet/val50/labels.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    (root / "images").mkdir(parents=True)
    with open(root / "labels.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["filename", "label"])
        for i in range(n):
            r = rows[i % len(rows)]
            name = f"img{i:06d}.JPEG"
            os.symlink(ASSETS / "imagenet/val50" / r["filename"], root / "images" / name)
            w.writerow([name, r["class_name"]])
    return root


def overrides(root: Path) -> list[str]:
    """The dataset overrides of a run over ``make_dataset(root, n)``."""
    return [
        f"dataset.root={root / 'images'}",
        f"dataset.ground_truth={root / 'labels.csv'}",
        "dataset.format=csv",
    ]
