"""``python -m evalharness.explain``: real runs on val50, real models, planted defects.

Every test runs the real interpreter on the shared assets. The planted defects are made here: a
copy of MobileNet v2 quant with one CONV_2D's weights replaced, and the test external delegate
computing one ADD of EfficientNet-Lite0 wrongly (``only_output`` + ``bias``); explain must name
exactly that op.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import flatbuffers
import numpy as np
import pytest
import test_external_delegate
from ai_edge_litert import schema_py_generated as schema
from conftest import MODELS, VAL50, runs_fixture
from test_report_coco import COCO as COCO_VAL25

from evalharness.explain.__main__ import main
from evalharness.explain.answers import Answers
from evalharness.explain.explainer import COMPARE_OPTIONS
from evalharness.explain.sides import ExplainError
from evalharness.explain.trace import Dequantizer
from evalharness.report.views.explain_location import explain_dir
from evalharness.rundir.reader import Run
from evalharness.runtime import load_model, plan_delegate
from evalharness.runtime.subgraph import ModelGraph

MNV2 = "mobilenet_v2_1.0_224_quant"
EFFNET = "efficientnet_lite0_fp32"
PLANTED_OP = 30  # a CONV_2D in the middle of MobileNet v2
PLANTED_ADD = 23  # a residual ADD of EfficientNet-Lite0

delegate_lib = test_external_delegate.delegate_lib  # the fixture compiling the test delegate
two_output_model = test_external_delegate.two_output_model


# (name, *overrides) -> a val50 run directory, made once per session; a run stopped as invalid
# (NaN outputs, what explain is for) is kept
runs = runs_fixture(VAL50, keep_invalid=True)


def _explain(a: Path, b: Path, out: Path, *extra: str) -> dict:
    assert main([str(a), str(b), "--out", str(out), *extra]) == 0
    return json.loads((out / "explain.json").read_text())


def perturbed_copy(src: Path, dst: Path, op_index: int) -> Path:
    """``src`` with op ``op_index``'s weights (its second input) replaced by random values."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(src.read_bytes()), 0)
    sub = model.subgraphs[0]
    buf = model.buffers[sub.tensors[sub.operators[op_index].inputs[1]].buffer]
    buf.data = np.random.default_rng(0).integers(0, 256, len(buf.data)).astype(np.uint8)
    builder = flatbuffers.Builder(1 << 20)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    dst.write_bytes(builder.Output())
    return dst


def test_sub_models_reproduce_the_whole_model(tmp_path):
    """The exposed model and a suffix fed the exposed tensors answer exactly as the model itself."""
    path = str(MODELS / f"{MNV2}.tflite")
    graph, plan = ModelGraph(path), plan_delegate({"name": "reference"})
    x = np.random.default_rng(1).integers(0, 256, (1, 224, 224, 3)).astype(np.uint8)
    whole = load_model(path, plan)
    whole.set_inputs([x])
    whole.invoke()
    expected = whole.get_outputs()[0]
    work = str(tmp_path)
    exposed = load_model(graph.write_exposed(f"{work}/exposed.tflite"), plan)
    exposed.set_inputs([x])
    exposed.invoke()
    acts = {info.index: v for info, v in zip(exposed.outputs, exposed.get_outputs(), strict=True)}
    np.testing.assert_array_equal(acts[graph.outputs[0]], expected)
    assert len(exposed.outputs) == len(graph.ops)  # every op output, the graph output first
    suffix = load_model(graph.write(f"{work}/suffix.tflite", 40, len(graph.ops), list(graph.outputs)), plan)
    assert sorted(i.index for i in suffix.inputs) == sorted(graph.crossing(40))
    suffix.set_inputs([acts[i.index] for i in suffix.inputs])
    suffix.invoke()
    np.testing.assert_array_equal(suffix.get_outputs()[0], expected)


