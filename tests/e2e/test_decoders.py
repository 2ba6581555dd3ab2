"""Detector decoders on real interpreter outputs: hand-checked YOLO candidates and the real SSD model."""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import pytest
from conftest import ASSETS, MODELS

from evalharness.core.errors import ConfigError, ModelMismatchError
from evalharness.data.preprocess import decode_rgb, resize_bilinear_tflite
from evalharness.decoders.base import DECODERS, Detections, build_decoder
from evalharness.decoders.nms import nms
from evalharness.runtime import TensorInfo, load_model, plan_delegate
from evalharness.runtime.modelgen import constant_output_model

CPU = plan_delegate({"name": "cpu", "num_threads": 1})
H, W = 320, 640  # YOLO test input: non-square, so x and y normalise differently
SSD = str(MODELS / "ssd_mobilenet_v1_coco_quant_postprocess.tflite")
CLASSIFIER = str(MODELS / "mobilenet_v1_0.25_128_quant.tflite")
SSD_IMAGE = ASSETS / "coco" / "val5" / "000000006818.jpg"

# Hand-written candidates, pixel xywh (centre) in the 640x320 input: (cx, cy, w, h, class, score)
CANDIDATES = [
    (100, 100, 50, 50, 0, 0.9),  # 0: kept
    (105, 100, 50, 50, 0, 0.8),  # 1: IoU 0.818 with 0, same class -> suppressed
    (130, 100, 50, 50, 0, 0.85),  # 2: IoU 0.25 with 0 -> kept
    (102, 100, 50, 50, 1, 0.7),  # 3: IoU 0.923 with 0 but class 1 -> kept unless class-agnostic
    (400, 200, 60, 40, 2, 0.6),  # 4: tie with 5 (IoU 0.935) -> suppressed by 5
    (402, 200, 60, 40, 2, 0.6),  # 5: kept: equal scores visit the higher index first
]
XYXY = {0: (75, 75, 125, 125), 2: (105, 75, 155, 125), 3: (77, 75, 127, 125), 4: (370, 180, 430, 220)}
XYXY[5] = (372, 180, 432, 220)
SCALE = np.array([W, H, W, H], dtype=np.float64)


def candidate_rows(n: int = 16, objectness: bool = False, normalised: bool = False) -> np.ndarray:
    """[n, 4 (+1) + 80] channels-last candidates: the hand-written ones then low-score noise."""
    rng = np.random.default_rng(1)
    rows = np.zeros((n, 84 + objectness), dtype=np.float32)
    rows[:, :4] = np.c_[rng.uniform(0, W, (n, 2)), rng.uniform(5, 60, (n, 2))]
    rows[np.arange(n), 4 + objectness + np.arange(n) % 80] = 0.0005  # below conf_threshold 0.001
    for i, (cx, cy, w, h, cls, score) in enumerate(CANDIDATES):
        rows[i, :4], rows[i, 4 + objectness :] = (cx, cy, w, h), 0.0
        rows[i, 4 + objectness + cls] = score
    if objectness:
        rows[:, 4] = 1.0
        rows[3, 4] = 0.5  # candidate 3: 0.7 x 0.5 = 0.35
    if normalised:
        rows[:, :4] /= np.array([W, H, W, H], dtype=np.float32)
    return rows


def run_model(path: str, hw: tuple[int, int] = (H, W)) -> tuple[list[TensorInfo], list[np.ndarray]]:
    model = load_model(path, CPU)
    model.set_inputs([np.full((1, *hw, 3), 128, np.uint8)])
    model.invoke()
    return model.outputs, model.get_outputs()


def decode_with(tmp_path, arrays, quant=None, params=None, hw=(H, W), name="yolo") -> Detections:
    path = constant_output_model(str(tmp_path / "m.tflite"), arrays, quant, input_shape=(1, *hw, 3))
    infos, outputs = run_model(path, hw)
    decoder = build_decoder(name, params or {})
    decoder.bind(infos, hw, path)
    return decoder.decode(outputs)


