"""task=coco end to end with real LiteRT models whose raw outputs are known boxes.

modelgen builds real .tflite files (run by the real interpreter) whose outputs are constant: the
ground-truth boxes of a real COCO image, laid out as a YOLO head or as an EfficientDet-Lite /
TF2 SSD post-process export. A perfect detector must score AP 1.0 through letterbox/stretch
geometry, the decoder, the class map and pycocotools, so any mapping error shows up.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ASSETS, one_coco_image, run_inprocess

from evalharness.runtime.modelgen import constant_output_model

IMAGE_ID = 252219  # 640x428, 7 annotations


@pytest.fixture(scope="module")
def one_image(tmp_path_factory):
    path, annotations, categories = one_coco_image(tmp_path_factory.mktemp("gt"), IMAGE_ID)
    return path, annotations, [c["id"] for c in categories]


def _run(tmp_path, model, ann_path, overrides):
    return run_inprocess(
        [
            "task=coco",
            f"model.path={model}",
            f"dataset.root={ASSETS / 'coco/val25'}",
            f"dataset.annotations={ann_path}",
            "task.tflite_tool_ap=false",
            *overrides,
        ],
        tmp_path / "run",
    )


def _yolo_rows(anns, cats, size=320, w=640, h=428, extra=4):
    """[N, 84] rows (cx, cy, bw, bh in letterboxed input pixels, 80 class scores) + weak noise anchors."""
    scale = size / max(w, h)
    pad_y = (size - round(h * scale)) // 2
    rows = np.zeros((len(anns) + extra, 84), np.float32)
    for i, a in enumerate(anns):
        x, y, bw, bh = a["bbox"]
        rows[i, :4] = [(x + bw / 2) * scale, (y + bh / 2) * scale + pad_y, bw * scale, bh * scale]
        rows[i, 4 + cats.index(a["category_id"])] = 0.9
    rows[len(anns) :, :4] = [160, 160, 10, 10]  # below conf_threshold: must be dropped
    rows[len(anns) :, 4] = 0.0005
    return rows


YOLO = ["model=yolov8n", "model.preprocess.resize=tflite_bilinear"]


def test_yolo_channels_first_float_is_perfect(tmp_path, one_image):
    ann_path, anns, cats = one_image
    head = _yolo_rows(anns, cats).T[None]  # [1, 84, N]
    model = constant_output_model(
        str(tmp_path / "yolo.tflite"), [head], input_shape=(1, 320, 320, 3), input_dtype="float32"
    )
    doc = _run(tmp_path, model, ann_path, YOLO)
    assert doc["metrics"]["AP"] == pytest.approx(1.0) and doc["metrics"]["AR100"] == pytest.approx(1.0)
    assert doc["metrics"]["num_detections"] == len(anns)  # noise anchors filtered by conf_threshold


def test_yolo_transposed_int8_output(tmp_path, one_image):
    ann_path, anns, cats = one_image
    head = _yolo_rows(anns, cats)[None]  # [1, N, 84]
    model = constant_output_model(
        str(tmp_path / "yolo_q.tflite"),
        [head],
        output_quant=[(1.5, -128)],
        input_shape=(1, 320, 320, 3),
        input_dtype="float32",
    )
    doc = _run(tmp_path, model, ann_path, YOLO)
    assert doc["provenance"]["model"]["outputs"][0]["dtype"] == "int8"
    assert doc["metrics"]["AP50"] == pytest.approx(1.0)  # boxes within one 1.5 px step


def test_efficientdet_lite_tf2_postprocess_order(tmp_path, one_image):
    """EfficientDet-Lite / TF2 detection exports: the SSD post-process outputs in TF2 order."""
    ann_path, anns, _ = one_image
    n = 25
    boxes, classes, scores = (
        np.zeros((1, n, 4), np.float32),
        np.zeros((1, n), np.float32),
        np.zeros((1, n), np.float32),
    )
    for i, a in enumerate(anns):
        x, y, bw, bh = a["bbox"]
        boxes[0, i] = [y / 428, x / 640, (y + bh) / 428, (x + bw) / 640]
        classes[0, i], scores[0, i] = a["category_id"] - 1, 0.8 - 0.01 * i
    count = np.array([len(anns)], np.float32)
    model = constant_output_model(
        str(tmp_path / "effdet.tflite"),
        [scores, boxes, count, classes],
        input_shape=(1, 320, 320, 3),
        output_names=[f"StatefulPartitionedCall:{k}" for k in range(4)],
    )
    doc = _run(tmp_path, model, ann_path, ["model=ssd_mobilenet_v1_coco_quant_postprocess"])
    assert doc["metrics"]["AP"] == pytest.approx(1.0) and doc["metrics"]["num_detections"] == len(anns)


def test_faster_coco_eval_backend_equals_pycocotools(tmp_path):
    pytest.importorskip("faster_coco_eval", reason="faster-coco-eval not installed (pip install '.[faster]')")
    common = [
        "task=coco",
        f"paths.models_dir={ASSETS / 'models'}",
        f"paths.data_dir={ASSETS}",
        "dataset=coco_val25",
    ]
    a = run_inprocess(common, tmp_path / "a")["metrics"]
    b = run_inprocess([*common, "task.backend=faster_coco_eval"], tmp_path / "b")["metrics"]
    assert b["backend"] == "faster_coco_eval"
    for name in ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"):
        assert b[name] == pytest.approx(a[name], abs=1e-12), name


def test_yolo_int8_against_a_perturbed_copy_names_the_error_types(tmp_path, one_image, capsys):
    """A YOLO int8 head and a copy with planted errors (two boxes shifted by half their width, one
    class swapped, one object dropped): ``report diff`` gives per-class ΔAP with its paired
    interval and TIDE's Δ per error type, where localisation, classification and missed grow."""
    from test_report_classification import report

    pytest.importorskip("tidecv")
    ann_path, anns, cats = one_image
    good = _yolo_rows(anns, cats)
    bad = good.copy()
    bad[:2, 0] += 0.5 * bad[:2, 2]  # localisation
    wrong = cats.index(anns[2]["category_id"])
    bad[2, 4 + wrong], bad[2, 4 + (wrong + 1) % 80] = 0.0, 0.9  # classification
    bad[3, 4:] = 0.0  # missed
    runs = {}
    for name, head in (("int8", good), ("perturbed", bad)):
        model = constant_output_model(
            str(tmp_path / f"{name}.tflite"), [head[None]], output_quant=[(1.5, -128)],
            input_shape=(1, 320, 320, 3), input_dtype="float32",
        )  # fmt: skip
        runs[name] = tmp_path / name
        run_inprocess(
            ["task=coco", f"model.path={model}", f"dataset.root={ASSETS / 'coco/val25'}",
             f"dataset.annotations={ann_path}", "task.tflite_tool_ap=false", "task.tide=true", *YOLO],
            runs[name],
        )  # fmt: skip
    capsys.readouterr()  # the runs' own lines
    code, out, _ = report(capsys, "diff", runs["int8"], runs["perturbed"], "--format", "json")
    det = json.loads(out)["detection"]
    tide = {row["type"]: row for row in det["analysis"]["tide"]}
    assert all(tide[t]["delta"] > 0 for t in ("Loc", "Cls", "Miss")), tide
    moved = [row for row in det["per_class"] if row["delta"]]
    assert moved and all(row["paired"]["interval"] is not None for row in moved)
    assert det["min_score_source"] == "run A's F1-optimal score threshold"
