"""``report diff`` / ``rescore`` on real COCO runs: SSD MobileNet v1 quant on 25 val2017 images."""

from __future__ import annotations

import json

import pytest
from conftest import ASSETS, MODELS
from test_report_classification import make_runs, report

from evalharness.stats.coco_eval import COCO_STAT_NAMES

COCO = [f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "task=coco", "dataset=coco_val25"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    return make_runs(tmp_path_factory, COCO, {d: [f"delegate={d}"] for d in ("reference", "cpu")})


def test_detection_diff_per_class_and_per_image(runs, capsys):
    code, out, _ = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "json")
    assert code == 0
    doc = json.loads(out)
    names = [r["name"] for r in doc["metrics"]]
    assert names == [*COCO_STAT_NAMES, "tflite_AP"]
    ap = doc["metrics"][0]
    assert round(ap["b"], 6) == 0.235952  # the CPU path's AP, equal to the independent reference figure
    det = doc["detection"]
    boxes = det["detections"]
    assert det["paired_images"] == 25 and boxes["a"] == boxes["b"] == 250
    assert (
        boxes["matched"] + boxes["only_a"] == boxes["a"] and boxes["matched"] + boxes["only_b"] == boxes["b"]
    )
    assert det["unmatched"] == sum(r["only_a"] + r["only_b"] for r in det["changed_images"])
    assert 0.5 <= det["mean_iou"] <= 1.0
    deltas = [abs(r["delta"]) for r in det["per_class"] if r["delta"] is not None]
    assert deltas == sorted(deltas, reverse=True) and deltas[0] > 0
    assert doc["verdict"].startswith(f"B's AP differs from A's by {ap['delta']:+.4f}")

    code, text, _ = report(capsys, "diff", runs["reference"], runs["cpu"])
    assert "Per-class AP (largest |delta| first)" in text and "Images with changed boxes" in text


def test_a_run_against_itself_matches_every_box(runs, capsys):
    code, out, _ = report(
        capsys, "diff", runs["cpu"], runs["cpu"], "--format", "json", "--fail-if", "unmatched>0"
    )
    doc = json.loads(out)
    assert code == 0 and doc["detection"]["unmatched"] == 0 and doc["detection"]["mean_iou"] == 1.0
    assert doc["verdict"].startswith("B detects the same boxes as A")


def test_gate_on_ap_and_unmatched_boxes(runs, capsys):
    code, _, err = report(
        capsys, "diff", runs["reference"], runs["cpu"], "--fail-if", "AP<-0.01", "--fail-if", "ap50<-1"
    )
    assert code == 1 and err.startswith("regression: AP<-0.01: AP 0.267") and "ap50" not in err
    code, _, err = report(capsys, "diff", runs["reference"], runs["cpu"], "--fail-if", "top1<0")
    assert code == 2 and "unknown metric 'top1'" in err


def test_html_has_latency_and_per_class_plots(runs, capsys, tmp_path):
    target = tmp_path / "coco.html"
    assert report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "html", "-o", target)[0] == 0
    page = target.read_text()
    assert page.count("<svg") == 2 and "Per-class AP change (B - A)" in page
    assert 'id="latency-' in page and 'id="classes-' in page  # matplotlib ids prefixed per plot


def test_rescore_reproduces_stored_coco_metrics_exactly(runs, capsys):
    code, out, _ = report(capsys, "rescore", runs["cpu"], "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["reproduced"], doc["mismatches"]
    assert {r["name"] for r in doc["headline"]} >= set(COCO_STAT_NAMES)
    assert doc["compared"] > 300  # 12 stats, per-class AP/AP50/num_gt, summary lines, TFLite-tool AP


def test_quantization_table_of_a_coco_sweep_prints_ap_deltas(runs, tmp_path):
    """The quantization table asks the COCO definition for its metrics and agreement. No float
    detector is among the shared assets (no real int8 COCO variant can be built here), so two real
    COCO runs are laid out as the jobs of a ``quant=none,fp16`` sweep: the report reads run files."""
    import shutil

    from evalharness.report.sweep import write_report

    sweep = tmp_path / "sweep"
    for i, (variant, delegate) in enumerate((("none", "reference"), ("fp16", "cpu"))):
        job = sweep / f"{i}_coco_{variant}"
        shutil.copytree(runs[delegate], job)
        (job / ".hydra").mkdir(exist_ok=True)
        (job / ".hydra" / "overrides.yaml").write_text(f"- quant={variant}\n- task=coco\n")
    write_report(str(sweep))
    md = (sweep / "sweep.md").read_text()
    table = md.split("## Table 1: quantization variants")[1].split("\n\n")[1].splitlines()
    assert table[0].startswith("| variant | AP | AP50 | Δ AP vs float | Δ AP50 vs float |")
    ap = {v: json.loads((sweep / f"{i}_coco_{v}" / "metrics.json").read_text())["metrics"]["AP"]
          for i, v in enumerate(("none", "fp16"))}  # fmt: skip
    fp16 = next(line for line in table if line.startswith("| fp16 |")).split(" | ")
    assert float(fp16[3]) == pytest.approx(ap["fp16"] - ap["none"], abs=1e-4) and float(fp16[3]) != 0
    assert "box-match rate" in table[0]