def expect(det: Detections, kept: list[int], scores: list[float] | None = None, atol: float = 0.0) -> None:
    """Boxes/classes of the hand-written candidates ``kept`` (in that order) and their scores."""
    want_scores = [np.float64(np.float32(CANDIDATES[i][5])) for i in kept] if scores is None else scores
    np.testing.assert_allclose(
        det.boxes, np.array([XYXY[i] for i in kept]) / SCALE, rtol=0, atol=atol + 1e-12
    )
    np.testing.assert_allclose(det.scores, want_scores, rtol=0, atol=atol)
    np.testing.assert_array_equal(det.classes, [CANDIDATES[i][4] for i in kept])
    assert det.boxes.dtype == det.scores.dtype == np.float64 and det.classes.dtype == np.int64


@pytest.mark.parametrize("layout", ["channels_first", "channels_last"])
def test_yolo_layouts_keep_the_hand_checked_boxes(tmp_path, layout):
    rows = candidate_rows()
    det = decode_with(tmp_path, [rows.T[None] if layout == "channels_first" else rows[None]])
    expect(det, [0, 2, 3, 5])


def test_yolo_explicit_layout_matches_auto(tmp_path):
    expect(
        decode_with(tmp_path, [candidate_rows().T[None]], params={"layout": "channels_first"}), [0, 2, 3, 5]
    )


def test_yolo_objectness_multiplies_the_class_score(tmp_path):
    det = decode_with(tmp_path, [candidate_rows(objectness=True)[None]])
    f = [np.float64(np.float32(s)) for s in (0.9, 0.85, 0.6)]
    expect(det, [0, 2, 5, 3], scores=[*f, np.float64(np.float32(0.7)) * 0.5])


def test_yolo_int8_output_is_dequantized(tmp_path):
    rows = candidate_rows(normalised=True)
    det = decode_with(tmp_path, [rows.T[None]], quant=[(1 / 255, -128, "int8")])
    expect(det, [0, 2, 3, 5], atol=1 / 255)


@pytest.mark.parametrize("normalized", ["auto", True])
def test_yolo_normalised_boxes_equal_pixel_boxes(tmp_path, normalized):
    det = decode_with(tmp_path, [candidate_rows(normalised=True)[None]], params={"normalized": normalized})
    expect(det, [0, 2, 3, 5], atol=1e-7)


def test_yolo_xyxy_box_format(tmp_path):
    rows = candidate_rows()
    rows[:, :4] = np.c_[rows[:, :2] - rows[:, 2:4] / 2, rows[:, :2] + rows[:, 2:4] / 2]
    expect(decode_with(tmp_path, [rows[None]], params={"box_format": "xyxy"}), [0, 2, 3, 5])


def test_yolo_class_agnostic_nms_suppresses_across_classes(tmp_path):
    expect(decode_with(tmp_path, [candidate_rows()[None]], params={"class_agnostic": True}), [0, 2, 5])


def test_yolo_max_detections_keeps_the_best(tmp_path):
    expect(decode_with(tmp_path, [candidate_rows()[None]], params={"max_detections": 2}), [0, 2])


def test_yolo_ties_keep_the_higher_anchor_index(tmp_path):
    rows = candidate_rows()
    rows[[4, 5]] = rows[[5, 4]]  # now the box of candidate 4 sits at anchor 5
    det = decode_with(tmp_path, [rows[None]])
    np.testing.assert_allclose(det.boxes[3], np.array(XYXY[4]) / SCALE)
    assert det.nms_ties == 1  # 5 suppressed 4 at an equal score: the other order keeps 4


