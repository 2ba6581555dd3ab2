"""A run on a split's held-out part against a run on the list it was cut from: compared on the
images both scored (both runs rescored there by the task's scorer), and a real mismatch still
refused (no assets: run documents and records are written here)."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_runs import fake_run_dir

from evalharness.core.tables import render_text
from evalharness.report.commands.diff import build_diff
from evalharness.report.commands.gate import evaluate, parse_rule
from evalharness.report.commands.sweep import add_baseline
from evalharness.report.runs import ReportError, comparability, definition_of
from evalharness.report.views import diff_view, pr_comment
from evalharness.report.views.quant_table import add_quant_columns
from evalharness.rundir.reader import Run

IDS = [f"c{i % 2}/img{i:02d}.png" for i in range(8)]
WHOLE = {"count": 8, "manifest_sha256": "w" * 64}


def _run(tmp_path: Path, label: str, ids: list[str], wrong: set[str], **dataset) -> Run:
    """An ImageNet run on ``ids`` that gets ``wrong`` wrong; its stored metrics from the task's scorer."""
    records = [
        {"id": i, "label": i[:2], "label_index": int(i[1]), "topk": [1 - int(i[1]), int(i[1])] if i in wrong
         else [int(i[1]), 1 - int(i[1])]}
        for i in ids
    ]  # fmt: skip
    fake_run_dir(tmp_path / label, predictions=records)
    digest = WHOLE["manifest_sha256"] if ids == IDS else label * 64
    identity = {"count": len(ids), "manifest_sha256": digest}
    doc = {
        "task": "imagenet",
        "status": "complete",
        "latency_ms": {"inference": {"mean": 1.0, "p50": 1.0}},
        "provenance": {
            "config": {"task": {"name": "imagenet", "top_k": 2, "num_images": 0}},
            "model": {"name": "m", "bytes": 1000, "quant": {"calibration": {"source": "dataset"}}},
            "dataset": {"name": "d", "manifest_kind": "relative path + size", "ground_truth_sha256": "g",
                        **identity, **dataset},
        },
    }  # fmt: skip
    run = Run(label, str(tmp_path / label), doc)  # type: ignore[arg-type]
    doc["metrics"] = definition_of(run).scorer().add_all(run.predictions).result()
    return run


HELD = IDS[1::4] + IDS[2::4] + IDS[3::4]  # the held-out part: every image but positions 0, 4


def _pair(tmp_path: Path, held: list[str] = HELD, **dataset) -> tuple[Run, Run]:
    split = {"fraction": 0.25, "scheme": "interleaved", "part": "held_out", "whole": WHOLE}
    a = _run(tmp_path, "A", IDS, {IDS[0], IDS[4]})  # wrong on the two images B's variant calibrated on
    b = _run(tmp_path, "B", sorted(held), {IDS[1]}, **{"split": split, **dataset})
    return a, b


def test_a_held_out_part_is_compared_on_the_images_both_runs_scored(tmp_path):
    a, b = _pair(tmp_path)
    comp = comparability(a, b)
    assert not comp.refused and comp.subset == "B"
    doc = build_diff(a, b, comp)
    why = "2 images calibrated run B's variant and are left out"
    assert doc["paired_on"] == {"count": 6, "left_out": 2, "why": why}
    top1 = next(r for r in doc["metrics"] if r["name"] == "top1")
    assert (top1["a"], top1["b"]) == (1.0, 5 / 6)  # A rescored on the 6 shared images: its 2 misses left out
    assert a.metrics["top1"] == 0.75  # the run itself (and its metrics.json) unchanged
    assert doc["classification"]["paired_images"] == 6
    text = render_text("diff", diff_view.sections(doc))
    note = f"compared on the 6 images both runs scored ({why})"
    assert text.count(note) == 1
    assert pr_comment.render_diff(doc, diff_view.sections(doc)).replace("\\'", "'").count(note) == 1
    gate = evaluate([parse_rule("top1<-0.1")], doc)[0]  # the gate tests the recomputed figures
    assert gate["failed"] and gate["tested"] == pytest.approx(-1 / 6)


def test_the_quantization_table_takes_its_delta_on_the_shared_images(tmp_path):
    a, b = _pair(tmp_path)
    jobs = [{"run": r.label, "doc": r} for r in (a, b)]
    rows = [{"run": r.label, "quant": q, "status": "complete", "top1": r.metrics["top1"],
             "latency_p50_ms": 1.0} for r, q in ((a, "none"), (b, "int8"))]  # fmt: skip
    add_quant_columns(jobs, rows, ["quant"])
    assert rows[1]["d_top1_vs_float"] == pytest.approx(-1 / 6) and rows[1]["vs_float_paired_on"]["count"] == 6
    assert rows[1]["paired_images"] == 6
    # --baseline quant=none: the change and its paired interval on the same shared images
    add_baseline(jobs, rows, ["quant"], {"quant": "none"}, ["top1"])
    assert rows[1]["d_top1"] == pytest.approx(-1 / 6) and rows[1]["d_top1_ci_low"] < -1 / 6
    assert rows[1]["baseline_paired_on"]["count"] == 6


def test_a_held_out_run_with_an_image_the_other_did_not_score_is_refused(tmp_path):
    a, b = _pair(tmp_path, held=[*HELD[:-1], "c1/other.png"])
    with pytest.raises(ReportError, match="scored 1 image.* run A did not"):
        build_diff(a, b, comparability(a, b))


@pytest.mark.parametrize(
    ("dataset", "refusal"),
    [
        ({"ground_truth_sha256": "other"}, "ground truth differs"),
        ({"split": {"fraction": 0.25, "part": "held_out", "whole": {**WHOLE, "manifest_sha256": "x" * 64}}},
         "did not score the list it was cut from"),
        ({"split": {"fraction": 0.25, "part": "held_out"}}, "did not score the list it was cut from"),
        ({"manifest_kind": "relative path + sha256"}, "dataset differs"),
    ],
)  # fmt: skip
def test_a_real_mismatch_is_still_refused(tmp_path, dataset, refusal):
    a, b = _pair(tmp_path, **dataset)
    comp = comparability(a, b)
    assert any(refusal in r for r in comp.refused)
