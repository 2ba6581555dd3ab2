"""One YOLO label file's lines, read as Ultralytics writes them: a box ``class cx cy w h``, a segment
``class x1 y1 x2 y2 x3 y3 ...`` (an instance's polygon), or, when data.yaml has ``kpt_shape: [K, D]``,
a pose line ``class cx cy w h`` followed by K keypoints of D values (``x y`` or ``x y visibility``).

Why the shapes are kept: a seg or pose model's masks and keypoints are scored against them
(:mod:`evalharness.data.yolo_labels` turns them into COCO's ``segmentation`` and ``keypoints``).
Coordinates are normalised to 0..1 of the image (:data:`COORD_TOLERANCE` past it for 6-decimal
writers); a keypoint that is not labelled is ``0 0 0`` (Ultralytics' converter writes COCO's
``x=y=v=0`` so). A bad line is one DataError naming ``file:line``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import NamedTuple

from evalharness.core.errors import DataError
from evalharness.core.untrusted import MAX_NUMBER_CHARS, read_text

COORD_TOLERANCE = 1e-6  # how far past [0, 1] a normalised coordinate may lie (6-decimal writers)
VISIBILITY = (0, 1, 2)  # COCO's: not labelled, labelled but hidden, labelled and visible
_LINE = (
    "a detection label line is 'class cx cy w h' (5 numbers, coordinates in 0..1 of the image) or a "
    "segment 'class x1 y1 x2 y2 x3 y3 ...'"
)


class LabelLine(NamedTuple):
    """One object: its class index, its box (x0, y0, w, h) normalised, and its shape, if the line
    has one: the polygon's (x, y) points, or the keypoints' (x, y, visibility) triples."""

    cls: int
    box: tuple[float, float, float, float]
    polygon: tuple[tuple[float, float], ...] | None = None
    keypoints: tuple[tuple[float, float, int], ...] | None = None


def read_label_lines(path: Path, classes: int, kpt_shape: tuple[int, int] | None = None) -> list[LabelLine]:
    """Each non-blank line of ``path``: a box (x0 = cx - w/2), a segment (its box is the points'
    extent, x0 = min x, w = max x - min x: Ultralytics' ``segments2boxes``, what its detection
    validation scores) or, with ``kpt_shape``, a pose line (every line then has 5 + K·D numbers)."""
    out = []
    for number, line in enumerate(read_text(path, "YOLO label file").splitlines(), start=1):
        tokens = line.split()
        if tokens:
            out.append(_line(tokens, f"{path}:{number}", classes, kpt_shape))
    return out


def _line(tokens: list[str], where: str, classes: int, kpt_shape: tuple[int, int] | None) -> LabelLine:
    if kpt_shape is not None:
        width = 5 + kpt_shape[0] * kpt_shape[1]
        if len(tokens) != width:
            raise DataError(
                f"{where}: {len(tokens)} numbers; data.yaml's kpt_shape {list(kpt_shape)} makes a pose "
                f"line 'class cx cy w h' and {kpt_shape[0]} keypoints of {kpt_shape[1]} values ({width} "
                "numbers); fix the line or kpt_shape"
            )
    elif len(tokens) != 5 and (len(tokens) < 7 or len(tokens) % 2 == 0):
        raise DataError(f"{where}: {len(tokens)} numbers; {_LINE}")
    values = _numbers(tokens, where)
    cls = values[0]
    if not cls.is_integer() or not 0 <= cls < classes:
        raise DataError(
            f"{where}: class {tokens[0]} is not in data.yaml names (0..{classes - 1}); "
            "fix the line or add the class to names"
        )
    if kpt_shape is not None:
        return _pose_line(int(cls), values, tokens, where, kpt_shape[1])
    names = ("cx", "cy", "w", "h") if len(tokens) == 5 else ("x", "y") * (len(tokens) // 2)
    _check_normalised(names, values[1:], tokens[1:], where)
    if len(tokens) == 5:
        cx, cy, w, h = values[1:]
        return LabelLine(int(cls), (cx - w / 2, cy - h / 2, w, h))
    xs, ys = values[1::2], values[2::2]
    box = (min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys))
    return LabelLine(int(cls), box, polygon=tuple(zip(xs, ys, strict=True)))


def _pose_line(cls: int, values: list[float], tokens: list[str], where: str, dims: int) -> LabelLine:
    """Box and keypoints; with ``kpt_shape [K, 2]`` (no visibility) a keypoint at 0, 0 is unlabelled
    (0), any other labelled and visible (2), as Ultralytics' pose validation reads such labels."""
    _check_normalised(("cx", "cy", "w", "h"), values[1:5], tokens[1:5], where)
    cx, cy, w, h = values[1:5]
    keypoints = []
    for k in range(5, len(values), dims):
        x, y = values[k], values[k + 1]
        _check_normalised(("keypoint x", "keypoint y"), (x, y), tokens[k : k + 2], where)
        if dims == 3:
            v = values[k + 2]
            if v not in VISIBILITY:
                raise DataError(
                    f"{where}: keypoint visibility {tokens[k + 2]} is not 0, 1 or 2 (not labelled, "
                    "labelled but hidden, visible); fix the line"
                )
        else:
            v = 0 if x == y == 0 else 2
        keypoints.append((x, y, int(v)))
    return LabelLine(cls, (cx - w / 2, cy - h / 2, w, h), keypoints=tuple(keypoints))


def _check_normalised(
    names: tuple[str, ...], values: list[float] | tuple[float, ...], tokens: list[str], where: str
) -> None:
    if values and min(values) >= -COORD_TOLERANCE and max(values) <= 1 + COORD_TOLERANCE:
        return  # every value inside (the common line): none to name
    for what, value, token in zip(names, values, tokens, strict=True):
        if not -COORD_TOLERANCE <= value <= 1 + COORD_TOLERANCE:
            raise DataError(
                f"{where}: {what} {token} is outside [0, 1] (tolerance {COORD_TOLERANCE:g}); {_LINE}"
            )


def _numbers(tokens: list[str], where: str) -> list[float]:
    """The tokens as finite numbers: all at once where every one is one (the common line), else
    token by token, so the first that is not is named."""
    try:
        values = list(map(float, tokens))
    except ValueError:
        values = []
    plain = max(map(len, tokens)) <= MAX_NUMBER_CHARS and not any("_" in t for t in tokens)
    if values and plain and all(map(math.isfinite, values)):
        return values
    return [_number(t, where) for t in tokens]


def _number(token: str, where: str) -> float:
    try:
        value = float(token) if len(token) <= MAX_NUMBER_CHARS and "_" not in token else math.nan
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise DataError(f"{where}: {token[:40]!r} is not a finite number; {_LINE}")
    return value
