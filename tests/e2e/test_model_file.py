"""``model.path=X.tflite`` alone: settings read from the file, the run named after it, NCHW inputs.

Accuracy claims here run real models (shared assets) through the real interpreter and compare with
the preset runs image by image; the Ultralytics case uses a modelgen model carrying the metadata.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import MODELS, VAL50, run_cli, run_inprocess

from evalharness.core.errors import ConfigError
from evalharness.core.paths import bundled
from evalharness.runtime.model_file import read_model_file
from evalharness.settings.cli import precheck
from evalharness.settings.model_settings import given_on_command_line


def _predictions(run_dir):
    return [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]


def test_reader_on_shared_models():
    v2 = read_model_file(str(MODELS / "mobilenet_v2_1.0_224_quant.tflite"))
    assert v2.label_file == "imagenet_labels.txt" and len(v2.labels) == 1001 and v2.labels[0] == "background"
    assert v2.normalization == {"mean": [127.5], "std": [127.5]}
    assert v2.metadata["name"] == "ImageClassifier" and "TFLITE_METADATA" in v2.metadata_buffers
    assert v2.inputs[0].shape == [1, 224, 224, 3] and v2.inputs[0].dtype == "uint8"
    eff = read_model_file(str(MODELS / "efficientnet_lite0_fp32_nchw.tflite"))
    assert eff.labels is None and eff.normalization is None and eff.inputs[0].shape == [1, 3, 224, 224]
    assert eff.op_histogram["TRANSPOSE"] == 1 and eff.op_histogram["CONV_2D"] == 33
    ssd = read_model_file(str(MODELS / "ssd_mobilenet_v1_coco_quant_postprocess.tflite"))
    assert ssd.op_histogram["TFLite_Detection_PostProcess"] == 1 and len(ssd.outputs) == 4


def test_not_a_tflite_file_is_one_error(tmp_path):
    bad = tmp_path / "x.tflite"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(ConfigError, match="model.path=.*not a .tflite flatbuffer"):
        read_model_file(str(bad))


def rewrite_overrides(args: list[str]) -> list[str]:
    return precheck(args)[0]


def test_override_spellings():
    assert rewrite_overrides(["model.preprocess=efficientnet"]) == ["model/preprocess=efficientnet"]
    assert rewrite_overrides(["model.path=/m/x.tflite"]) == ["model.path=/m/x.tflite", "model=file"]
    kept = ["model=efficientnet_lite0", "model.path=/m/x.tflite", "model.preprocess.mean=[1,2,3]"]
    assert rewrite_overrides(kept) == kept
    assert given_on_command_line(["model/preprocess=efficientnet", "model.labels=l.txt"]) == {
        "preprocess",
        "labels",
    }


@pytest.mark.parametrize(
    "model,top1,top5",
    [
        ("mobilenet_v2_1.0_224_quant", 0.74, 0.92),
        ("tf2_mobilenet_v2_1.0_224_ptq", None, None),
        ("mobilenet_v1_0.25_128_quant", None, None),
    ],
)
def test_model_file_alone_equals_preset(tmp_path, val50_runs, model, top1, top5):
    preset_doc, preset_preds = val50_runs(model)
    doc = run_inprocess([*VAL50, "model=file", f"model.path={MODELS / model}.tflite"], tmp_path)
    assert doc["provenance"]["model"]["name"] == model
    sources = doc["provenance"]["model"]["settings_source"]
    assert sources["labels"] == "model file (imagenet_labels.txt)" and sources["name"] == "model file"
    assert doc["provenance"]["labels"]["count"] == 1001
    assert [p["topk"] for p in _predictions(tmp_path)] == [p["topk"] for p in preset_preds]
    assert doc["metrics"]["top1"] == preset_doc["metrics"]["top1"]
    assert doc["metrics"]["top5"] == preset_doc["metrics"]["top5"]
    if top1 is not None:
        assert (doc["metrics"]["top1"], doc["metrics"]["top5"]) == (top1, top5)


def test_cli_run_is_named_after_the_file(tmp_path):
    mine = tmp_path / "my_classifier.tflite"
    shutil.copy(MODELS / "mobilenet_v1_0.25_128_quant.tflite", mine)
    r = run_cli([f"model.path={mine}", "model.preprocess=tflite_tool", "task.num_images=3"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (metrics,) = (tmp_path / "outputs/imagenet/my_classifier/cpu").glob("*/metrics.json")
    doc = json.loads(metrics.read_text())
    assert doc["provenance"]["model"]["name"] == "my_classifier"
    sources = doc["provenance"]["model"]["settings_source"]
    assert sources["path"] == "command line" and sources["preprocess"] == "command line"
    assert sources["labels"] == "model file (imagenet_labels.txt)"


def test_sweep_over_files_names_each_job(tmp_path):
    for name in ("model_a", "model_b"):
        shutil.copy(MODELS / "mobilenet_v1_0.25_128_quant.tflite", tmp_path / f"{name}.tflite")
    paths = ",".join(str(tmp_path / f"{n}.tflite") for n in ("model_a", "model_b"))
    r = run_cli(["-m", f"model.path={paths}", "task.num_images=2", "hydra.sweep.dir=sweep"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir() and p.name[0].isdigit()) == [
        "0_imagenet_model_a_cpu",
        "1_imagenet_model_b_cpu",
    ]
    table = (tmp_path / "sweep/sweep.csv").read_text()
    assert "model_a" in table and "model_b" in table and "mobilenet_v1" not in table


def test_model_without_labels_is_one_error_naming_model_labels(tmp_path):
    r = run_cli(
        [f"model.path={MODELS / 'efficientnet_lite0_fp32.tflite'}", "task.num_images=1"], cwd=tmp_path
    )
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: model.labels:"), r.stderr


def test_nchw_model_equals_nhwc_image_by_image(tmp_path, val50_runs):
    nhwc_doc, nhwc_preds = val50_runs("efficientnet_lite0_fp32")
    doc = run_inprocess(
        [
            *VAL50,
            "model=file",
            f"model.path={MODELS / 'efficientnet_lite0_fp32_nchw.tflite'}",
            "model/preprocess=efficientnet",
            f"model.labels={bundled('imagenet_classes.txt')}",
        ],
        tmp_path,
    )
    assert doc["provenance"]["preprocessing"]["input"]["layout"] == "nchw"
    assert [p["topk"] for p in _predictions(tmp_path)] == [p["topk"] for p in nhwc_preds]
    assert (doc["metrics"]["top1"], doc["metrics"]["top5"]) == (0.8, 0.94)
    assert nhwc_doc["provenance"]["preprocessing"]["input"]["layout"] == "nhwc"


def test_layout_override_that_does_not_fit_is_an_error(tmp_path):
    r = run_cli(
        [
            f"model.path={MODELS / 'efficientnet_lite0_fp32_nchw.tflite'}",
            "model.preprocess=efficientnet",
            "model.preprocess.layout=nhwc",
            f"model.labels={bundled('imagenet_classes.txt')}",
            "task.num_images=1",
        ],
        cwd=tmp_path,
    )
    assert r.returncode == 2 and "model.preprocess.layout=nhwc" in r.stderr, r.stderr


def test_task_coco_runs_on_a_fresh_clone(tmp_path):
    """No models_dir, no download: the bundled SSD on the bundled COCO sample, exit 0."""
    r = run_cli(["task=coco", "hydra.run.dir=run"], cwd=tmp_path, env={"EVALHARNESS_MODELS": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "run/metrics.json").read_text())
    model = doc["provenance"]["model"]
    assert model["name"] == "ssd_mobilenet_v1_coco_quant_postprocess"
    assert model["sha256"] == "e4b118e5e4531945de2e659742c7c590f7536f8d0ed26d135abcfe83b4779d13"
    assert doc["metrics"]["num_scored"] == 4 and 0.0 < doc["metrics"]["AP"] <= 1.0


def test_command_line_wins_over_the_file_with_a_warning(tmp_path):
    labels = (tmp_path / "labels.txt").open("w")
    labels.write(Path(bundled("imagenet_labels_1001.txt")).read_text().replace("background", "unused", 1))
    labels.close()
    r = run_cli(
        [
            f"model.path={MODELS / 'mobilenet_v2_1.0_224_quant.tflite'}",
            f"model.labels={tmp_path / 'labels.txt'}",
            "model.preprocess.mean=[0.0,0.0,0.0]",
            "task.num_images=2",
            "hydra.run.dir=run",
        ],
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    log = r.stdout + r.stderr
    assert "wins over the 1001 labels the model file carries (imagenet_labels.txt), which differ" in log
    assert "model.preprocess.mean from the command line ([0.0, 0.0, 0.0]) wins over the model file's" in log
    doc = json.loads((tmp_path / "run/metrics.json").read_text())
    sources = doc["provenance"]["model"]["settings_source"]
    assert sources["labels"] == "command line" and sources["preprocess.mean"] == "command line"
    assert sources["preprocess.std"] == "model file (NormalizationOptions)"  # the key given, that key only
    assert doc["provenance"]["labels"]["path"] == str(tmp_path / "labels.txt")
    assert doc["provenance"]["preprocessing"]["mean"] == [0.0, 0.0, 0.0]
