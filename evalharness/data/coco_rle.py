"""COCO masks (compressed or plain run-length codes, polygons) checked before pycocotools reads them.

pycocotools' C code trusts what it is given, and a predictions file read back or an annotation file
is data from outside:

- a compressed RLE text whose last character asks for one more (a 6-bit group with its
  continuation bit set) is read past the end of the string;
- runs that add up to more pixels than the mask's height x width are written past the decoded
  mask's buffer (``mask.decode``: the HTML thumbnails) and read past the other mask's runs
  (``mask.iou``: the scoring, ``report diff``'s matching), which on a hand-edited file was an
  endless loop in C that no signal could stop; a negative run becomes a count near 2^32;
- a polygon's rasterisation allocates in proportion to the distance between its points (a point at
  1e12 asks for terabytes), and NaN has no integer pixel.

So every mask is checked here first and a bad one is refused by name: the runs of a compressed text
are decoded with pycocotools' own rules (5 bits a character, a sign bit in the last, each count
after the third coded as the difference from the one two before), in numpy over the whole text;
they must be non-negative and add up to the mask's pixels exactly. A polygon must be pairs of
finite numbers, at least three points, within one image size of the image. Where the mask's size
is the image's (``mask_size`` of a record, ``size`` of a crowd RLE), it must be the image's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from evalharness.data.compact_shapes import is_polygon_array, plain_numbers

MAX_MASK_PIXELS = 1 << 28  # more than any image Pillow opens (its bomb limit: ~179 M pixels)
_MAX_GROUP = 7  # characters of one count: 35 bits, past any 32-bit count pycocotools holds
_FIRST, _SPAN = 48, 64  # COCO's compressed characters: "0" + 6 bits


def compressed_counts(text: str) -> npt.NDArray[np.int64] | None:
    """The run lengths pycocotools reads from a compressed RLE ``text``, or None where it would
    read past the text (its last character asks for more, a count runs over 7 characters) or a
    character is not one of COCO's 64."""
    decoded = _decoded([text])
    return None if isinstance(decoded, int) else decoded[0]


def texts_problem(texts: list[str], pixels: int) -> tuple[int, str] | None:
    """The first of one image's compressed RLE ``texts`` that is not a mask of ``pixels`` pixels
    (its index and what is wrong), or None: all of them decoded in one pass."""
    decoded = _decoded(texts)
    if isinstance(decoded, int):
        return decoded, _NOT_TEXT
    counts, owner = decoded
    bad = np.flatnonzero(np.bincount(owner, weights=(counts < 0) | (counts > pixels), minlength=len(texts)))
    if bad.size:
        return int(bad[0]), "a run of counts is negative or longer than the whole mask"
    ends = np.searchsorted(owner, np.arange(len(texts)), side="right")  # each text's last run + 1
    running = np.concatenate(([0], np.cumsum(counts)))  # <= 2^28 a run: exact in int64
    totals = running[ends] - running[np.concatenate(([0], ends[:-1]))]
    wrong = np.flatnonzero(totals != pixels)
    if wrong.size:
        k = int(wrong[0])
        return k, f"its runs add up to {int(totals[k])} pixels, not {pixels}"
    return None


_NOT_TEXT = "counts is not COCO's compressed RLE text (it ends inside a run or holds other characters)"


def _decoded(texts: list[str]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | int:
    """(every text's runs one after the other, the text each run belongs to), or the index of the
    first text pycocotools would misread (see :func:`compressed_counts`)."""
    lengths_of_texts = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    bounds = np.cumsum(lengths_of_texts)
    joined = "".join(texts)
    if not joined.isascii():
        return next(k for k, text in enumerate(texts) if not text.isascii())
    codes = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).astype(np.int64) - _FIRST
    if codes.size == 0:  # no runs at all: each text's total is 0
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if codes.size and (codes.min() < 0 or codes.max() >= _SPAN):
        return _first_text(bounds, np.flatnonzero((codes < 0) | (codes >= _SPAN))[0])
    more = (codes & 0x20) != 0
    last = bounds[lengths_of_texts > 0] - 1
    if more[last].any():  # a text whose last character asks for one more
        return _first_text(bounds, last[more[last]][0])
    ends = np.flatnonzero(~more)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.size and lengths.max() > _MAX_GROUP:
        return _first_text(bounds, ends[np.argmax(lengths > _MAX_GROUP)])
    place = np.arange(codes.size) - np.repeat(starts, lengths)
    values = np.add.reduceat((codes & 0x1F) << (5 * place), starts)
    negative = (codes[ends] & 0x10) != 0
    values[negative] -= np.left_shift(1, 5 * lengths[negative])
    owner = np.searchsorted(bounds, ends, side="right")
    # counts[m] = values[m] + counts[m - 2] from the fourth run of a text on: a running sum over each
    # text's odd runs from the second, and over its even runs from the third
    first = np.searchsorted(owner, np.arange(len(texts)))
    index = np.arange(values.size) - first[owner]
    summed = np.flatnonzero(index >= 1)
    key = owner[summed] * 2 + index[summed] % 2
    order = summed[np.argsort(key, kind="stable")]
    key = owner[order] * 2 + index[order] % 2
    counts = values.copy()
    if order.size:
        running = np.cumsum(values[order])
        head = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        before = np.repeat(running[head] - values[order][head], np.diff(np.append(head, order.size)))
        counts[order] = running - before
    return counts, owner