def test_yolo_8400_anchors_smoke(tmp_path):
    rng = np.random.default_rng(2)
    rows = np.zeros((8400, 84), dtype=np.float32)
    rows[:, :4] = np.c_[rng.uniform(0, 640, (8400, 2)), rng.uniform(10, 100, (8400, 2))]
    rows[:, 4:] = rng.uniform(0, 0.02, (8400, 80))  # every anchor passes conf_threshold 0.001
    rows[4000:4006] = candidate_rows()[:6]
    det = decode_with(tmp_path, [rows.T[None]], hw=(640, 640))
    assert len(det) == 300
    np.testing.assert_array_equal(det.classes[:4], [0, 0, 1, 2])
    np.testing.assert_allclose(det.boxes[:4] * 640, [XYXY[i] for i in (0, 2, 3, 5)])
    assert np.all(np.diff(det.scores) <= 0)


def test_yolo_decode_8400_is_fast():
    decoder = build_decoder("yolo")
    decoder.bind([TensorInfo("out", 0, (1, 84, 8400), "float32")], (640, 640), "m.tflite")
    rng = np.random.default_rng(3)
    raw = np.concatenate([rng.uniform(0, 640, (1, 4, 8400)), rng.uniform(0, 1, (1, 80, 8400))], axis=1)
    start = time.perf_counter()
    det = decoder.decode([raw.astype(np.float32)])
    assert len(det) == 300 and time.perf_counter() - start < 2.0


def test_nms_threshold_is_strict_and_classes_are_respected():
    boxes = np.array([[0, 0, 2, 1], [1, 0, 3, 1], [0, 0, 2, 1]], dtype=np.float64)  # IoU(0,1) = 1/3
    scores = np.array([0.5, 0.5, 0.4])
    np.testing.assert_array_equal(nms(boxes, scores, 1 / 3), [1, 0])  # equal scores: higher index first
    np.testing.assert_array_equal(nms(boxes, scores, 0.3), [1])
    np.testing.assert_array_equal(nms(boxes, scores, 0.3, classes=np.array([0, 1, 1])), [1, 0])
    np.testing.assert_array_equal(nms(boxes, scores, 0.5, max_keep=1), [1])
    assert nms(np.zeros((0, 4)), np.zeros(0), 0.5).shape == (0,)


def greedy_reference(boxes, scores, threshold, classes=None, max_keep=None) -> list[int]:
    """The textbook loop, one kept box at a time: the oracle for the blocked implementation."""
    keep, alive = [], np.argsort(scores, kind="stable")[::-1]  # numpy's argsort()[::-1], deterministic
    while alive.size and (max_keep is None or len(keep) < max_keep):
        first, alive = alive[0], alive[1:]
        keep.append(first)
        lo, hi = (
            np.maximum(boxes[first, :2], boxes[alive, :2]),
            np.minimum(boxes[first, 2:], boxes[alive, 2:]),
        )
        inter = np.prod(np.clip(hi - lo, 0, None), axis=1)
        area = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)
        iou = inter / (area[first] + area[alive] - inter)
        same = True if classes is None else classes[alive] == classes[first]
        alive = alive[~((iou > threshold) & same)]
    return keep


@pytest.mark.parametrize("seed", range(6))
def test_nms_equals_the_textbook_loop(seed):
    rng = np.random.default_rng(seed)
    n = [0, 1, 300, 1100, 2500, 1500][seed]
    xy = rng.uniform(0, 300, (n, 2))
    boxes = np.c_[xy, xy + rng.uniform(1, 80, (n, 2))]
    scores = np.round(rng.uniform(0, 1, n), 2)  # many ties, across block boundaries
    classes = rng.integers(0, 3, n) if seed % 2 else None
    max_keep = [None, 5, 300, None, 700, 1200][seed]
    want = greedy_reference(boxes, scores, 0.5, classes, max_keep)
    np.testing.assert_array_equal(nms(boxes, scores, 0.5, classes, max_keep), want)


# ---- ssd_postprocess ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ssd_run():
    model = load_model(SSD, CPU)
    img = decode_rgb(str(SSD_IMAGE))
    model.set_inputs([resize_bilinear_tflite(img, 300, 300).astype(np.uint8)[None]])
    model.invoke()
    return model.outputs, model.get_outputs(), img.shape[:2]


def ssd_decode(infos, outputs, **params):
    decoder = build_decoder("ssd_postprocess", params)
    decoder.bind(infos, (300, 300), SSD)
    return decoder, decoder.decode(outputs)


