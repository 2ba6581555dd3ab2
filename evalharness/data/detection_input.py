"""A detector's input: the whole image stretched or letterboxed to the model input, and the mapping
(:class:`Geometry`) that takes the model's boxes back to the image.

A letterbox of a Pillow resize holds whole pixel values (Pillow's resize of a uint8 image is uint8,
the pad an integer), so the tensor is looked up per channel in a 256-entry table made by the same
conversion (:func:`~evalharness.data.preprocess.to_input_tensor`) of the values 0..255: the same
numbers, without a float32 canvas and its arithmetic per pixel (the conversion is elementwise).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image

from evalharness.data.decode import decode_rgb, decode_rgb_image
from evalharness.data.preprocess import InputSpec, PreprocessSpec, _resize, _round_half_away, to_input_tensor


@dataclass(frozen=True)
class Geometry:
    """How model-input coordinates map back to the original image (for detection boxes)."""

    orig_w: int
    orig_h: int
    in_w: int
    in_h: int
    scale: float = 0.0  # letterbox only: resized / original (0 = stretch)
    pad_x: int = 0
    pad_y: int = 0
    new_w: int = 0  # letterbox only: size of the resized image inside the padded canvas
    new_h: int = 0

    def to_original(self, boxes: np.ndarray) -> np.ndarray:
        """[N, 4] x1, y1, x2, y2 normalised to the model input -> original pixels, clipped.

        Stretch: x * W (exactly the reference recipe's arithmetic); letterbox: undo pad and scale.
        """
        b = np.asarray(boxes, dtype=np.float64)
        if self.scale == 0.0:
            out = b * np.array([self.orig_w, self.orig_h, self.orig_w, self.orig_h], dtype=np.float64)
        else:
            px = b * np.array([self.in_w, self.in_h, self.in_w, self.in_h], dtype=np.float64)
            out = (px - np.array([self.pad_x, self.pad_y, self.pad_x, self.pad_y])) / self.scale
        lim = np.array([self.orig_w, self.orig_h, self.orig_w, self.orig_h], dtype=np.float64)
        return np.clip(out, 0.0, lim)


def detection_geometry(width: int, height: int, spec: PreprocessSpec, inp: InputSpec) -> Geometry:
    """The input<->original mapping for an image of this size (stretch, or letterbox)."""
    if not spec.letterbox:
        return Geometry(width, height, inp.width, inp.height)
    scale = min(inp.width / width, inp.height / height)
    nw, nh = max(1, _round_half_away(width * scale)), max(1, _round_half_away(height * scale))
    pad_x, pad_y = (inp.width - nw) // 2, (inp.height - nh) // 2
    return Geometry(width, height, inp.width, inp.height, nw / width, pad_x, pad_y, nw, nh)


def detection_input(
    image: str | np.ndarray, spec: PreprocessSpec, inp: InputSpec
) -> tuple[np.ndarray, Geometry]:
    """Whole image (a file, or a member's pixels), no crop, stretched or letterboxed (``pad_value``
    canvas) to the input size."""
    table = _pixel_table(spec, inp) if spec.letterbox else None
    if table is not None:  # Pillow resizes the decoded image itself, no array made in between
        decoded = decode_rgb_image(image) if isinstance(image, str) else Image.fromarray(image)
        g = detection_geometry(decoded.width, decoded.height, spec, inp)
        return _looked_up(decoded, g, spec, inp, table), g
    img = decode_rgb(image) if isinstance(image, str) else image
    g = detection_geometry(img.shape[1], img.shape[0], spec, inp)
    if not spec.letterbox:
        pixels = _resize(img, inp.height, inp.width, spec.resize)
    else:
        pixels = np.full((inp.height, inp.width, 3), spec.pad_value, dtype=np.float32)
        pixels[g.pad_y : g.pad_y + g.new_h, g.pad_x : g.pad_x + g.new_w] = _resize(
            img, g.new_h, g.new_w, spec.resize
        )
    return to_input_tensor(pixels, spec, inp), g


_PIL_RESAMPLE = {"pil_bilinear": Image.Resampling.BILINEAR, "pil_bicubic": Image.Resampling.BICUBIC}


@lru_cache(maxsize=8)
def _pixel_table(spec: PreprocessSpec, inp: InputSpec) -> np.ndarray | None:
    """(256, 3): what :func:`to_input_tensor` makes of pixel value v in channel c, when a letterbox's
    pixels are whole values (a Pillow resize, an integer pad in 0..255); (256, 1) where every channel
    makes the same of it (decided once, not per image); None otherwise."""
    pad = spec.pad_value
    if spec.resize not in _PIL_RESAMPLE or not (0 <= pad <= 255 and float(pad).is_integer()):
        return None
    values = np.repeat(np.arange(256, dtype=np.float32)[:, None, None], 3, axis=2)  # (256, 1, 3)
    nhwc = dataclasses.replace(inp, layout="nhwc")  # an NCHW input is transposed after the look-up
    table: np.ndarray = to_input_tensor(values, spec, nhwc)[0, :, 0, :]
    return table[:, :1] if (table == table[:, :1]).all() else table  # one column: the channels agree


def _looked_up(
    img: Image.Image, g: Geometry, spec: PreprocessSpec, inp: InputSpec, table: np.ndarray
) -> np.ndarray:
    """The letterboxed tensor by the table: Pillow's resize into a uint8 canvas of the pad value,
    each pixel value indexing its channel's column (one column for all where they are equal, as a
    model's scale and zero point usually are: a single index of uint8 values, no index array)."""
    canvas = np.full((inp.height, inp.width, 3), int(spec.pad_value), dtype=np.uint8)
    resized = img.resize((g.new_w, g.new_h), _PIL_RESAMPLE[spec.resize])
    canvas[g.pad_y : g.pad_y + g.new_h, g.pad_x : g.pad_x + g.new_w] = np.asarray(resized)
    if spec.channel_order == "bgr":  # output channel c reads input channel 2 - c
        canvas = canvas[..., ::-1]
    if table.shape[1] == 1:
        tensor = table[:, 0][canvas][None]
    else:
        tensor = np.empty((1, *canvas.shape), dtype=table.dtype)
        for c in range(3):
            tensor[0, ..., c] = table[:, c][canvas[..., c]]
    return np.ascontiguousarray(tensor.transpose(0, 3, 1, 2)) if inp.layout == "nchw" else tensor
