"""YOLO-seg and YOLO-pose heads on hand-made outputs: layouts read from the shapes, masks made for
the kept boxes through the letterbox, keypoints mapped back, and the bad heads refused by name."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from evalharness.core.errors import DataError, ModelMismatchError
from evalharness.core.tensors import TensorInfo
from evalharness.data.detection_input import Geometry
from evalharness.decoders.base import build_decoder
from evalharness.decoders.image_shapes import keypoints_to_image, mask_rles, shape_fields
from evalharness.settings.yolo_heads import head_decoder, yolo_head
from evalharness.stats.coco_shapes import (
    check_keypoint_count,
    check_keypoint_ground_truth,
    check_mask_ground_truth,
)

SIZE, N, M = 64, 200, 32  # input side, candidates, mask coefficients
GRID = SIZE // 4


def seg_outputs(width: int = 4 + 80 + M, proto_shape=(1, GRID, GRID, M)):
    rows = np.zeros((1, width, N), np.float32)
    rows[0, :4, 0] = [0.5, 0.5, 0.5, 0.25]  # cx, cy, w, h normalised: x 16..48, y 24..40
    rows[0, 4 + 3, 0] = 0.9  # class 3
    rows[0, 4 + 80, 0] = 1.0  # the first coefficient
    protos = np.full(proto_shape, -10.0, np.float32)
    return rows, protos


def bind(name, arrays, **params):
    decoder = build_decoder(name, params)
    infos = [TensorInfo(f"out{i}", i, tuple(a.shape), "float32") for i, a in enumerate(arrays)]
    decoder.bind(infos, (SIZE, SIZE), "model.tflite")
    return decoder


def letterbox(w: int, h: int) -> Geometry:
    scale = min(SIZE / w, SIZE / h)
    nw, nh = round(w * scale), round(h * scale)
    return Geometry(w, h, SIZE, SIZE, nw / w, (SIZE - nw) // 2, (SIZE - nh) // 2, nw, nh)


def test_seg_masks_cover_the_box_where_the_prototype_is_on():
    rows, protos = seg_outputs()
    protos[0, :, : GRID // 2, 0] = 10.0  # the left half of the input on
    dets = bind("yolo_seg", [rows, protos]).decode([rows, protos])
    assert dets.classes.tolist() == [3] and dets.mask_coefficients.shape == (1, M)
    geometry = letterbox(128, 64)  # scale 0.5, padded 16 above and below
    boxes = geometry.to_original(dets.boxes)
    assert boxes.tolist() == [[32.0, 16.0, 96.0, 48.0]]
    (counts,) = mask_rles(dets.prototypes, dets.mask_coefficients, boxes, geometry)
    mask = mask_utils.decode({"size": [64, 128], "counts": counts.encode()})
    ys, xs = np.nonzero(mask)
    assert (ys.min(), ys.max(), xs.min(), xs.max()) == (16, 47, 32, 63)  # box rows; its left half


@pytest.mark.parametrize("layout", ["nchw", "transposed"])
def test_seg_layouts_decode_alike(layout):
    rows, protos = seg_outputs()
    protos[0, 2:5, 3:9, 0] = 10.0
    reference = bind("yolo_seg", [rows, protos]).decode([rows, protos])
    if layout == "nchw":
        protos = np.ascontiguousarray(np.moveaxis(protos, 3, 1))
    else:
        rows = np.ascontiguousarray(rows.transpose(0, 2, 1))
    arrays = [protos, rows]  # the order of the outputs does not matter either
    dets = bind("yolo_seg", arrays).decode(arrays)
    assert np.array_equal(dets.prototypes, reference.prototypes)
    assert np.array_equal(dets.mask_coefficients, reference.mask_coefficients)


def test_prototype_channels_that_disagree_with_the_coefficients_are_refused():
    rows, protos = seg_outputs(proto_shape=(1, GRID, GRID, 16))
    with pytest.raises(
        ModelMismatchError,
        match=r"model.tflite: the prototypes \[1, 16, 16, 16\] have 16 "
        r"channels.*4 box \+ 80 classes \+ 16 mask coefficients = 100.*re-export",
    ):
        bind("yolo_seg", [rows, protos])


def test_pose_keypoints_come_back_through_the_letterbox():
    rows = np.zeros((1, 56, N), np.float32)
    rows[0, :5, 0] = [32.0, 32.0, 16.0, 16.0, 0.8]  # input pixels
    rows[0, 5:8, 0] = [40.0, 24.0, 0.7]
    dets = bind("yolo_pose", [rows]).decode([rows])
    assert dets.keypoints.shape == (1, 17, 3)
    assert dets.keypoints[0, 0].tolist() == pytest.approx([40 / 64, 24 / 64, 0.7])
    points = keypoints_to_image(dets.keypoints, letterbox(128, 64))
    assert points[0, 0].tolist() == pytest.approx([80.0, 16.0, 0.7])  # (40, 24 - 16 pad) / 0.5


def test_a_pose_head_not_of_triples_is_refused():
    rows = np.zeros((1, 55, N), np.float32)
    with pytest.raises(
        ModelMismatchError,
        match=r"model.tflite: pose head \[1, 55, 200\].*50 keypoint values.*"
        r"multiple of 3",
    ):
        bind("yolo_pose", [rows])


def test_records_of_a_box_head_gain_nothing():
    empty = SimpleNamespace(mask_coefficients=None, prototypes=None, keypoints=None)
    assert shape_fields(empty, np.zeros(0, bool), np.zeros((0, 4)), letterbox(64, 64)) == {}


def test_keypoint_ground_truth_without_keypoints_is_refused():
    gt = {"annotations": [{"id": 1, "bbox": [0, 0, 1, 1]}]}
    with pytest.raises(DataError, match="instances_val25.json has no 'keypoints'.*person_keypoints"):
        check_keypoint_ground_truth(gt, "instances_val25.json")


def test_keypoints_other_than_coco_s_17_are_refused_before_any_image():
    """pycocotools' OKS has COCO's 17 sigmas: another count (a YOLO layout's kpt_shape [5, 3], a pose
    head of 5 keypoints) would fail after the whole run."""
    five = {"annotations": [{"id": 7, "keypoints": [0.0] * 15}]}
    with pytest.raises(DataError, match="labels/val: annotation 7 has 5 keypoints; pycocotools' OKS scores"):
        check_keypoint_ground_truth(five, "labels/val")
    check_keypoint_ground_truth({"annotations": [{"id": 1, "keypoints": [0.0] * 51}, {"id": 2}]}, "gt")
    for value in (float("nan"), "3", None):  # an OKS with a NaN is NaN: that person never matched
        bad = {"annotations": [{"id": 8, "keypoints": [0.0] * 50 + [value]}]}
        with pytest.raises(DataError, match="gt: annotation 8 has keypoints that are not finite numbers"):
            check_keypoint_ground_truth(bad, "gt")
    with pytest.raises(DataError, match="hand.tflite: its pose head gives 5 keypoints"):
        check_keypoint_count(5, "hand.tflite")
    check_keypoint_count(17, "person.tflite")


def test_mask_ground_truth_without_outlines_is_refused():
    """A seg model against a YOLO layout of box lines: one error before any image, not pycocotools'
    KeyError after the run."""
    gt = {"annotations": [{"id": 1, "segmentation": [[0, 0, 1, 0, 1, 1]]}, {"id": 2, "bbox": [0, 0, 1, 1]}]}
    says = "labels/val: 1 of 2 annotations have no 'segmentation'.*segment lines"
    with pytest.raises(DataError, match=says):
        check_mask_ground_truth(gt, "labels/val")


def _file(outputs, meta=None):
    summary = lambda shape: SimpleNamespace(shape=shape)  # noqa: E731
    return SimpleNamespace(
        inputs=[summary([1, 256, 256, 3])], outputs=[summary(s) for s in outputs], ultralytics=meta
    )


def test_heads_are_told_by_their_shapes_without_metadata():
    assert yolo_head(_file([[1, 116, 1344], [1, 64, 64, 32]])) == "segment"
    assert yolo_head(_file([[1, 56, 1344]])) == "pose"
    assert yolo_head(_file([[1, 84, 1344]])) is None
    pose = head_decoder(
        "pose", _file([[1, 56, 1344]], {"task": "pose", "kpt_shape": [17, 3], "names": {0: "p"}}), {}
    )
    assert pose == {"name": "yolo_pose", "max_detections": 100, "num_classes": 1, "num_keypoints": 17}


# (x0, y0, rows, columns, share of pixels on) of patches in a 30 x 40 image: whole columns on (runs
# joined across columns), a corner pixel, a patch with no pixel, the whole image on or off
PATCHES = [
    (0, 0, 30, 40, 0.5), (3, 5, 10, 7, 0.5), (39, 29, 1, 1, 1.0), (10, 0, 30, 5, 1.0), (0, 0, 0, 0, 0.5),
    (0, 0, 30, 40, 1.0), (0, 0, 30, 40, 0.0), (10, 0, 30, 5, 0.9), (38, 28, 2, 2, 0.5),
]  # fmt: skip


@pytest.mark.parametrize("order", [1, -1])
def test_an_image_s_patches_coded_in_one_pass_equal_pycocotools_on_each_whole_mask(order):
    from evalharness.decoders.mask_runs import MaskPatches

    patches = PATCHES[::order]
    xs = np.array([[x0, x0 + w] for x0, _, _, w, _ in patches])
    ys = np.array([[y0, y0 + h] for _, y0, h, _, _ in patches])
    coded = MaskPatches(xs, ys, 30, 40)
    expected = []
    for k, (x0, y0, h, w, on) in enumerate(patches):
        rng = np.random.default_rng(k)
        probability = np.where(rng.random((h, w)) < on, 0.9, 0.1).astype(np.float32)
        if h * w:
            coded.fill(k, probability, 0.5)
        whole = np.zeros((30, 40), np.uint8, order="F")
        whole[y0 : y0 + h, x0 : x0 + w] = probability > 0.5
        expected.append(mask_utils.encode(whole)["counts"].decode())
    assert coded.rles() == expected


@pytest.mark.parametrize("x0, w", [(0, 40), (5, 35), (0, 1), (12, 3)])
@pytest.mark.parametrize("fill", [1.0, 0.9, 0.0])
def test_column_rle_of_whole_height_columns_joins_their_runs(x0, w, fill):
    """A whole-height patch: a column's last 1 runs on into the next column's first, and a patch
    reaching the image's last pixel ends with its run (the cases where the padded columns' runs meet)."""
    from evalharness.decoders.mask_runs import MaskPatches

    patch = np.random.default_rng(w).random((30, w)) < fill
    patch[0], patch[-1] = fill > 0, fill > 0
    whole = np.zeros((30, 40), np.uint8, order="F")
    whole[:, x0 : x0 + w] = patch
    coded = MaskPatches(np.array([[x0, x0 + w]]), np.array([[0, 30]]), 30, 40)
    coded.fill(0, patch.astype(np.float32), 0.5)
    assert coded.rles() == [mask_utils.encode(whole)["counts"].decode()]


def test_a_record_whose_masks_do_not_match_its_detections_is_refused():
    from evalharness.tasks.coco.shape_store import ShapeStore

    record = {
        "id": "a.jpg",
        "image_id": 1,
        "detections": [[1, 0.9, 0, 0, 1, 1]],
        "masks": [],
        "mask_size": [2, 2],
    }
    with pytest.raises(DataError, match="record of image a.jpg: masks holds 0 entries for 1 detections"):
        ShapeStore().add(record)


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"masks": ["0\x00"], "mask_size": [2, 2]}, "mask #0: counts is not COCO's compressed RLE text"),
        ({"masks": ["0P"], "mask_size": [2, 2]}, "mask #0: counts is not COCO's compressed RLE text"),
        ({"masks": ["14"], "mask_size": [2, 2]}, "mask #0: its runs add up to 5 pixels, not 4"),
        ({"masks": ["04"], "mask_size": [2]}, r"mask_size is \[2\], not \[height, width\]"),
        ({"keypoints": [[1.0, 2.0]]}, "keypoints are not x, y, visibility triples"),
        ({"keypoints": [[1.0, float("nan"), 1.0]]}, "keypoints are not x, y, visibility triples"),
    ],
)
def test_malformed_masks_or_keypoints_read_back_are_refused(fields, problem):
    from evalharness.tasks.coco.shape_store import ShapeStore

    record = {"id": "a.jpg", "image_id": 1, "detections": [[1, 0.9, 0, 0, 1, 1]], **fields}
    with pytest.raises(DataError, match=f"predictions.jsonl record of image a.jpg: {problem}"):
        ShapeStore().add(record)


def test_keypoints_of_another_length_than_earlier_records_are_refused(tmp_path):
    from evalharness.tasks.coco.shape_store import ShapeStore, check_read_back

    first = {"id": "a.jpg", "image_id": 1, "detections": [[1, 0.9, 0, 0, 1, 1]], "keypoints": [[1.0, 2.0, 2]]}
    second = {**first, "id": "b.jpg", "image_id": 2, "keypoints": [[1.0, 2.0, 2, 3.0, 4.0, 2]]}
    problem = "record of image b.jpg: its keypoints hold 6 values a detection, earlier records' 3"
    store = ShapeStore()
    store.add(first)
    with pytest.raises(DataError, match=f"predictions.jsonl {problem}"):
        store.add(second)
    with pytest.raises(DataError, match=f"run/predictions.jsonl {problem}"):  # diff's check, before any read
        check_read_back([first, second], lambda: None, "run/predictions.jsonl")


def test_end_to_end_heads_keep_the_model_rows_with_their_masks_and_keypoints():
    rows, protos = seg_outputs()
    final = np.zeros((1, 300, 6 + M), np.float32)
    final[0, 0, :6] = [16, 24, 48, 40, 0.9, 3]  # input pixels, as the raw head's box above
    final[0, 0, 6] = 1.0
    seg = bind("yolo_seg", [final, protos])
    dets = seg.decode([final, protos])
    raw = bind("yolo_seg", [rows, protos]).decode([rows, protos])
    assert dets.boxes.tolist() == raw.boxes.tolist() and dets.classes.tolist() == [3]
    assert np.array_equal(dets.mask_coefficients, raw.mask_coefficients)
    pose = np.zeros((1, 300, 6 + 51), np.float32)
    pose[0, 0, :9] = [16, 24, 48, 40, 0.8, 0, 40, 24, 0.7]
    dets = bind("yolo_pose", [pose]).decode([pose])
    assert len(dets) == 1 and dets.keypoints[0, 0].tolist() == pytest.approx([40 / 64, 24 / 64, 0.7])
    assert yolo_head(_file([[1, 300, 57]])) == "pose"