def test_cpu_vs_reference_bisection_names_an_op(runs, tmp_path):
    ref = runs("mnv2_reference", f"model={MNV2}", "delegate=reference")
    cpu = runs("mnv2_cpu", f"model={MNV2}", "delegate=cpu")
    doc = _explain(ref, cpu, tmp_path / "out")
    changed = [i for i in doc["images"] if i["group"] == "changed"]
    assert len(changed) == doc["changed_total"] >= 1
    assert all(i["reproduced"] and i["a_top1"] != i["b_top1"] for i in changed)
    assert sum(i["group"] == "control" for i in doc["images"]) == len(changed)
    b = doc["bisection"]
    k = b["split_op"]
    assert 0 <= k < len(doc["ops"]) == 66
    # decoded: a flip between close classes (uint8 softmax steps of 1/256), the control answers unchanged
    for image in doc["images"]:
        d = image["decoded"]
        if image["group"] == "changed":
            assert d["b_score"] >= d["b_score_of_a_top1"] and d["a_score"] < 0.6
            assert d["restored_at_split"] == (image["id"] in b["restored_at_split"])
            assert d["restored_by_culprit"] == (image["id"] in b["culprits"][0]["restores"])
        else:
            assert abs(d["b_score_of_a_top1"] - d["a_score"]) <= 0.1 and "restored_at_split" not in d
    assert len(b["restored_at_split"]) == len(changed) and b["trials"][str(k)] == len(changed)
    assert b["trials"][str(k - 1)] < len(changed) if str(k - 1) in b["trials"] else True
    assert b["culprits"] and b["culprits"][0]["op"] <= k
    culprit = doc["ops"][b["culprits"][0]["op"]]
    text = (tmp_path / "out" / "explain.txt").read_text()
    assert f"op {culprit['index']} {culprit['type']}" in text
    # the error grows along the graph: B's whole path is further from A at the end than at op 0
    curve = [op["controls"]["accumulated"]["snr_db"] for op in doc["ops"]]
    assert curve[-2] < curve[0]
    explorer = json.loads((tmp_path / "out" / "model_explorer.json").read_text())
    assert set(explorer["results"]) == {op["tensor"] for op in doc["ops"]}
    assert explorer["results"][culprit["tensor"]]["bgColor"]
    assert (
        "<svg" in (tmp_path / "out" / "explain.html").read_text()
        or "matplotlib" in (tmp_path / "out" / "explain.html").read_text()
    )


def test_perturbed_weights_name_that_op(runs, tmp_path):
    copy = perturbed_copy(MODELS / f"{MNV2}.tflite", tmp_path / "perturbed.tflite", PLANTED_OP)
    a = runs("mnv2_cpu", f"model={MNV2}", "delegate=cpu")
    b = runs("mnv2_perturbed", f"model={MNV2}", f"model.path={copy}", "delegate=cpu")
    doc = _explain(a, b, tmp_path / "out", "--max-changed", "4")
    assert doc["changed_total"] > 4 and sum(i["group"] == "changed" for i in doc["images"]) == 4
    assert doc["bisection"]["split_op"] == PLANTED_OP
    assert doc["bisection"]["culprits"][0]["op"] == PLANTED_OP
    assert len(doc["bisection"]["culprits"][0]["restores"]) == 4
    rows = doc["ops"]
    assert rows[PLANTED_OP - 1]["changed"]["accumulated"]["snr_db"] == "inf"  # same weights up to there
    assert rows[PLANTED_OP]["changed"]["local"]["snr_db"] < 10


