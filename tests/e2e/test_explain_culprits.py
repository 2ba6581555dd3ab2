"""explain beyond the first culprit: two planted defects are both named, each with the answers it
brings back; the op-type roll-up and the own-vs-inherited split; NaN mode names the first op whose
output goes non-finite on B's path while A's stays finite. Tiny generated models (seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import planted_models as planted
import pytest
from conftest import run_inprocess

from evalharness.core.errors import RunStopped
from evalharness.explain.__main__ import main
from evalharness.runtime.modelgen import conv_classifier_model


def _run(tmp_path: Path, name: str, model: Path, images: Path, *extra: str) -> Path:
    run_dir = tmp_path / name
    overrides = [*extra,
        f"model.path={model}",
        f"model.labels={planted.labels(tmp_path / 'labels.txt')}",
        "dataset=imagefolder",
        f"dataset.root={images}",
        "task.top_k=3",
    ]
    try:
        run_inprocess(overrides, run_dir)
    except RunStopped:  # NaN outputs: the run is invalid, and that is what explain is for
        assert json.loads((run_dir / "metrics.json").read_text())["status"] == "invalid"
    return run_dir


def _explain(a: Path, b: Path, out: Path) -> dict:
    assert main([str(a), str(b), "--out", str(out), "--max-changed", "30"]) == 0
    return json.loads((out / "explain.json").read_text())


def test_two_planted_defects_are_both_named_with_the_answers_each_restores(tmp_path, capsys):
    images = planted.images(tmp_path / "images", per_class=4)
    a = _run(tmp_path, "a", planted.gated_model(tmp_path / "a.tflite"), images)
    b = _run(tmp_path, "b", planted.gated_model(tmp_path / "b.tflite", defects=(1, 3)), images)
    doc = _explain(a, b, tmp_path / "explain")
    bis = doc["bisection"]
    assert bis["changed"] == 8 and bis["unexplained"] == []
    named = {c["op"]: c for c in bis["culprits"]}
    assert set(named) == {1, 3}
    assert sorted(named[1]["restores"]) == [f"red/{n:02d}_red.png" for n in range(4)]
    assert sorted(named[3]["restores"]) == [f"blue/{n:02d}_blue.png" for n in range(4)]
    assert [c["round"] for c in bis["culprits"]] == [1, 2] and bis["culprits"][1]["restored_total"] == 8
    types = {t["type"]: t for t in doc["op_types"]}
    assert (types["CONV_2D"]["culprits"], types["FULLY_CONNECTED"]["culprits"]) == (1, 1)
    assert types["CONV_2D"]["restores"] == types["FULLY_CONNECTED"]["restores"] == 4
    # own vs inherited: op 1 makes its error itself; MEAN (op 2) only carries op 1's on
    assert doc["ops"][1]["changed"]["split"]["own"] == 1.0
    assert doc["ops"][2]["changed"]["split"]["inherited"] > 0.99
    text = (tmp_path / "explain" / "explain.txt").read_text()
    assert "Culprits, ranked" in text and "By op type" in text and "own share" in text
    printed = capsys.readouterr()
    assert "brings back 4 more" in printed.out
    # its progress on stderr: the steps and the ops tried one by one (never in the results on stdout)
    assert "explain:" in printed.err and "each op alone" in printed.err and "each op alone" not in printed.out


def test_nan_mode_names_the_first_op_that_goes_non_finite_on_b(tmp_path):
    images = planted.images(tmp_path / "images", per_class=2)
    a = _run(tmp_path, "a", planted.gated_model(tmp_path / "a.tflite"), images)
    convs, fc = planted.gated_weights()
    convs[1][0][0, 0, 0, 0] = np.nan  # op 1 computes NaN into channel 0 of every image
    nan_model = Path(conv_classifier_model(str(tmp_path / "nan.tflite"), convs, fc))
    b = _run(tmp_path, "b", nan_model, images)
    doc = _explain(a, b, tmp_path / "explain")
    first = doc["first_nonfinite"]
    assert (first["op"], first["own"]) == (1, True) and len(first["images"]) == 6
    summary = (tmp_path / "explain" / "explain.txt").read_text()
    assert "NaN mode: op 1 CONV_2D is the first whose output on B's path is not finite" in summary



def test_a_bundle_replays_the_change_exactly_and_is_smaller_than_the_model(tmp_path, capsys):
    """The planted perturbed-conv pair: the bundle's sub-model is cut from the culprit on (fewer ops
    than the model), and its replay gives both sides' recorded outputs bit for bit, B's differing."""
    images = planted.images(tmp_path / "images", per_class=2)
    a = _run(tmp_path, "a", planted.gated_model(tmp_path / "a.tflite"), images)
    b = _run(tmp_path, "b", planted.gated_model(tmp_path / "b.tflite", defects=(1,)), images)
    bundle = tmp_path / "bundle"
    assert main([str(a), str(b), "--out", str(tmp_path / "explain"), "--bundle", str(bundle)]) == 0
    doc = json.loads((bundle / "bundle.json").read_text())
    assert doc["ops"]["culprit"] == 1 and doc["ops"]["first"] >= 1
    assert doc["ops"]["bundle"] < doc["ops"]["model"] == 4
    assert doc["images"] == ["red/00_red.png", "red/01_red.png"]
    assert [(c["a"], c["b"]) for c in doc["changed"]] == [(0, 1), (0, 1)]  # red -> green, by class index
    assert doc["sides"]["A"]["delegate"]["name"] == "cpu" and doc["environment"]["packages"]["ai-edge-litert"]
    assert f"bundle: {bundle}" in capsys.readouterr().out
    assert main(["--replay", str(bundle)]) == 0
    out = capsys.readouterr().out
    assert "reproduced exactly: 2 image(s)" in out and "B's differ from A's on 2" in out
    # a tampered recorded output is not reproduced: exit 1
    tensors = dict(np.load(bundle / "tensors.npz"))
    tensors["B_img0_out0"] = tensors["B_img0_out0"] + 1
    np.savez(bundle / "tensors.npz", **tensors)
    assert main(["--replay", str(bundle)]) == 1


def _vulkan() -> str | None:
    from evalharness.core.errors import DelegateUnavailableError
    from evalharness.runtime.compiled import check_vulkan

    try:
        check_vulkan()
    except DelegateUnavailableError as exc:
        return str(exc)
    return None


@pytest.mark.skipif(_vulkan() is not None, reason=f"no Vulkan driver: {_vulkan()}")
def test_a_gpu_vs_cpu_bundle_replays_exactly(tmp_path, capsys):
    """Logits 1000 + 0.01 x: fp16 on the GPU accelerator rounds the signal away (every answer ties
    at class 0); the bundle is the FULLY_CONNECTED alone, replayed on both paths bit for bit."""
    images = planted.images(tmp_path / "images", per_class=2)
    fc = (np.eye(3, dtype=np.float32) * 0.01, np.full(3, 1000.0, np.float32))
    model = Path(conv_classifier_model(str(tmp_path / "fp16.tflite"), [], fc))
    a = _run(tmp_path, "cpu", model, images)
    b = _run(tmp_path, "gpu", model, images, "delegate=gpu")
    bundle = tmp_path / "bundle"
    assert main([str(a), str(b), "--out", str(tmp_path / "explain"), "--bundle", str(bundle)]) == 0
    doc = json.loads((bundle / "bundle.json").read_text())
    assert (doc["ops"]["bundle"], doc["ops"]["model"]) == (1, 2) and len(doc["images"]) == 4
    assert doc["sides"]["B"]["delegate"]["name"] == "gpu"
    capsys.readouterr()
    assert main(["--replay", str(bundle)]) == 0
    assert "B's differ from A's on 4" in capsys.readouterr().out
