"""``report diff`` / ``rescore`` on real COCO runs: SSD MobileNet v1 quant on 25 val2017 images."""

from __future__ import annotations

import json
import re

import pytest
from conftest import ASSETS, MODELS, runs_fixture
from shared_runs import fake_run_dir
from test_report_classification import report

from evalharness.stats.coco_eval import COCO_STAT_NAMES

COCO = [f"paths.models_dir={MODELS}", f"paths.data_dir={ASSETS}", "task=coco", "dataset=coco_val25"]
COCO += ["task.tide=true"]  # TIDE is opt-in


runs = runs_fixture(COCO, {d: [f"delegate={d}"] for d in ("reference", "cpu")})


def test_detection_diff_per_class_and_per_image(runs, capsys):
    code, out, _ = report(
        capsys, "diff", runs["reference"], runs["cpu"], "--format", "json", "--min-score", "0"
    )
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
    # by default boxes count from what A would ship, its F1-optimal threshold, said in the table
    code, out, _ = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "json")
    shipped = json.loads(out)["detection"]
    assert shipped["min_score"] > 0 and shipped["min_score_source"] == "run A's F1-optimal score threshold"
    assert shipped["detections"]["a"] < boxes["a"] and len(shipped["changed_images"]) < len(
        det["changed_images"]
    )


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


def test_html_has_latency_per_class_and_analysis_plots(runs, capsys, tmp_path):
    """Latency, per-class ΔAP, all-class and per-class PR curves at two IoUs, TIDE bars and the
    confusion matrices, rendered by the real browser; the figures as SVG + PNG files (--figures)."""
    from test_report_sweep import dump_dom

    target, figures = tmp_path / "coco.html", tmp_path / "figures"
    code, _, err = report(
        capsys, "diff", runs["reference"], runs["cpu"], "--format", "html", "-o", target, "--figures", figures
    )
    assert code == 0 and "wrote " in err
    page = target.read_text()
    assert page.count("<svg") == 8 and "Per-class AP change (B - A)" in page
    assert 'id="latency-' in page and 'id="classes-' in page and 'id="tide-' in page  # ids prefixed per plot
    dom = dump_dom(target, tmp_path)
    for key in ("per_class", "tide", "f1", "confusion", "verdict"):
        assert f'<section id="{key}">' in dom
    assert "Precision-recall, all classes, IoU=0.50" in dom and "TIDE dAP50 points per error type" in dom
    assert "the classes whose AP changed most" in dom and "errors B-A: " in dom  # thumbnails say the types
    stems = (
        "confusion",
        "per_class_delta_ap",
        "pr_0.50",
        "pr_0.50-0.95",
        "pr_classes_0.50",
        "pr_classes_0.50-0.95",
        "tide",
    )
    assert sorted(p.name for p in figures.iterdir()) == sorted(
        f"{n}.{e}" for n in stems for e in ("png", "svg")
    )
    code, out, err = report(capsys, "diff", runs["reference"], runs["cpu"], "--figures", runs["cpu"] / "figs")
    assert (code, out) == (2, "") and err.startswith("error: --figures ") and err.count("\n") == 1


def test_one_runs_analysis_renders_in_the_browser(runs, capsys, tmp_path):
    from test_report_sweep import dump_dom

    target = tmp_path / "run.html"
    code, _, _ = report(capsys, "analysis", runs["cpu"], "--format", "html", "-o", target)
    assert code == 0 and target.read_text().count("<svg") == 7  # 2 + 2 PR curves, AP bars, TIDE, matrix
    dom = dump_dom(target, tmp_path)
    for key in ("per_class", "f1", "confusion", "tide"):
        assert f'<section id="{key}">' in dom
    code, text, _ = report(capsys, "analysis", runs["cpu"])
    assert re.search(r"person -> background +52\n", text) and re.search(r"missed +12.02 +110\n", text)


def _tidecv_on_files(run_dir):
    """tidecv's own loaders on the annotation file and the run's coco_results.json."""
    import matplotlib
    from tidecv import TIDE, datasets

    with matplotlib.rc_context():  # TIDE() restyles matplotlib globally: later tests' SVGs would change
        tide = TIDE()
    tide.evaluate(
        datasets.COCO(str(ASSETS / "coco/instances_val25.json")),
        datasets.COCOResult(str(run_dir / "coco_results.json")),
        mode=TIDE.BOX,
        name="run",
    )
    return tide.runs["run"].ap, tide.get_main_errors()["run"], tide.get_special_errors()["run"]


def test_tide_equals_tidecv_on_the_same_detections(runs):
    ours = json.loads((runs["cpu"] / "metrics.json").read_text())["metrics"]["analysis"]["tide"]
    ap, main, special = _tidecv_on_files(runs["cpu"])
    assert ours["available"] and ours["AP50"] == pytest.approx(ap / 100, abs=1e-12)
    assert ours["dAP"] == pytest.approx({k: v / 100 for k, v in main.items()}, abs=1e-12)
    assert ours["special_dAP"] == pytest.approx({k: v / 100 for k, v in special.items()}, abs=1e-12)
    assert round(100 * ours["dAP"]["Miss"], 2) == 12.02 and round(100 * ours["dAP"]["Cls"], 2) == 4.44