def _first_text(bounds: npt.NDArray[np.int64], position: int) -> int:
    return int(np.searchsorted(bounds, position, side="right"))


def rle_problem(counts: object, size: object) -> str | None:
    """What is wrong with a run-length code (None: nothing): ``counts`` a compressed text or a list
    of run lengths, ``size`` [height, width], the runs non-negative and adding up to its pixels."""
    found = _height_width("size", size)
    if isinstance(found, str):
        return found
    height, width = found
    pixels = height * width
    if isinstance(counts, str):
        problem = texts_problem([counts], pixels)
        return None if problem is None else problem[1] + f" ({height} x {width})"
    if not (isinstance(counts, list) and all(type(v) is int for v in counts)):
        return "counts is neither RLE text nor a list of integers"
    if any(v < 0 for v in counts):
        return "a run of counts is negative"
    total = sum(counts)  # Python ints: exact
    return (
        None if total == pixels else f"its runs add up to {total} pixels, not {pixels} ({height} x {width})"
    )


def polygon_problem(polygons: object, height: int, width: int) -> str | None:
    """What is wrong with a segmentation's polygons (None: nothing): a list of [x1, y1, x2, y2, ...]
    of finite numbers (a list, or a float64 array as the ground truth's readers hold it), each at
    least 3 points, within one image size around the image."""
    if not isinstance(polygons, list) or not polygons:
        return "segmentation is neither a list of polygons nor an RLE"
    for polygon in polygons:
        held = is_polygon_array(polygon)  # numbers only (data/compact_shapes.py)
        if not (held or isinstance(polygon, list)) or len(polygon) < 6 or len(polygon) % 2:
            return "a polygon is not x, y pairs of at least 3 points"
        if not held and not plain_numbers(polygon):  # a bool is no coordinate
            return "a polygon holds something other than numbers"
        xy = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
        if not np.isfinite(xy).all():
            return "a polygon holds a value that is not finite"
        low, high = -np.array([width, height]), 2 * np.array([width, height])
        if (xy < low).any() or (xy > high).any():
            return f"a polygon reaches more than one image size outside its {width} x {height} image"
    return None


def segmentation_problem(segmentation: object, height: int, width: int) -> str | None:
    """What is wrong with an annotation's ``segmentation`` on an image of ``height`` x ``width``:
    polygons (:func:`polygon_problem`) or an RLE of the image's size (:func:`rle_problem`)."""
    if isinstance(segmentation, Mapping):
        size = segmentation.get("size")
        if isinstance(size, list | tuple) and list(size) != [height, width]:
            return f"an RLE of size {list(size)} on an image of {height} x {width}"
        return rle_problem(segmentation.get("counts"), size)
    return polygon_problem(segmentation, height, width)


def _positive_int(value: object) -> bool:
    return type(value) is int and value > 0


def _height_width(key: str, size: object) -> tuple[int, int] | str:
    """A mask's ``key`` as (height, width): positive integers, at most :data:`MAX_MASK_PIXELS`
    (pycocotools allocates height x width bytes to decode it); else what is wrong with it."""
    if not (isinstance(size, list | tuple) and len(size) == 2 and all(_positive_int(v) for v in size)):
        return f"{key} is {size!r}, not [height, width]"
    height, width = size
    if height * width > MAX_MASK_PIXELS:
        return f"{key} {[height, width]} is {height * width} pixels, more than any image ({MAX_MASK_PIXELS})"
    return height, width


