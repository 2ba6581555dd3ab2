"""Masks, skeleton lines and points drawn on a diff thumbnail's image before it is shrunk: run A's in
blue, run B's in orange (two colours told apart with the commonest colour-vision deficiencies), masks
at 45 % opacity so the image shows through. The task says what to draw (``TaskView.thumbnail_shapes``);
this module only draws it, at the image's own pixels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from evalharness.tasks.view import Shapes

if TYPE_CHECKING:
    from PIL import Image

COLOURS = {"a": (0, 114, 178), "b": (230, 159, 0)}
LEGEND = "masks and skeletons: run A blue, run B orange"
MASK_OPACITY = 115  # of 255
THUMBNAIL_LINE_PX = 1.5  # a line's width once the image is a thumbnail


def draw_shapes(img: Image.Image, shapes: Shapes, thumbnail: int) -> Image.Image:
    """``img`` (RGB) with ``shapes`` drawn on it; a mask whose size is not the image's is left out
    (a record of another image). Lines and points are as wide on the ``thumbnail``-pixel result
    whatever the image's size."""
    from PIL import Image, ImageDraw

    for side, mask in shapes["masks"]:
        if mask.shape != (img.height, img.width):
            continue
        alpha = Image.fromarray(mask.astype(np.uint8) * MASK_OPACITY, mode="L")
        img.paste(Image.new("RGB", img.size, COLOURS[side]), (0, 0), alpha)
    width = max(1, round(THUMBNAIL_LINE_PX * max(img.size) / thumbnail))
    draw = ImageDraw.Draw(img)
    for side, (x0, y0, x1, y1) in shapes["lines"]:
        draw.line((x0, y0, x1, y1), fill=COLOURS[side], width=width)
    for side, (x, y) in shapes["points"]:
        draw.ellipse((x - width, y - width, x + width, y + width), fill=COLOURS[side])
    return img