def _cocoeval(run_dir):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    gt = COCO(str(ASSETS / "coco/instances_val25.json"))
    evaluator = COCOeval(gt, gt.loadRes(str(run_dir / "coco_results.json")), "bbox")
    evaluator.evaluate()
    evaluator.accumulate()
    return evaluator


def test_per_class_ap_and_f1_threshold_equal_pycocotools_read_directly(runs):
    """Per-class AP/AP50/recall against COCOeval's arrays; the F1-optimal threshold recomputed here
    from evalImgs (IoU .50, area all, maxDets 100) with plain loops."""
    analysis = json.loads((runs["cpu"] / "metrics.json").read_text())["metrics"]["analysis"]
    ev = _cocoeval(runs["cpu"])
    table = {r["category_id"]: r for r in analysis["per_class"]}
    precision, recall = ev.eval["precision"], ev.eval["recall"]
    for k, cat in enumerate(ev.params.catIds):
        curve = precision[:, :, k, 0, -1]
        if (curve == -1).all():
            assert cat not in table
            continue
        assert table[cat]["AP"] == pytest.approx(curve[curve > -1].mean(), abs=1e-12)
        assert table[cat]["AP50"] == pytest.approx(curve[0][curve[0] > -1].mean(), abs=1e-12)
        assert table[cat]["recall50"] == pytest.approx(recall[0, k, 0, -1], abs=1e-12)
    aps = [r["AP"] for r in analysis["per_class"]]
    assert aps == sorted(aps, reverse=True)
    points, num_gt = [], 0
    for e in ev.evalImgs:
        if e is None or e["aRng"] != [0, 1e10]:
            continue
        num_gt += sum(1 for g in e["gtIgnore"] if not g)
        for score, match, ignore in zip(
            e["dtScores"][:100], e["dtMatches"][0], e["dtIgnore"][0], strict=False
        ):
            if not ignore:
                points.append((score, match > 0))
    best = (-1.0, None)
    for threshold in sorted({s for s, _ in points}, reverse=True):
        tp = sum(1 for s, hit in points if s >= threshold and hit)
        kept = sum(1 for s, _ in points if s >= threshold)
        f1 = 2 * tp / (kept + num_gt)  # = 2PR / (P + R)
        if f1 > best[0] + 1e-15:
            best = (f1, threshold)
    f1 = analysis["f1"]
    assert (f1["f1"], f1["score_threshold"], f1["num_gt"]) == (
        pytest.approx(best[0], abs=1e-12),
        best[1],
        num_gt,
    )


def test_diff_shows_error_types_per_class_intervals_and_confusions(runs, capsys):
    code, out, _ = report(capsys, "diff", runs["reference"], runs["cpu"], "--format", "json")
    det = json.loads(out)["detection"]
    boot = det["paired_bootstrap"]
    for row in det["per_class"]:  # the per-class interval is the paired bootstrap's own
        assert row["paired"]["interval"] == boot["per_class"][str(row["category_id"])]["interval"]
    tide = {r["type"]: r for r in det["analysis"]["tide"]}
    assert (
        tide["Cls"]["delta"] == pytest.approx(tide["Cls"]["b"] - tide["Cls"]["a"])
        and tide["Cls"]["delta"] > 0
    )
    changes = det["analysis"]["confusion"]["changes"]
    assert changes and all(c["delta"] == c["b"] - c["a"] != 0 for c in changes)
    assert det["analysis"]["f1"]["threshold_shift"] is not None
    code, text, _ = report(capsys, "diff", runs["reference"], runs["cpu"])
    for heading in (
        "TIDE error breakdown",
        "F1-optimal score threshold",
        "Confusion pairs that changed",
        "paired interval",
        "p (Holm)",
    ):
        assert heading in text


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

    from evalharness.report.commands.sweep import write_report

    sweep = tmp_path / "sweep"
    for i, (variant, delegate) in enumerate((("none", "reference"), ("fp16", "cpu"))):
        job = sweep / f"{i}_coco_{variant}"
        shutil.copytree(runs[delegate], job)
        fake_run_dir(job, files={".hydra/overrides.yaml": f"- quant={variant}\n- task=coco\n"})
    write_report(str(sweep))
    md = (sweep / "sweep.md").read_text()
    table = md.split("## Table 1: quantization variants")[1].split("\n\n")[1].splitlines()
    assert table[0].startswith("| variant | AP | AP50 | Δ AP vs float | Δ AP50 vs float |")
    ap = {
        v: json.loads((sweep / f"{i}_coco_{v}" / "metrics.json").read_text())["metrics"]["AP"]
        for i, v in enumerate(("none", "fp16"))
    }
    fp16 = next(line for line in table if line.startswith("| fp16 |")).split(" | ")
    assert float(fp16[3]) == pytest.approx(ap["fp16"] - ap["none"], abs=1e-4) and float(fp16[3]) != 0
    assert "box-match rate" in table[0]
