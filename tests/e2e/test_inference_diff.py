"""task=inference_diff on the CPU: seed-tool inputs, the seed's output lines, honest errors, checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import test_external_delegate
from conftest import ASSETS, MODELS, run_cli, run_inprocess, task_lines
from PIL import Image
from test_explain import EFFNET, MNV2, PLANTED_ADD, perturbed_copy

from evalharness.core.errors import RunStopped
from evalharness.core.tensors import TensorInfo
from evalharness.decoders.base import build_decoder
from evalharness.report.commands import entry as report_cli
from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.subgraph import ModelGraph
from evalharness.stats.decoded import DecodedScorer, compare_boxes
from evalharness.tasks.inference_diff.definition import OutputErrorScorer
from evalharness.tasks.inference_diff.live import output_error, seed_tool_inputs

delegate_lib = test_external_delegate.delegate_lib  # the fixture compiling the test delegate
two_output_model = test_external_delegate.two_output_model


@pytest.mark.parametrize(("dtype", "lo", "hi"), [("uint8", 0, 255), ("int8", -128, 127), ("float32", -1, 1)])
def test_seed_tool_inputs_range_and_determinism(dtype, lo, hi):
    info = TensorInfo("x", 0, (1, 32, 32, 3), dtype)
    a = seed_tool_inputs(np.random.default_rng([0, 1]), info)
    b = seed_tool_inputs(np.random.default_rng([0, 1]), info)
    assert a.dtype == np.dtype(dtype) and a.shape == (1, 32, 32, 3) and np.array_equal(a, b)
    assert a.min() >= lo and a.max() <= hi
    mid = lo + (hi - lo) * 0.5
    assert abs(float(a.astype(np.float64).mean()) - mid) < 0.05 * (hi - lo)  # N(0.5, 1/3) on [0, 1)


def test_output_error_checks_catch_what_an_average_hides():
    ref = np.linspace(-1, 1, 100)
    assert output_error(ref, ref)["avg"] == 0.0 and output_error(ref, ref)["cosine"] == pytest.approx(1.0)
    zero = output_error(ref, np.zeros(100))
    assert zero["test_abs_max"] == 0.0 and zero["avg"] == pytest.approx(0.505, abs=1e-3)
    nan = ref.copy()
    nan[3] = np.nan
    assert output_error(ref, nan)["nonfinite"] == 1
    assert output_error(ref, -ref)["cosine"] == pytest.approx(-1.0)


def test_cpu_vs_reference_on_quantized_model(tmp_path):
    doc = run_inprocess(
        [
            "task=inference_diff",
            "model=mobilenet_v2_1.0_224_quant",
            f"paths.models_dir={MODELS}",
            "task.num_runs=10",
        ],
        tmp_path,
    )
    out = doc["metrics"]["outputs"][0]
    assert doc["metrics"]["num_scored"] == 10
    # XNNPACK vs builtin kernels requantise differently: a few output steps of 1/256 differ, honestly > 0
    assert 0.0 <= out["avg_error"] < 0.01 and out["max_abs_error"] <= 0.1
    # a flat softmax quantised in 1/256 steps: a few flipped steps cost ~1 % cosine (measured min 0.989)
    assert 0.98 < out["min_cosine"] < 1.0 and not doc["metrics"]["failed_checks"]
    assert doc["reference"]["delegate"]["op_resolver"] == "builtin_without_default_delegates"
    assert doc["reference"]["delegate"]["coverage"]["ops_delegated"] == 0
    lines = task_lines(tmp_path)
    assert re.fullmatch(r"Reference run latency: avg=[\d.e+]+\(us\), std_dev=[\d.e+]+\(us\)", lines[1])
    assert re.fullmatch(r"OutputDiff\[0\]: avg_error=[\d.e+-]+, std_dev=[\d.e+-]+", lines[3])


def test_tripped_check_exits_nonzero_with_metrics_written(tmp_path):
    proc = run_cli(["task=inference_diff", "task.num_runs=2", "task.min_cosine=1.5"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "check(s) failed" in proc.stderr and "low_cosine" in proc.stderr
    assert list((tmp_path / "outputs").rglob("metrics.json"))


# --- decoded outputs (issue 20 item 5): classes and boxes compared, not only raw tensors -----------


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]


def test_decoded_classifier_cpu_vs_reference(tmp_path):
    """MobileNet v2 quant, XNNPACK vs builtin kernels: outputs differ by 1/256 steps, so the top-1
    class agrees on most random inputs, and the figures are the records' own."""
    doc = run_inprocess(
        ["task=inference_diff", f"model={MNV2}", f"paths.models_dir={MODELS}", "task.num_runs=20"], tmp_path
    )
    decoded = doc["metrics"]["decoded"]
    records = [r["decoded"] for r in _records(tmp_path)]
    assert decoded["kind"] == "classifier" and decoded["runs"] == 20
    assert decoded["top1_agree"] == sum(r["agree"] for r in records) >= 16  # measured 48 of 50
    assert decoded["changed_runs"] == [r["id"] for r in _records(tmp_path) if not r["decoded"]["agree"]]
    assert 0.6 <= decoded["top5_overlap"]["min"] <= decoded["top5_overlap"]["mean"] <= 1.0
    assert 0.0 < decoded["abs_score_change"]["max"] <= 0.1  # a few uint8 steps of 1/256
    last = task_lines(tmp_path)[-1]
    assert last.startswith(f"Decoded (classifier): top-1 agreement {decoded['top1_agree']}/20")