@pytest.mark.parametrize("bias", ["2", "nan"])
def test_external_delegate_computing_one_op_wrongly_is_named(runs, delegate_lib, tmp_path, bias):
    """One ADD off by 2, or NaN (a delegate "fully delegated" yet returning NaN): that op is named."""
    tensor = ModelGraph(str(MODELS / f"{EFFNET}.tflite")).ops[PLANTED_ADD].outputs[0]
    a = runs("eff_cpu", f"model={EFFNET}", "delegate=cpu")
    b = runs(
        f"eff_external_{bias}",
        f"model={EFFNET}",
        "delegate=external",
        f"delegate.external_delegate_path={delegate_lib}",
        f"delegate.external_delegate_options='claim:add;only_output:{tensor};bias:{bias}'",
    )
    doc = _explain(a, b, tmp_path / "out", "--max-changed", "3")
    assert doc["bisection"]["split_op"] == PLANTED_ADD
    assert doc["bisection"]["culprits"][0]["op"] == PLANTED_ADD
    planted = doc["ops"][PLANTED_ADD]
    assert planted["type"] == "ADD"
    others = [r["controls"]["local"] for r in doc["ops"] if r["index"] != PLANTED_ADD]
    assert max(o["max_abs"] for o in others) < 0.5  # every other op: the same CPU kernels on both sides
    assert all(o["nonfinite"] == 0 for o in others)
    summary = (tmp_path / "out" / "explain.txt").read_text()
    if bias == "nan":
        assert (
            planted["controls"]["local"]["nonfinite"] > 0 and planted["controls"]["local"]["snr_db"] == "-inf"
        )
        assert f"op {PLANTED_ADD} ADD is the first whose output on B's path is not finite" in summary
        explorer = json.loads((tmp_path / "out" / "model_explorer.json").read_text())
        assert explorer["results"][planted["tensor"]]["value"] == -120.0
    else:
        assert planted["controls"]["local"]["max_abs"] == pytest.approx(2.0, rel=1e-3)
        assert "not finite" not in summary


def test_default_out_is_beside_b_linked_by_diff_and_never_overwritten(runs, tmp_path):
    from evalharness.report.commands.entry import main as report_main

    a = runs("mnv2_reference", f"model={MNV2}", "delegate=reference")
    b = runs("mnv2_cpu", f"model={MNV2}", "delegate=cpu")
    out = Path(explain_dir(str(a), str(b)))
    assert out.parent == b.parent and out.name == "explain_run_vs_run"
    before = sorted(p.name for p in b.iterdir())
    one = ["--max-changed", "1"]  # where it writes is the point here, not how much it explains
    assert main([str(a), str(b), *one]) == 0
    assert sorted(p.name for p in b.iterdir()) == before  # the run itself is not touched
    first = (out / "explain.json").read_text()
    assert main([str(a), str(b), *one]) == 2  # never overwritten
    assert (out / "explain.json").read_text() == first
    page = tmp_path / "diff.html"
    assert report_main(["diff", str(a), str(b), "--format", "html", "--output", str(page)]) == 0
    assert f'href="file://{out / "explain.html"}"' in page.read_text()


