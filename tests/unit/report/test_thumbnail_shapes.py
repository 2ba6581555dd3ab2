"""The diff's thumbnails of a seg / pose pair: what the COCO view draws of the two runs' records (the
masks and skeletons of the detections the diff counts), and how the report draws it (run A blue,
run B orange, at the image's pixels). Records and images are made here."""

from __future__ import annotations

import numpy as np
from PIL import Image
from pycocotools import mask as mask_utils

from evalharness.report.views import html
from evalharness.report.views.shape_drawing import COLOURS, draw_shapes
from evalharness.tasks.coco.thumbnail_shapes import COCO_SKELETON, thumbnail_shapes

H, W = 40, 60


def _rle(x0: int, y0: int, x1: int, y1: int) -> str:
    grid = np.zeros((H, W), np.uint8, order="F")
    grid[y0:y1, x0:x1] = 1
    return mask_utils.encode(grid)["counts"].decode()


def _seg(*masks: str, scores=(0.9, 0.1)) -> dict:
    detections = [[1, s, 0, 0, 1, 1] for s in scores[: len(masks)]]
    return {"id": "x.jpg", "detections": detections, "masks": list(masks), "mask_size": [H, W]}


def test_masks_of_the_counted_detections_are_drawn_in_each_run_s_colour(tmp_path):
    a, b = _seg(_rle(0, 0, 10, 10), _rle(20, 20, 30, 30)), _seg(_rle(40, 0, 50, 10))
    shapes = thumbnail_shapes(a, b, min_score=0.5)  # A's second detection is under the diff's score
    assert [(side, int(m.sum())) for side, m in shapes["masks"]] == [("a", 100), ("b", 100)]
    img = draw_shapes(Image.new("RGB", (W, H)), shapes, 128)
    pixels = np.asarray(img)
    assert pixels[5, 5].tolist() == [round(c * 115 / 255) for c in COLOURS["a"]]
    assert pixels[5, 45].tolist() == [round(c * 115 / 255) for c in COLOURS["b"]]
    assert pixels[25, 25].tolist() == [0, 0, 0]
    Image.new("RGB", (W, H)).save(tmp_path / "x.png")
    data = (tmp_path / "x.png").read_bytes()
    plain, drawn = (html.thumbnail_uri_of(data, shapes=s) for s in (None, shapes))
    assert plain and drawn and plain != drawn


def test_a_skeleton_joins_the_visible_keypoints_by_coco_s_person_edges():
    keypoints = [v for k in range(17) for v in (2.0 + 3 * k, 5.0, 0.9 if k != 0 else 0.2)]  # nose unseen
    pose = {"id": "x.jpg", "detections": [[1, 0.9, 0, 0, 1, 1]], "keypoints": [keypoints]}
    shapes = thumbnail_shapes(pose, {**pose, "detections": [], "keypoints": []}, min_score=0.5)
    assert len(shapes["points"]) == 16 and not shapes["masks"]
    assert len(shapes["lines"]) == sum(1 not in edge for edge in COCO_SKELETON)
    assert {side for side, _ in shapes["lines"]} == {"a"}


def test_a_box_model_s_records_draw_nothing():
    boxes = {"id": "x.jpg", "detections": [[1, 0.9, 0, 0, 5, 5]]}
    assert thumbnail_shapes(boxes, boxes, 0.5) is None