def test_decoded_detector_agrees_where_the_raw_class_tensor_cannot(tmp_path):
    """The seed's warning: SSD's classes output differs by whole class ids in its low-score boxes, so
    its raw cosine reads "wrong"; decoded, the confident boxes match with the same class, so the run
    passes with the raw check recorded as informational."""
    doc = run_inprocess(
        ["task=inference_diff", "model=ssd_mobilenet_v1_coco_quant_postprocess", "task.num_runs=8"], tmp_path
    )
    metrics = doc["metrics"]
    assert metrics["failed_checks"] == [] and doc["status"] == "complete"
    assert any("low_cosine" in f for f in metrics["informational_checks"])  # raw tensors: "wrong"
    assert all(out["checks"]["low_cosine"] for out in metrics["outputs"][:2])
    decoded = metrics["decoded"]
    assert decoded["kind"] == "detector" and decoded["match"] == "any class"
    assert decoded["min_score"] == 0.3 and decoded["iou_threshold"] == 0.5 and decoded["min_agreement"] == 0.9
    assert decoded["runs_with_ref_boxes"] >= 6 and decoded["ref_boxes"] >= decoded["runs_with_ref_boxes"]
    assert decoded["matched"] >= decoded["ref_boxes"] - 1 and decoded["class_agreement"] == 1.0
    assert decoded["box_agreement"] >= 0.9
    assert decoded["iou"]["min"] > 0.9 and decoded["abs_score_change"]["max"] < 0.1
    records = [r["decoded"] for r in _records(tmp_path)]
    assert decoded["lost"] == sum(r["lost"] for r in records)
    assert decoded["new"] == sum(r["new"] for r in records)
    results = "\n".join(task_lines(tmp_path))
    assert "Decoded (detector" in results and "Raw checks judged decoded instead" in results


def test_detector_judged_by_its_decoded_boxes():
    """The scorer (pure records -> metrics): a detector losing boxes fails the decoded check while
    its raw low cosine stays informational; NaN in a raw output still fails; a classifier keeps its
    raw cosine check."""
    raw = {"avg": 0.1, "max": 1.0, "p99": 1.0, "nonfinite": 0, "cosine": 0.5}
    raw |= {"test_abs_max": 1, "ref_abs_max": 1}
    box = {"ref_boxes": 4, "test_boxes": 2, "matched": 2, "lost": 2, "new": 0, "ious": [0.9, 0.8]}

    def scored(kind, nonfinite=0, same_class=2):
        scorer = OutputErrorScorer(["boxes"], 0.95, 1e-6, DecodedScorer(kind), 0.9)
        decoded = {**box, "same_class": same_class, "score_changes": [0.0, 0.1]} if kind else None
        scorer.add({"id": "run0", "outputs": [{**raw, "nonfinite": nonfinite}], "decoded": decoded})
        return scorer.result()

    detector = scored("detector")
    assert detector["informational_checks"] == ["boxes: low_cosine"]
    assert detector["decoded"]["box_agreement"] == 0.5
    assert detector["failed_checks"] == ["decoded: box agreement 50.0% < 90%"]
    assert scored("detector", nonfinite=3)["failed_checks"][0] == "boxes: nan_or_inf"
    assert scored(None)["failed_checks"] == ["boxes: low_cosine"] and not scored(None)["informational_checks"]