def assert_same(a: Detections, b: Detections) -> None:
    for f in dataclasses.fields(Detections):
        np.testing.assert_array_equal(getattr(a, f.name), getattr(b, f.name))


def test_ssd_matches_the_reference_results(ssd_run):
    infos, outputs, (h, w) = ssd_run
    decoder, det = ssd_decode(infos, outputs)
    assert "TFLite_Detection_PostProcess:k name" in decoder.notes[0]
    results = json.loads((ASSETS / "coco" / "fixture_val25" / "ssd_mobilenet_v1_results.json").read_text())
    ref = [r for r in results if r["image_id"] == 6818]
    xyxy = det.boxes * [w, h, w, h]
    np.testing.assert_allclose(
        np.c_[xyxy[:, :2], xyxy[:, 2:] - xyxy[:, :2]], [r["bbox"] for r in ref], atol=1e-4
    )
    np.testing.assert_array_equal(det.classes + 1, [r["category_id"] for r in ref])
    np.testing.assert_array_equal(det.scores, [r["score"] for r in ref])
    assert det.boxes.min() >= 0 and det.boxes.max() <= 1  # this image has ymin < 0 and xmax > 1 raw


TF2_ORDER = [2, 0, 3, 1]  # scores, boxes, count, classes (tensorflow#59239)


@pytest.mark.parametrize("rename", [False, True], ids=["names", "values"])
def test_ssd_tf2_order_gives_identical_detections(ssd_run, rename):
    infos, outputs, _ = ssd_run
    perm = [infos[i] for i in TF2_ORDER]
    if rename:  # TF2 names say nothing: StatefulPartitionedCall:k
        perm = [dataclasses.replace(t, name=f"StatefulPartitionedCall:{k}") for k, t in enumerate(perm)]
    decoder, det = ssd_decode(perm, [outputs[i] for i in TF2_ORDER])
    assert_same(det, ssd_decode(infos, outputs)[1])
    how = "by value: integral vs scores in [0,1]" if rename else "by TFLite_Detection_PostProcess:k name"
    assert decoder.notes == [f"classes = output 3, scores = output 0 ({how})"]
    assert_same(decoder.decode([outputs[i] for i in TF2_ORDER]), det)  # decision kept
    assert_same(ssd_decode(perm, [outputs[i] for i in TF2_ORDER], classes_output=3)[1], det)


def fake_ssd(n: int = 3) -> list[TensorInfo]:
    shapes = [(1, n), (1, n, 4), (1,), (1, n)]  # TF2 order, uninformative names
    return [TensorInfo(f"StatefulPartitionedCall:{k}", k, s, "float32") for k, s in enumerate(shapes)]


def ssd_arrays(boxes, classes, scores, count) -> list[np.ndarray]:
    f = np.float32
    return [np.array([scores], f), np.array([boxes], f), np.array([count], f), np.array([classes], f)]


