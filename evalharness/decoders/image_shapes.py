"""A seg head's masks and a pose head's keypoints in the original image, from the model input.

Masks are made for the kept detections only and encoded at once (COCO's RLE, ``counts`` as text),
so a run never holds a full-size mask: only each box's patch, for the image being coded. Per
detection:

1. ``sigmoid(coefficients . prototypes)`` on the prototype grid (input / 4);
2. one bilinear sample of that grid at each original-image pixel inside the box: the pixel centre
   mapped through the letterbox (scale, pad) to the input and on to the grid, half-pixel centres as
   ``cv2.resize``. The reference recipe resizes twice (grid -> input, then the un-padded input ->
   image); one resampling of the same bilinear surface differs from it only by that second smoothing;
3. pixels whose centre lies outside the (clipped) box stay 0: the crop is done at the image's
   resolution, after the upsampling, so a mask edge on the box side is sharp;
4. threshold 0.5 (probability > 0.5), then COCO's compressed RLE, coded from the box's patch
   (:mod:`evalharness.decoders.mask_runs`: all of an image's patches in one pass; the same text as
   ``pycocotools.mask.encode`` of each whole mask, tested).

What costs time is per pixel of the boxes (the sampling, the threshold, finding the runs), so an
image's logits share one buffer and one sigmoid, its patches one buffer and one pass, and each
detection adds only its matrix product and its sampling call.

Keypoints: x, y normalised to the input mapped back through the same letterbox (not clipped: a
keypoint the model puts outside the image stays there, as COCO's OKS takes it); the visibility
score is kept as the third value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from evalharness.data.detection_input import Geometry
from evalharness.decoders.base import Detections
from evalharness.decoders.mask_runs import MaskPatches

MASK_THRESHOLD = 0.5


def _input_of_original(geometry: Geometry) -> tuple[float, float, float, float]:
    """(sx, sy, ox, oy) with input = original * s + o, per axis (stretch or letterbox)."""
    g = geometry
    if g.scale == 0.0:
        return g.in_w / g.orig_w, g.in_h / g.orig_h, 0.0, 0.0
    return g.scale, g.scale, float(g.pad_x), float(g.pad_y)


def _pixel_spans(
    low: npt.NDArray[np.float64], high: npt.NDArray[np.float64], size: int
) -> npt.NDArray[np.int64]:
    """[N, 2] [first, end) of the pixels whose centre (i + 0.5) lies in [low, high], within [0, size)."""
    first = np.maximum(0, np.ceil(low - 0.5)).astype(np.int64)
    end = np.minimum(size, np.floor(high - 0.5).astype(np.int64) + 1)
    return np.stack([first, np.maximum(first, end)], axis=1)


def mask_rles(
    prototypes: npt.NDArray[np.floating[Any]],
    coefficients: npt.NDArray[np.float64],
    boxes: npt.NDArray[np.float64],
    geometry: Geometry,
) -> list[str]:
    """RLE ``counts`` (text) of each detection's mask at the original image's size; ``boxes`` are
    x1, y1, x2, y2 in original pixels (clipped), one per row of ``coefficients``.

    Only the grid cells under a box are combined and passed through the sigmoid, and only the image
    pixels the box covers are sampled and coded, all of an image's masks coded in one pass
    (:class:`~evalharness.decoders.mask_runs.MaskPatches`): the cost follows the boxes' area, not the
    image's, and a detection adds a few array operations to it."""
    import cv2

    if not len(coefficients):
        return []
    grid = np.asarray(prototypes, dtype=np.float32)
    sx, sy, ox, oy = _input_of_original(geometry)
    kx, ky = grid.shape[1] / geometry.in_w, grid.shape[0] / geometry.in_h
    width, height = geometry.orig_w, geometry.orig_h
    corners = np.asarray(boxes, dtype=np.float64)
    xs, ys = (
        _pixel_spans(corners[:, 0], corners[:, 2], width),
        _pixel_spans(corners[:, 1], corners[:, 3], height),
    )
    # original pixel (x0 + i, y0 + j) -> grid position: u = a * i + u0, v = b * j + v0
    a, b = sx * kx, sy * ky
    u0, v0 = ((xs[:, 0] + 0.5) * sx + ox) * kx - 0.5, ((ys[:, 0] + 0.5) * sy + oy) * ky - 0.5
    gx = _windows(u0, u0 + a * (xs[:, 1] - xs[:, 0] - 1), grid.shape[1])
    gy = _windows(v0, v0 + b * (ys[:, 1] - ys[:, 0] - 1), grid.shape[0])
    patches = MaskPatches(xs, ys, height, width)
    w, h = xs[:, 1] - xs[:, 0], ys[:, 1] - ys[:, 0]
    filled = np.flatnonzero(w * h > 0)  # a pixel centre in the box (else an empty mask)
    # every filled mask's logits on its window, in one buffer: one sigmoid for them all
    cells = np.where(w * h > 0, (gy[:, 1] - gy[:, 0]) * (gx[:, 1] - gx[:, 0]), 0)
    at = np.concatenate([[0], np.cumsum(cells)]).tolist()
    prob = np.empty(at[-1], dtype=np.float32)
    windows = [(gy0, gy1, gx0, gx1) for (gy0, gy1), (gx0, gx1) in zip(gy.tolist(), gx.tolist(), strict=True)]
    for k, coefficient in zip(filled.tolist(), coefficients[filled].astype(np.float32), strict=True):
        gy0, gy1, gx0, gx1 = windows[k]
        np.matmul(
            grid[gy0:gy1, gx0:gx1], coefficient, out=prob[at[k] : at[k + 1]].reshape(gy1 - gy0, gx1 - gx0)
        )
    np.negative(prob, out=prob)
    np.exp(prob, out=prob)
    prob += 1.0
    np.reciprocal(prob, out=prob)
    # the inverse map of each patch: patch pixel (i, j) samples its window at (a * i + u, b * j + v)
    warps = np.zeros((len(xs), 2, 3))
    warps[:, 0, 0], warps[:, 1, 1] = a, b
    warps[:, 0, 2], warps[:, 1, 2] = u0 - gx[:, 0], v0 - gy[:, 0]
    flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
    for k, columns, rows in zip(filled.tolist(), w[filled].tolist(), h[filled].tolist(), strict=True):
        gy0, gy1, gx0, gx1 = windows[k]
        window = prob[at[k] : at[k + 1]].reshape(gy1 - gy0, gx1 - gx0)
        patch = cv2.warpAffine(
            window, warps[k], (columns, rows), flags=flags, borderMode=cv2.BORDER_REPLICATE
        )
        patches.fill(k, patch, MASK_THRESHOLD)
    return patches.rles()


def _windows(low: npt.NDArray[np.float64], high: npt.NDArray[np.float64], size: int) -> npt.NDArray[np.int64]:
    """[N, 2] grid cells [first, end) that bilinear samples at positions low..high read (clamped)."""
    first = np.minimum(np.maximum(0, np.floor(low)), size - 1).astype(np.int64)
    end = np.minimum(size, np.floor(high).astype(np.int64) + 2)
    return np.stack([first, np.maximum(first + 1, end)], axis=1)


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