def test_planted_wrong_op_lowers_class_agreement_and_report_diff_shows_it(delegate_lib, tmp_path, capsys):
    """EfficientNet-Lite0 on CPU agrees with the reference on every run; the test external delegate
    adding 2 to one ADD's output (a planted defect) flips most top-1 classes; report diff shows both."""
    tensor = ModelGraph(str(MODELS / f"{EFFNET}.tflite")).ops[PLANTED_ADD].outputs[0]
    common = ["task=inference_diff", f"model={EFFNET}", f"paths.models_dir={MODELS}", "task.num_runs=10"]
    clean = run_inprocess(common, tmp_path / "clean")["metrics"]["decoded"]
    planted = run_inprocess(
        [
            *common,
            "task.fail_on_check=false",
            "delegate=external",
            f"delegate.external_delegate_path={delegate_lib}",
            f"delegate.external_delegate_options='claim:add;only_output:{tensor};bias:2'",
        ],
        tmp_path / "planted",
    )["metrics"]["decoded"]
    assert clean["top1_agreement"] == 1.0 and clean["top5_overlap"]["min"] == 1.0
    assert planted["top1_agreement"] <= 0.7 and planted["top5_overlap"]["mean"] < 0.8  # measured 0.4, 0.44
    assert planted["abs_score_change"]["mean"] > 100 * clean["abs_score_change"]["mean"]
    capsys.readouterr()  # the runs' own output
    code = report_cli.main(["diff", str(tmp_path / "clean"), str(tmp_path / "planted"), "--format", "json"])
    assert code == 0
    comparison = json.loads(capsys.readouterr().out)
    found = json.dumps(comparison)
    assert '"top1_agreement": 1.0' in found and f'"top1_agreement": {planted["top1_agreement"]}' in found


def test_no_decoder_says_raw_tensors_only(two_output_model, tmp_path):
    """Two outputs and no decoder preset: said in the metrics, never silently left out. (The model's
    outputs are constant, so the run is invalid by its output checks; its metrics are written.)"""
    overrides = ["task=inference_diff", f"model.path={two_output_model}", "task.num_runs=2"]
    with pytest.raises(RunStopped):
        run_inprocess(overrides, tmp_path)
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert doc["metrics"]["decoded"] == {"kind": "none", "note": "no decoder: raw tensors only"}
    assert task_lines(tmp_path)[-1] == "Decoded: no decoder: raw tensors only"


def test_box_comparison_matches_any_class_and_thresholds_the_reference_only():
    ref = [[3, 0.9, 0.1, 0.1, 0.2, 0.2], [5, 0.31, 0.5, 0.5, 0.2, 0.2], [7, 0.1, 0.8, 0.8, 0.1, 0.1]]
    test = [[4, 0.88, 0.1, 0.1, 0.2, 0.21], [5, 0.29, 0.5, 0.5, 0.2, 0.2], [9, 0.6, 0.0, 0.7, 0.1, 0.1]]
    got = compare_boxes(ref, test, min_score=0.3)
    # the class-3 box became class 4 in place: one matched box, class disagreement, not lost + new;
    # the 0.31 box scored 0.29 is a score change; the low reference box is not compared; 0.6 is new
    assert (got["ref_boxes"], got["matched"], got["same_class"], got["lost"], got["new"]) == (2, 2, 1, 0, 1)
    assert got["ious"][0] == pytest.approx(0.04 / 0.042) and got["score_changes"][1] == pytest.approx(-0.02)


def test_perturbed_detector_loses_its_boxes_decoded(tmp_path):
    """A copy of SSD MobileNet with one conv's weights replaced (a planted defect) on real COCO images:
    the decoded comparison loses boxes that the unchanged model keeps exactly."""
    src = MODELS / "ssd_mobilenet_v1_coco_quant_postprocess.tflite"
    bad = perturbed_copy(src, tmp_path / "perturbed.tflite", 10)
    images = sorted((ASSETS / "coco" / "val5").glob("*.jpg"))[:3]
    same, planted = [], []
    for image in images:
        ref = _ssd_boxes(src, image)
        same.append(compare_boxes(ref, _ssd_boxes(src, image), 0.5))
        planted.append(compare_boxes(ref, _ssd_boxes(bad, image), 0.5))
    assert all(r["matched"] == r["ref_boxes"] and min(r["ious"], default=1.0) == 1.0 for r in same)
    lost = sum(r["lost"] for r in planted)
    assert sum(r["ref_boxes"] for r in planted) >= 5 and lost >= sum(r["ref_boxes"] for r in planted) // 2


def _ssd_boxes(path: Path, image: Path) -> list:
    model = load_model(str(path), plan_delegate({"name": "cpu"}, "host"), "litert", None)
    decoder = build_decoder("ssd_postprocess", {})
    decoder.bind(model.outputs, (300, 300), str(path))
    pixels = np.asarray(Image.open(image).convert("RGB").resize((300, 300)), np.uint8)[None]
    model.set_inputs([pixels])
    model.invoke()
    return decoder.decode(model.get_outputs()).rows()
