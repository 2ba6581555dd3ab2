"""Detector exports users bring, configured from the file alone (Ultralytics' embedded metadata).

modelgen models with known outputs (the ground-truth boxes of one real COCO image) run through the
real interpreter: a raw YOLO head, the same head with float16 weights (float32 I/O) and an export
with NMS inside ([1, N, 6]). Each carries Ultralytics' appended ``temp_meta.txt``, so ``model.path``
alone must pick the decoder, the class map and letterbox preprocessing, and all three layouts must
decode to the same boxes. Layout claims only: no accuracy is claimed for a real model here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import ASSETS, one_coco_image, run_inprocess

from evalharness.data.preprocess import preprocess_bytes
from evalharness.data.rebuilt_input import run_recipe
from evalharness.data.run_images import recorded_images
from evalharness.explain.sides import input_tensors
from evalharness.rundir.reader import load_run
from evalharness.runtime.model_file import read_model_file
from evalharness.runtime.modelgen import append_files, constant_output_model

IMAGE_ID, SIZE, W, H = 252219, 320, 640, 428  # 640x428, 7 annotations


@pytest.fixture(scope="module")
def one_image(tmp_path_factory):
    return one_coco_image(tmp_path_factory.mktemp("gt"), IMAGE_ID)


def _meta(categories) -> str:
    names = {i: c["name"] for i, c in enumerate(categories)}
    return str(  # what Ultralytics writes: str(dict), a Python literal
        {
            "description": "Ultralytics YOLOv8n model",
            "author": "Ultralytics",
            "task": "detect",
            "stride": 32,
            "batch": 1,
            "imgsz": [SIZE, SIZE],
            "names": names,
        }
    )


def _rows(anns, cats) -> np.ndarray:
    """[N, 84] raw rows: cx, cy, w, h in letterboxed input pixels, 80 class scores; fp16-exact."""
    scale = SIZE / max(W, H)
    pad_y = (SIZE - round(H * scale)) // 2
    rows = np.zeros((len(anns) + 3, 84), np.float32)
    for i, a in enumerate(anns):
        x, y, bw, bh = a["bbox"]
        rows[i, :4] = [(x + bw / 2) * scale, (y + bh / 2) * scale + pad_y, bw * scale, bh * scale]
        rows[i, 4 + cats.index(a["category_id"])] = 0.9 - 0.01 * i
    rows[len(anns) :, :4] = [160, 160, 10, 10]
    rows[len(anns) :, 4] = 0.0005  # below conf_threshold
    return rows.astype(np.float16).astype(np.float32)  # the float16 export then holds the same values


def _nms_rows(rows: np.ndarray, count: int) -> np.ndarray:
    """[1, 20, 6] x1, y1, x2, y2, score, class as an NMS-inside export emits them (zero padding)."""
    out = np.zeros((1, 20, 6), np.float32)
    for i in range(count):
        cx, cy, w, h = rows[i, :4]
        cls = int(np.argmax(rows[i, 4:]))
        out[0, i] = [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, rows[i, 4 + cls], cls]
    return out


def _run(tmp_path, model, ann_path):
    run_dir = tmp_path / model.rsplit("/", 1)[-1].removesuffix(".tflite")
    doc = run_inprocess(
        [
            "task=coco",
            "model=file",
            f"model.path={model}",
            f"dataset.root={ASSETS / 'coco/val25'}",
            f"dataset.annotations={ann_path}",
            "task.tflite_tool_ap=false",
        ],
        run_dir,
    )
    (pred,) = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines()]
    return doc, sorted(pred["detections"])


@pytest.fixture(scope="module")
def three_layouts(tmp_path_factory, one_image):
    tmp = tmp_path_factory.mktemp("yolo")
    ann_path, anns, categories = one_image
    cats = [c["id"] for c in categories]
    rows = _rows(anns, cats)
    meta = {"temp_meta.txt": _meta(categories)}
    shape = dict(input_shape=(1, SIZE, SIZE, 3), input_dtype="float32")
    models = {
        "raw": constant_output_model(str(tmp / "yolov8n_float32.tflite"), [rows.T[None]], **shape),
        "fp16": constant_output_model(
            str(tmp / "yolov8n_float16.tflite"), [rows.T[None]], const_dtype="float16", **shape
        ),
        "nms": constant_output_model(str(tmp / "yolov8n_nms.tflite"), [_nms_rows(rows, len(anns))], **shape),
    }
    return {k: _run(tmp, append_files(m, meta), ann_path) for k, m in models.items()}, len(anns)


def test_ultralytics_metadata_is_read(tmp_path, one_image):
    _, _, categories = one_image
    model = constant_output_model(str(tmp_path / "m.tflite"), [np.zeros((1, 84, 5), np.float32)])
    info = read_model_file(append_files(model, {"temp_meta.txt": _meta(categories)}))
    meta = info.ultralytics
    assert meta["task"] == "detect" and meta["imgsz"] == [SIZE, SIZE] and meta["stride"] == 32
    assert len(meta["names"]) == 80 and meta["names"][0] == "person" and meta["names"][79] == "toothbrush"
    assert info.attached_files == ["temp_meta.txt"] and info.labels is None


def test_raw_export_is_configured_from_the_file_alone(three_layouts):
    runs, n = three_layouts
    doc, dets = runs["raw"]
    assert doc["provenance"]["model"]["name"] == "yolov8n_float32"
    sources = doc["provenance"]["model"]["settings_source"]
    assert sources["decoder"] == "model file (Ultralytics task: detect, raw head)"
    assert sources["class_map"] == "model file (Ultralytics names)"
    assert sources["preprocess"] == "model file (Ultralytics export: yolo_letterbox)"
    assert doc["provenance"]["config"]["model"]["class_map"] == "coco80"
    assert doc["provenance"]["config"]["model"]["decoder"]["name"] == "yolo"
    assert doc["metrics"]["AP"] == pytest.approx(1.0) and len(dets) == n
    # explain's inputs (explain/sides.py through data/rebuilt_input.py) are the letterbox the run fed,
    # proved by the hash it recorded; the classifier's crop explain once fed in its place is not
    run = load_run(str(Path(doc["provenance"]["model"]["path"]).with_suffix("")), "A")
    (record,) = run.predictions
    recipe = run_recipe(run.provenance.preprocessing, run.provenance.model.inputs)
    assert recipe.spec.letterbox and (W, H) != (SIZE, SIZE)
    (fed,) = input_tensors(run, [record["id"]])
    assert recipe.digests(fed, record) == {"input_float_sha256": record["input_float_sha256"]}
    image = recorded_images(run.provenance.dataset).image(record["id"])
    crop = preprocess_bytes(image.read(), image.where, recipe.spec, recipe.inp)
    assert recipe.digests(crop, record) != {"input_float_sha256": record["input_float_sha256"]}


def test_float16_and_nms_inside_decode_to_the_raw_layouts_boxes(three_layouts):
    runs, n = three_layouts
    raw = runs["raw"][1]
    assert runs["fp16"][1] == raw  # float16 weights, float32 I/O: the very same detections
    fp16 = read_model_file(runs["fp16"][0]["provenance"]["model"]["path"])
    assert fp16.op_histogram["DEQUANTIZE"] == 1 and fp16.outputs[0].dtype == "float32"
    nms_doc, nms = runs["nms"]
    assert "NMS inside" in nms_doc["provenance"]["model"]["settings_source"]["decoder"]
    assert [d[:2] for d in nms] == [d[:2] for d in raw]  # category, score
    assert np.allclose([d[2:] for d in nms], [d[2:] for d in raw], atol=1e-3)  # boxes, original px
    assert nms_doc["metrics"]["AP"] == pytest.approx(1.0) and len(nms) == n


def test_the_label_set_is_the_80_names_whatever_the_file(three_layouts):
    """Three exports, three label files extracted from them: one label set (the names in order)."""
    runs, _ = three_layouts
    labels = [runs[k][0]["provenance"]["labels"] for k in ("raw", "fp16", "nms")]
    assert len({lab["path"] for lab in labels}) == 3 and {lab["count"] for lab in labels} == {80}
    assert len({lab["names_sha256"] for lab in labels}) == 1
