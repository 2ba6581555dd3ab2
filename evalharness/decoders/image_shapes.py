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
4. threshold 0.5 (probability > 0.5), then ``pycocotools.mask.encode``.

Keypoints: x, y normalised to the input mapped back through the same letterbox (not clipped: a
keypoint the model puts outside the image stays there, as COCO's OKS takes it); the visibility
score is kept as the third value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from evalharness.data.preprocess import Geometry
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
    first = max(0, int(np.ceil(low - 0.5)))
    end = min(size, int(np.floor(high - 0.5)) + 1)
    return first, max(first, end)


def mask_rles(
    prototypes: npt.NDArray[np.float64],
    coefficients: npt.NDArray[np.float64],
    boxes: npt.NDArray[np.float64],
    geometry: Geometry,
) -> list[str]:
    """RLE ``counts`` (text) of each detection's mask at the original image's size; ``boxes`` are
    x1, y1, x2, y2 in original pixels (clipped), one per row of ``coefficients``."""
    import cv2
    from pycocotools import mask as mask_utils

    grid_h, grid_w, channels = prototypes.shape
    if not len(coefficients):
        return []
    flat = prototypes.reshape(-1, channels).astype(np.float32)
    logits = coefficients.astype(np.float32) @ flat.T
    probs = (1.0 / (1.0 + np.exp(-logits))).reshape(-1, grid_h, grid_w)
    sx, sy, ox, oy = _input_of_original(geometry)
    kx, ky = grid_w / geometry.in_w, grid_h / geometry.in_h
    width, height = geometry.orig_w, geometry.orig_h
    canvas = np.zeros((height, width), dtype=np.uint8, order="F")
    rles = []
    for prob, (bx1, by1, bx2, by2) in zip(probs, boxes.tolist(), strict=True):
        canvas[:] = 0
        x0, x1 = _pixel_span(bx1, bx2, width)
        y0, y1 = _pixel_span(by1, by2, height)
        if x1 > x0 and y1 > y0:
            # destination pixel (i, j) of the patch = original pixel (x0 + i, y0 + j) -> grid position
            warp = np.array(
                [
                    [sx * kx, 0.0, ((x0 + 0.5) * sx + ox) * kx - 0.5],
                    [0.0, sy * ky, ((y0 + 0.5) * sy + oy) * ky - 0.5],
                ]
            )
            flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
            patch = cv2.warpAffine(
                prob, warp, (x1 - x0, y1 - y0), flags=flags, borderMode=cv2.BORDER_REPLICATE
            )
            canvas[y0:y1, x0:x1] = patch > MASK_THRESHOLD
        rles.append(mask_utils.encode(canvas)["counts"].decode("ascii"))
    return rles


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
    ``keypoints`` (x, y, visibility flattened, K x 3 per detection); nothing for a box head."""
    fields: dict[str, Any] = {}
    if detections.mask_coefficients is not None and detections.prototypes is not None:
        coefficients = detections.mask_coefficients[keep]
        fields["masks"] = mask_rles(detections.prototypes, coefficients, boxes[keep], geometry)
        fields["mask_size"] = [geometry.orig_h, geometry.orig_w]
    if detections.keypoints is not None:
        points = keypoints_to_image(detections.keypoints[keep], geometry)
        fields["keypoints"] = points.reshape(len(points), -1).tolist()
    return fields
