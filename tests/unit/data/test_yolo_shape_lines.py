"""A YOLO layout's segment and pose lines read as COCO masks and keypoints (data/yolo_label_lines.py):
the polygon and keypoints in pixels, the area a pose line takes, kpt_shape, and each bad input as one
error naming the file and the line."""

from __future__ import annotations

import os

import numpy as np
import pytest
from test_yolo_labels import H, W, _error, layout

from evalharness.core.errors import DataError
from evalharness.data.yolo_labels import POSE_AREA_PER_BOX_AREA, yolo_ground_truth
from evalharness.data.yolo_layout import read_layout

POSE = "0 0.5 0.5 0.25 0.5 0.25 0.5 2 0 0 0\n"  # two keypoints: one visible, one not labelled


def test_a_segment_line_is_a_polygon_in_pixels_beside_its_box(tmp_path):
    layout(tmp_path, {"1": "1 0.25 0.5 0.75 0.5 0.5 1.0\n0 0.5 0.5 0.25 0.25\n"})
    truth = yolo_ground_truth(tmp_path)[1]
    segment, box = truth.annotations["annotations"]
    polygons = segment["segmentation"]  # float64 arrays (data/compact_shapes.py), the very values
    assert [p.dtype for p in polygons] == [np.float64]
    assert [p.tolist() for p in polygons] == [[0.25 * W, 0.5 * H, 0.75 * W, 0.5 * H, 0.5 * W, 1.0 * H]]
    assert segment["area"] == 0.5 * W * 0.5 * H  # the box's area, as before masks were kept
    assert "segmentation" not in box
    # a run made before polygons were kept recorded the boxes' identity: still recognised
    assert truth.boxes_only_sha256 not in (None, truth.sha256)


def test_a_layout_of_box_lines_has_one_identity(tmp_path):
    layout(tmp_path, {"1": "0 0.5 0.5 0.25 0.25\n"})
    assert yolo_ground_truth(tmp_path)[1].boxes_only_sha256 is None


def test_pose_lines_are_keypoints_in_pixels_with_the_area_of_oks(tmp_path):
    layout(tmp_path, {"1": POSE}, names=["person"], kpt_shape=[2, 3])
    (ann,) = yolo_ground_truth(tmp_path)[1].annotations["annotations"]
    assert ann["keypoints"] == [0.25 * W, 0.5 * H, 2, 0.0, 0.0, 0]
    assert ann["num_keypoints"] == 1
    assert ann["bbox"] == [(0.5 - 0.125) * W, (0.5 - 0.25) * H, 0.25 * W, 0.5 * H]
    assert ann["area"] == pytest.approx(0.25 * W * 0.5 * H * POSE_AREA_PER_BOX_AREA)
    assert read_layout(tmp_path).kpt_shape == (2, 3)


def test_keypoints_without_visibility_are_labelled_unless_at_the_origin(tmp_path):
    layout(tmp_path, {"1": "0 0.5 0.5 0.25 0.5 0.25 0.5 0 0\n"}, names=["person"], kpt_shape=[2, 2])
    (ann,) = yolo_ground_truth(tmp_path)[1].annotations["annotations"]
    assert ann["keypoints"] == [0.25 * W, 0.5 * H, 2, 0.0, 0.0, 0] and ann["num_keypoints"] == 1


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("0 0.5 0.5 0.25 0.5 0.25 0.5 2", "8 numbers; data.yaml's kpt_shape [2, 3] makes a pose line"),
        ("0 0.5 0.5 0.25 0.5 0.25 0.5 2 0 0 0 0 0 0 0 0 0 0", "18 numbers"),  # a segment is no pose line
        ("0 0.5 0.5 0.25 0.5 0.25 0.5 3 0 0 0", "keypoint visibility 3 is not 0, 1 or 2"),
        ("0 0.5 0.5 0.25 0.5 1.25 0.5 2 0 0 0", "keypoint x 1.25 is outside [0, 1]"),
        ("0 0.5 0.5 0.25 1.5 0.25 0.5 2 0 0 0", "h 1.5 is outside [0, 1]"),
    ],
)
def test_a_bad_pose_line_is_one_error_naming_file_and_line(tmp_path, line, says):
    message = _error(tmp_path, {"1": f"{POSE}{line}\n"}, names=["person"], kpt_shape=[2, 3])
    assert f"{os.path.join('labels', 'val', '1.txt')}:2: " in message and says in message


@pytest.mark.parametrize("kpt_shape", [[17], [17, 4], [0, 3], "17,3", [17.0, 3]])
def test_a_bad_kpt_shape_is_one_error(tmp_path, kpt_shape):
    layout(tmp_path, {"1": POSE}, names=["person"], kpt_shape=kpt_shape)
    with pytest.raises(DataError, match=r"data.yaml: kpt_shape .* is not \[keypoints, 2 or 3\]"):
        read_layout(tmp_path)