def mask_record_problem(record: Mapping[str, Any], image: Mapping[str, Any] | None) -> str | None:
    """What is wrong with a read-back record's masks (None: nothing): ``mask_size`` [height, width]
    (its image's, where the ground truth says), every ``masks`` text a whole mask of that size."""
    size = _height_width("mask_size", record.get("mask_size"))
    if isinstance(size, str):
        return size
    height, width = size
    if (
        image is not None
        and "height" in image
        and "width" in image
        and size != (image["height"], image["width"])
    ):
        return f"mask_size is {list(size)}, but the image is {image['height']} x {image['width']}"
    texts = record.get("masks")
    if not (isinstance(texts, list) and all(isinstance(t, str) for t in texts)):
        return "a mask is not COCO RLE text"
    found = texts_problem(texts, height * width)
    return None if found is None else f"mask #{found[0]}: {found[1]}"


# coordinates checked at once by segmentations_problem: a block's arrays are a few MiB (all of a
# 2,500-image file's at once were ~50 MiB, the scoring's peak: docs/benchmarks.md)
_OUTLINE_BLOCK = 65_536


def segmentations_problem(gt: Mapping[str, Any]) -> tuple[int, str] | None:
    """The first annotation of a checked COCO ground truth (its index, what is wrong) whose
    ``segmentation`` pycocotools cannot read safely (:func:`segmentation_problem`), or None. The
    polygons' coordinates are checked a block at a time (val2017's 36,781 outlines are about a
    million); the first annotation found is then named by :func:`segmentation_problem`'s words."""
    images = {image["id"]: image for image in gt["images"]}
    block = _OutlineBlock()
    for index, ann in enumerate(gt["annotations"]):
        segmentation = ann.get("segmentation")
        if segmentation is None:
            continue
        image = images[ann["image_id"]]
        height, width = image.get("height"), image.get("width")
        if not (_positive_int(height) and _positive_int(width)):
            return index, f"image {ann['image_id']} has no height and width to draw its outline in"
        if not (isinstance(segmentation, list) and segmentation and all(map(_pairs, segmentation))):
            problem = segmentation_problem(segmentation, height, width)
            if problem:
                return index, problem
            continue
        for polygon in segmentation:
            block.add(polygon, index, width, height)
        if block.coordinates >= _OUTLINE_BLOCK:
            found = block.problem(gt, images)
            if found:
                return found
            block = _OutlineBlock()
    return block.problem(gt, images) if block.coordinates else None


def _pairs(polygon: object) -> bool:
    """A polygon's form (a list, or a float64 array: data/compact_shapes.py) of at least 3 pairs."""
    if not (isinstance(polygon, list) or is_polygon_array(polygon)):
        return False
    return len(polygon) >= 6 and len(polygon) % 2 == 0


class _OutlineBlock:
    """Polygons of :func:`segmentations_problem` checked together: each as an array of numbers
    beside its annotation's index and its image's width and height."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.rows: list[tuple[int, int, int, int]] = []  # (annotation index, width, height, values)
        self.coordinates = 0
        self.numbers = True  # every polygon a list of numbers or an array

    def add(self, polygon: Any, index: int, width: int, height: int) -> None:
        self.rows.append((index, width, height, len(polygon)))
        self.coordinates += len(polygon)
        if not is_polygon_array(polygon):
            try:  # numbers only give a numeric array (a string or None: another kind)
                polygon = np.array(polygon) if plain_numbers(polygon) else None
            except (ValueError, OverflowError):  # an integer past 64 bits
                polygon = None
            if polygon is None or polygon.ndim != 1 or polygon.dtype.kind not in "iuf":
                self.numbers = False
            elif self.numbers:
                self.arrays.append(polygon)
        else:
            self.arrays.append(polygon)

    def problem(self, gt: Mapping[str, Any], images: Mapping[Any, Any]) -> tuple[int, str] | None:
        """The block's first annotation with a polygon out of bounds or not numbers, or None."""
        owners = [row[0] for row in self.rows]
        if self.numbers:
            values = np.concatenate(self.arrays).astype(np.float64, copy=False)
            sizes = np.array([(width, height) for _, width, height, _ in self.rows], dtype=np.float64)
            limit = np.repeat(sizes, [n // 2 for *_, n in self.rows], axis=0).reshape(-1)
            bad = ~np.isfinite(values) | (values < -limit) | (values > 2 * limit)
            if not bad.any():
                return None
            ends = np.cumsum([n for *_, n in self.rows])
            suspects = [owners[int(np.searchsorted(ends, np.argmax(bad), side="right"))]]
        else:  # something other than numbers: each annotation once, in order, until one is named
            suspects = list(dict.fromkeys(owners))
        for index in suspects:
            ann = gt["annotations"][index]
            image = images[ann["image_id"]]
            problem = segmentation_problem(ann["segmentation"], image["height"], image["width"])
            if problem:
                return index, problem
        return suspects[0], "a polygon holds a value that is not a finite number near its image"
