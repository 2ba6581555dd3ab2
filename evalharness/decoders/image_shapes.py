"""A seg head's masks and a pose head's keypoints in the original image, from the model input.

Masks are made for the kept detections only and encoded at once (COCO's RLE, ``counts`` as text),
so a run never holds a full-size mask beyond the one being encoded. Per detection:

1. ``sigmoid(coefficients . prototypes)`` on the prototype grid (input / 4);
2. one bilinear sample of that grid at each original-image pixel inside the box: the pixel centre
   mapped through the letterbox (scale, pad) to the input and on to the grid, half-pixel centres as
   ``cv2.resize``. The reference recipe resizes twice (grid -> input, then the un-padded input ->
   image); one resampling of the same bilinear surface differs from it only by that second smoothing;
3. pixels whose centre lies outside the (clipped) box stay 0: the crop is done at the image's
   resolution, after the upsampling, so a mask edge on the box side is sharp;
4. threshold 0.5 (probability > 0.5), then COCO's compressed RLE, coded from the columns the box
   spans (the same text as ``pycocotools.mask.encode`` of the whole mask, tested).

Keypoints: x, y normalised to the input mapped back through the same letterbox (not clipped: a
keypoint the model puts outside the image stays there, as COCO's OKS takes it); the visibility
score is kept as the third value.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from evalharness.data.detection_input import Geometry
from evalharness.decoders.base import Detections

MASK_THRESHOLD = 0.5


def _input_of_original(geometry: Geometry) -> tuple[float, float, float, float]:
    """(sx, sy, ox, oy) with input = original * s + o, per axis (stretch or letterbox)."""
    g = geometry
    if g.scale == 0.0:
        return g.in_w / g.orig_w, g.in_h / g.orig_h, 0.0, 0.0
    return g.scale, g.scale, float(g.pad_x), float(g.pad_y)


def _pixel_span(low: float, high: float, size: int) -> tuple[int, int]:
    """[first, end) of the pixels whose centre (i + 0.5) lies in [low, high], within [0, size)."""
    first = max(0, math.ceil(low - 0.5))
    end = min(size, math.floor(high - 0.5) + 1)
    return first, max(first, end)


def mask_rles(
    prototypes: npt.NDArray[np.float64],
    coefficients: npt.NDArray[np.float64],
    boxes: npt.NDArray[np.float64],
    geometry: Geometry,
) -> list[str]:
    """RLE ``counts`` (text) of each detection's mask at the original image's size; ``boxes`` are
    x1, y1, x2, y2 in original pixels (clipped), one per row of ``coefficients``.

    Only the grid cells under a box are combined and passed through the sigmoid, and only the image
    columns the box spans are run-length coded: the cost follows the boxes' area, not the image's."""
    import cv2

    if not len(coefficients):
        return []
    grid = prototypes.astype(np.float32)
    sx, sy, ox, oy = _input_of_original(geometry)
    kx, ky = grid.shape[1] / geometry.in_w, grid.shape[0] / geometry.in_h
    width, height = geometry.orig_w, geometry.orig_h
    rles = []
    for coefficient, (bx1, by1, bx2, by2) in zip(
        coefficients.astype(np.float32), boxes.tolist(), strict=True
    ):
        x0, x1 = _pixel_span(bx1, bx2, width)
        y0, y1 = _pixel_span(by1, by2, height)
        if x1 <= x0 or y1 <= y0:
            rles.append(_column_rle(np.zeros((0, 0), bool), 0, 0, height, width))
            continue
        # original pixel (x0 + i, y0 + j) -> grid position: u = a * i + u0, v = b * j + v0
        a, u0 = sx * kx, ((x0 + 0.5) * sx + ox) * kx - 0.5
        b, v0 = sy * ky, ((y0 + 0.5) * sy + oy) * ky - 0.5
        gx0, gx1 = _window(u0, u0 + a * (x1 - x0 - 1), grid.shape[1])
        gy0, gy1 = _window(v0, v0 + b * (y1 - y0 - 1), grid.shape[0])
        logits = grid[gy0:gy1, gx0:gx1] @ coefficient
        prob = 1.0 / (1.0 + np.exp(-logits))
        warp = np.array([[a, 0.0, u0 - gx0], [0.0, b, v0 - gy0]])
        flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
        patch = cv2.warpAffine(prob, warp, (x1 - x0, y1 - y0), flags=flags, borderMode=cv2.BORDER_REPLICATE)
        rles.append(_column_rle(patch > MASK_THRESHOLD, x0, y0, height, width))
    return rles


def _window(low: float, high: float, size: int) -> tuple[int, int]:
    """Grid cells [first, end) that bilinear samples at positions low..high read (clamped)."""
    first = min(max(0, math.floor(low)), size - 1)
    return first, max(first + 1, min(size, math.floor(high) + 2))


def _column_rle(patch: npt.NDArray[np.bool_], x0: int, y0: int, height: int, width: int) -> str:
    """COCO's compressed RLE of an image-sized mask that is ``patch`` at (x0, y0) and 0 elsewhere:
    the runs of the columns the patch spans (column-major, as COCO's RLE), the zeros before and
    after added to the first and last run; equal to ``pycocotools.mask.encode`` of the whole mask.

    The runs are found on the patch's columns with one zero above and below each (not on the
    image's whole height): where a value changes there is where it changes in the image's columns,
    at row y0 + (row in the padded column - 1)."""
    from pycocotools import mask as mask_utils

    h, w = patch.shape
    padded = np.zeros((w, h + 2), dtype=np.uint8)
    padded[:, 1:-1] = patch.T
    flat = padded.ravel()
    starts = np.flatnonzero(flat[1:] != flat[:-1]) + 1  # where a run begins, in the padded columns
    at = (starts // (h + 2)) * height + y0 + starts % (h + 2) - 1  # ... in the image's columns
    if h == height and at.size:  # whole-height columns: a column's last 1 meets the next one's first
        doubled = np.flatnonzero(at[1:] == at[:-1])
        at = np.delete(at, np.concatenate((doubled, doubled + 1)))
    at = at[at < w * height]  # a run ending at the last pixel of the strip ends with it
    counts = np.diff(np.concatenate(([0], at, [w * height]))).tolist() if w * height else [0]
    counts[0] += height * x0  # a first run of ones starts with the zero-length run of zeros
    after = height * (width - x0 - w)
    if len(counts) % 2:  # the last run is zeros
        counts[-1] += after
    elif after:
        counts.append(after)
    rle = mask_utils.frPyObjects({"size": [height, width], "counts": counts}, height, width)
    return str(rle["counts"].decode("ascii"))


def keypoints_to_image(keypoints: npt.NDArray[np.float64], geometry: Geometry) -> npt.NDArray[np.float64]:
    """[N, K, 3] x, y normalised to the input, visibility -> x, y in original pixels, visibility."""
    sx, sy, ox, oy = _input_of_original(geometry)
    out = np.array(keypoints, dtype=np.float64, copy=True)
    out[:, :, 0] = (out[:, :, 0] * geometry.in_w - ox) / sx
    out[:, :, 1] = (out[:, :, 1] * geometry.in_h - oy) / sy
    return out


def shape_fields(
    detections: Detections, keep: npt.NDArray[np.bool_], boxes: npt.NDArray[np.float64], geometry: Geometry
) -> dict[str, Any]:
    """What a COCO record adds for a seg / pose head, for the detections ``keep`` selects (``boxes``:
    all of them in original pixels): ``masks`` (RLE counts, with ``mask_size`` [height, width]) and
    ``keypoints`` (x, y, visibility flattened, K x 3 per detection, rounded to 0.01 px and 0.001);
    nothing for a box head."""
    fields: dict[str, Any] = {}
    if detections.mask_coefficients is not None and detections.prototypes is not None:
        coefficients = detections.mask_coefficients[keep]
        fields["masks"] = mask_rles(detections.prototypes, coefficients, boxes[keep], geometry)
        fields["mask_size"] = [geometry.orig_h, geometry.orig_w]
    if detections.keypoints is not None:
        points = keypoints_to_image(detections.keypoints[keep], geometry)
        # 0.01 px and 0.001 of visibility: far below what OKS can tell, and a third of the JSON
        points[:, :, :2] = np.round(points[:, :, :2], 2)
        points[:, :, 2] = np.round(points[:, :, 2], 3)
        fields["keypoints"] = points.reshape(len(points), -1).tolist()
    return fields