def _cli(a: Path, b: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalharness.explain", str(a), str(b), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_other_images_exit_2(runs, tmp_path):
    a = runs("mnv2_cpu", f"model={MNV2}", "delegate=cpu")
    b = runs("mnv2_cpu_20", f"model={MNV2}", "delegate=cpu", "task.num_images=20")
    proc = _cli(a, b, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("error:") == 1 and "sample count differs: 50 vs 20" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_models_without_a_shared_graph_exit_2(runs, tmp_path):
    a = runs("mnv2_cpu", f"model={MNV2}", "delegate=cpu")
    b = runs("tf2_mnv2_cpu", "model=tf2_mobilenet_v2_1.0_224_ptq", "delegate=cpu")
    proc = _cli(a, b, tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("error:") == 1
    assert "share no graph" in proc.stderr and "Traceback" not in proc.stderr


def test_quantized_variant_matched_by_name(runs, tmp_path):
    """Float EfficientNet-Lite0 vs its int8 variant: tensors matched by name, A's float tensors
    requantized into B's int8 ones; every op compared, the changed images traced and explained."""
    a = runs("eff_cpu", f"model={EFFNET}", "delegate=cpu")
    b = runs("eff_int8", f"model={EFFNET}", "delegate=cpu", "quant=int8")
    doc = _explain(a, b, tmp_path / "out")
    # calibrated by min/max over the images, the int8 variant answers as the float model on val50
    # (docs/quantization.md): any answer that does change is traced and reproduced
    changed = [i for i in doc["images"] if i["group"] == "changed"]
    assert all(i["reproduced"] for i in changed)
    assert len(doc["ops"]) == 60
    local = [op["controls"]["local"]["snr_db"] for op in doc["ops"]]
    assert all(isinstance(v, float) and 10 < v < 80 for v in local)  # int8 error: finite, not noise
    summary = (tmp_path / "out" / "explain.txt").read_text()
    if not changed:
        assert "no answer changed" in summary
        return
    b_doc = doc["bisection"]
    assert b_doc["changed"] == len(changed)
    if b_doc["split_op"] is None:  # even A's logits, in B's int8 output, change the answer
        assert b_doc["trials"][str(len(doc["ops"]) - 1)] < len(changed)
        assert b_doc["output_saturated"]  # here: the int8 output clips the top logits, which tie
    assert f"of {len(changed)} changed answers" in summary


SSD = "ssd_mobilenet_v1_coco_quant_postprocess"
PLANTED_SSD_OP = 10  # a CONV_2D of SSD MobileNet's feature extractor


# (name, *overrides) -> a task=coco run of SSD MobileNet (the task's default model) on COCO val25,
# made once per session: the runs report_coco's tests read
coco_runs = runs_fixture(COCO_VAL25)


def test_detector_cpu_vs_reference_restores_the_changed_boxes(coco_runs, tmp_path):
    """SSD with TFLite_Detection_PostProcess (a custom op, cut and run like any other): the images
    report diff lists with boxes lost or new are re-run, compared decoded and restored by bisection."""
    a, b = coco_runs("ssd_reference", "delegate=reference"), coco_runs("ssd_cpu", "delegate=cpu")
    doc = _explain(a, b, tmp_path / "out", "--max-changed", "4")  # the bisection re-runs each changed image
    assert doc["answer"] == {"kind": "detector", "min_score": 0.0, "iou": 0.5}
    assert doc["ops"][-1]["type"] == "TFLite_Detection_PostProcess"
    changed = [i for i in doc["images"] if i["group"] == "changed"]
    assert len(changed) == min(doc["changed_total"], 4) >= 1 and all(i["reproduced"] for i in changed)
    for image in doc["images"]:
        d = image["decoded"]
        assert d["matched"] + d["lost"] == image["a_boxes"] and d["matched"] + d["new"] == image["b_boxes"]
        assert 0.5 <= d["min_iou"] <= d["mean_iou"] <= 1.0
    bisect = doc["bisection"]
    assert bisect["split_op"] is not None and len(bisect["restored_at_split"]) == len(changed)
    assert all(i["decoded"]["restored_at_split"] for i in changed)
    text = (tmp_path / "out" / "explain.txt").read_text()
    assert "A boxes" in text and "matched any class at IoU >= 0.5" in text
    # each changed image labelled with TIDE's error types (B - A), as report diff labels it
    assert all("errors B-A: " in i["change"] for i in changed) and "in the runs (report diff)" in text
    assert any(t in i["change"] for i in changed for t in ("Loc ", "Cls ", "Bkg ", "Both ", "Miss "))


def test_detector_with_perturbed_weights_names_that_op(coco_runs, tmp_path):
    copy = perturbed_copy(MODELS / f"{SSD}.tflite", tmp_path / "perturbed.tflite", PLANTED_SSD_OP)
    a = coco_runs("ssd_cpu", "delegate=cpu")
    b = coco_runs("ssd_perturbed", "delegate=cpu", f"model.path={copy}")
    doc = _explain(a, b, tmp_path / "out", "--max-changed", "3")
    assert doc["bisection"]["split_op"] == PLANTED_SSD_OP
    assert doc["bisection"]["culprits"][0]["op"] == PLANTED_SSD_OP
    changed = [i["decoded"] for i in doc["images"] if i["group"] == "changed"]
    assert len(changed) == 3 and all(d["lost"] + d["new"] >= 1 for d in changed)
    assert sum(d["lost"] for d in changed) >= 10  # the planted conv wipes out most of A's boxes


def test_outputs_no_decoder_understands_are_refused(two_output_model):
    """Two outputs and no model.decoder: neither a top-1 class nor boxes to restore (exit 2)."""
    run = Run("A", "/runs/a", {})  # a run that recorded no decoder (nor anything else)
    side = SimpleNamespace(graph=ModelGraph(two_output_model), run=run)
    with pytest.raises(ExplainError, match=r"2 output\(s\) and no model.decoder"):
        Answers(side, Dequantizer(), COMPARE_OPTIONS)
