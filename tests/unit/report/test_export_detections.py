"""report export of a COCO run: one row per detection (issue 43: all of an image's detections were
packed into one csv cell), an image without detections keeps one row."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from evalharness.report.commands.export import _expanded, render
from evalharness.rundir.reader import load_run

COCO_RUN = Path(__file__).resolve().parents[2] / "fixtures" / "runs_schema1" / "coco"
COLUMNS = [f"detections.{n}" for n in ("category_id", "score", "x", "y", "w", "h")]


def test_a_coco_export_has_one_row_per_detection():
    run = load_run(str(COCO_RUN), "A")
    rows = list(csv.DictReader(io.StringIO(render(run, "csv"))))
    records = [json.loads(line) for line in (COCO_RUN / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == sum(max(len(r["detections"]), 1) for r in records)
    assert "detections" not in rows[0] and all(c in rows[0] for c in COLUMNS)
    first = records[0]["detections"][0]
    assert [float(rows[0][c]) for c in COLUMNS] == first and rows[0]["id"] == records[0]["id"]


def test_an_image_without_detections_keeps_one_row():
    (row,) = _expanded({"id": "a.jpg", "detections": []}, "detections", ("category_id", "score"))
    assert row == {"id": "a.jpg", "detections.category_id": None, "detections.score": None}