def test_ssd_ambiguous_values_fall_back_to_tf1_order_then_decide():
    decoder = build_decoder("ssd_postprocess")
    decoder.bind(fake_ssd(), (300, 300), "m.tflite")
    det = decoder.decode(ssd_arrays(np.zeros((3, 4)), [0, 0, 0], [0, 0, 0], 0))
    assert len(det) == 0 and "ambiguous" in decoder.notes[-1] and "TF1 order" in decoder.notes[-1]
    boxes = [[-0.1, -0.2, 1.1, 1.3], [1.2, 0.5, 1.5, 0.6], [0.1, 0.1, 0.2, 0.2]]
    det = decoder.decode(ssd_arrays(boxes, [4, 7, 9], [0.75, 0.5, 0.25], 2))
    assert decoder.notes[-1].startswith("classes = output 3, scores = output 0 (by value")
    # only ymin, xmin >= 0 and ymax, xmax <= 1, as the reference recipe clips; the rest is kept
    np.testing.assert_allclose(det.boxes, [[0, 0, 1, 1], [0.5, 1.2, 0.6, 1.0]], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(det.classes, [4, 7])
    with pytest.raises(ModelMismatchError, match="set model.decoder.classes_output=0"):
        decoder.decode(ssd_arrays(boxes, [0.75, 0.5, 0.25], [4, 7, 9], 3))


def test_ssd_score_threshold_keeps_model_order():
    decoder = build_decoder("ssd_postprocess", {"score_threshold": 0.5})
    decoder.bind(fake_ssd(), (300, 300), "m.tflite")
    det = decoder.decode(ssd_arrays(np.full((3, 4), 0.5), [1, 2, 3], [0.25, 0.5, 0.75], 3))
    np.testing.assert_array_equal(det.classes, [2, 3])


# ---- mismatches and config errors ----------------------------------------------------------------


def classifier_outputs() -> list[TensorInfo]:
    return load_model(CLASSIFIER, CPU).outputs


@pytest.mark.parametrize("name", ["ssd_postprocess", "yolo"])
def test_classifier_is_rejected_at_bind(name):
    decoder = build_decoder(name)
    with pytest.raises(ModelMismatchError) as err:
        decoder.bind(classifier_outputs(), (128, 128), CLASSIFIER)
    msg = str(err.value)
    assert msg.startswith(f"{CLASSIFIER}: 1 output(s) [[1, 1001]]; decoder {name} expects ")
    assert msg.endswith("is this a classifier? use task=imagenet") and "\n" not in msg


def test_ssd_model_given_to_yolo_points_to_ssd_postprocess():
    with pytest.raises(ModelMismatchError, match="set model.decoder.name=ssd_postprocess"):
        build_decoder("yolo").bind(load_model(SSD, CPU).outputs, (300, 300), SSD)


@pytest.mark.parametrize(
    ("shape", "params", "match"),
    [
        ((1, 84, 84), {}, "set model.decoder.layout"),
        ((1, 6, 8400), {}, "set model.decoder.num_classes"),
        ((1, 6, 16), {"objectness": False}, "either axis could hold"),
        ((1, 84, 16), {"layout": "channels_last"}, r"axis 2 \(channels_last\)"),
        (
            (1, 90, 16),
            {"num_classes": 80},
            "objectness=auto; check model.decoder.num_classes and .objectness",
        ),
    ],
)
def test_yolo_shape_errors(shape, params, match):
    with pytest.raises(ModelMismatchError, match=match):
        build_decoder("yolo", params).bind([TensorInfo("out", 0, shape, "float32")], (640, 640), "m.tflite")


def test_yolo_other_class_counts(tmp_path):
    rows = candidate_rows()[:, :6]  # 2 classes: keep candidates 0..3 (classes 0 and 1)
    rows[4:, 4:] = 0
    expect(decode_with(tmp_path, [rows.T[None]], params={"num_classes": 2}), [0, 2, 3])
    params = {"objectness": False, "layout": "channels_first"}  # C = 6 - 4; alone, [1,6,16] is ambiguous
    expect(decode_with(tmp_path, [rows.T[None]], params=params), [0, 2, 3])


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("yolo", {"layout": "rows"}, "layout='rows'; valid: auto, channels_first, channels_last"),
        ("yolo", {"objectness": "maybe"}, "objectness='maybe'; valid: auto, true, false"),
        ("yolo", {"num_classes": 0}, "num_classes=0"),
        ("yolo", {"iou": 0.5}, "unknown parameter.s. iou; valid: layout"),
        (
            "yolov8",
            {},
            "unknown output decoder 'yolov8'; valid: ssd_postprocess, yolo, yolo_nms, yolo_pose, yolo_seg. "
            "Did you mean 'yolo'",
        ),
    ],
)
def test_config_errors(name, params, match):
    with pytest.raises(ConfigError, match=match):
        build_decoder(name, params)


def test_registry_lists_decoders():
    assert DECODERS.names() == ["ssd_postprocess", "yolo", "yolo_nms", "yolo_pose", "yolo_seg"]
