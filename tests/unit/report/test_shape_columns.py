"""A seg / pose run's mask and keypoint AP in every table a box run's AP is in: the sweep table, the
quantization tables and what a tracker charts, and a box run's tables keep their columns (no
empty ``segm_AP``). Run documents are written here (no assets, no model)."""

from __future__ import annotations

from evalharness.report.commands.sweep import job_row, metric_columns
from evalharness.report.tracking.mapping import run_metrics
from evalharness.report.views.quant_table import quant_sections
from evalharness.rundir.reader import Run

BOX = {"AP": 0.5, "AP50": 0.7, "num_scored": 5}
SEG = {**BOX, "segm_AP": 0.4, "segm_AP50": 0.6, "intervals": {"segm_AP": [0.3, 0.5]}}
POSE = {**BOX, "keypoints_AP": 0.55, "keypoints_AP50": 0.8}


def _run(tmp_path, label: str, metrics: dict, quant: str = "none") -> Run:
    doc = {
        "task": "coco",
        "status": "complete",
        "metrics": metrics,
        "latency_ms": {"inference": {"mean": 1.0, "p50": 1.0}},
        "provenance": {"model": {"name": label, "bytes": 1000, "quant": {"name": quant}}, "config": {}},
    }
    return Run(label, str(tmp_path / label), doc)


def _jobs(*runs: Run) -> list[dict]:
    return [{"run": r.label, "dir": r.dir, "params": {"quant": q}, "doc": r}
            for r, q in zip(runs, ("none", "int8", "none", "int8"), strict=False)]  # fmt: skip


def test_sweep_and_quantization_tables_show_mask_and_keypoint_ap_where_runs_hold_them(tmp_path):
    seg = _jobs(_run(tmp_path, "f", SEG), _run(tmp_path, "q", {**SEG, "segm_AP": 0.3}, "int8"))
    rows = [job_row(job, ["quant"]) for job in seg]
    assert metric_columns(seg, rows) == ["AP", "AP50", "segm_AP"] and rows[1]["segm_AP"] == 0.3
    headers = quant_sections(seg, rows, ["quant"])[0].headers
    assert "segm_AP" in headers and "Δ segm_AP vs float" in headers
    pose = _jobs(_run(tmp_path, "p", POSE))
    assert metric_columns(pose, [job_row(job, ["quant"]) for job in pose]) == ["AP", "AP50", "keypoints_AP"]


def test_a_box_model_s_tables_keep_their_columns(tmp_path):
    box = _jobs(_run(tmp_path, "f", BOX), _run(tmp_path, "q", BOX, "int8"))
    rows = [job_row(job, ["quant"]) for job in box]
    assert metric_columns(box, rows) == ["AP", "AP50"]
    headers = quant_sections(box, rows, ["quant"])[0].headers
    assert not any("segm" in h or "keypoints" in h for h in headers)


def test_a_tracker_charts_every_mask_stat_and_its_interval(tmp_path):
    charted = run_metrics(_run(tmp_path, "s", SEG))
    assert charted["segm_AP"] == 0.4 and charted["segm_AP50"] == 0.6
    assert (charted["segm_AP_ci_low"], charted["segm_AP_ci_high"]) == (0.3, 0.5)
