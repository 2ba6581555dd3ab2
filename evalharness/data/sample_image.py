"""One image of a dataset as the steps beside a run take it (calibration from the dataset's slice,
the repair's search part): a name, where it lies, and its encoded bytes read through the reader
that lists it, so a container's sample is read by offset from its shard and checked against the
digest taken when listed, exactly as the run reads it, and a folder's file as the run reads it.

Why not paths: a container's samples share shard files, so "one file per image" cannot be handed on;
bytes by id can, whatever holds them. The same images in a folder and in a container give the same
names (the file name the sample's id ends in) and the same bytes, so what is built from them (a
calibrated variant, its manifest) is the same.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from evalharness.data.decode import read_image_file


@dataclass(frozen=True)
class SampleImage:
    """``name``: the file name the sample's id ends in (what a calibration manifest keys it by);
    ``where``: how messages name it (a path, or ``shard:member``); ``read``: its encoded bytes."""

    name: str
    where: str
    read: Callable[[], bytes]


def file_image(path: str, sample_id: str | None = None) -> SampleImage:
    """An image file (named by ``sample_id``'s file name when given, else the path's)."""
    name = posixpath.basename(sample_id) if sample_id else os.path.basename(path)
    return SampleImage(name, path, partial(read_image_file, path))
