"""A COCO file's annotations held as columns of numbers, read back as the dicts ``json`` made.

After :mod:`~evalharness.data.compact_shapes` a 2,500-image instances file (19,800 annotations)
still held 24.8 MiB for the whole run, of which only ~10 were numbers: each annotation was a dict
(~0.3 KB), a bbox list of four floats, its ids as Python ints, a numpy array object per polygon.
:class:`AnnotationTable` holds them as columns (ids, category, crowd flag: int64; area and bbox:
float64, with which values were integers; the polygons' coordinates in one float64 array with each
ring's end, keypoints in one int64 array) and is a read-only sequence of dicts: ``len``, ``[i]``
and iteration give a fresh dict each time, equal to what ``json`` and ``compact_shapes`` make of
that annotation: the same keys in the same order, an int where the file had an int, polygons as
float64 arrays (read-only views of the column) and keypoints as int64 ones. Every reader of
``gt["annotations"]`` works unchanged; one that keeps annotations for a run keeps row numbers
(:func:`rows_by_image`) and makes the dicts when it reads them.

An annotation the columns cannot hold exactly is kept as parsed, at its index: a key other than
COCO's (:data:`COLUMN_KEYS`), a missing one, a value of another type (a bool, a string, a float id),
an integer past 2**53 where the column is float64 or past 64 bits, a crowd's RLE dict, a polygon or
keypoints ``compact_shapes`` left as a list, float keypoints. So the checks
(``coco_annotations.check_annotations``, ``coco_rle``, ``coco_shapes``) see exactly what they saw
and name it in the same words.

The table is filled as the file is parsed (:class:`TableBuilder`, ``json``'s ``object_hook``): each
annotation's dict dies as the next is parsed, as ``compact_shapes``' lists of numbers do.
"""

from __future__ import annotations

import copy
import operator
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np

from evalharness.data.compact_shapes import compact_shapes

# what every held annotation has (coco_annotations' _ANNOTATION_KEYS): a row lacking one is kept as parsed
_REQUIRED = frozenset({"id", "image_id", "category_id", "bbox", "area", "iscrowd"})
COLUMN_KEYS = _REQUIRED | {"segmentation", "keypoints", "num_keypoints"}
_INTEGER_KEYS = ("id", "image_id", "category_id", "iscrowd", "num_keypoints")  # int64 columns
_EXACT_IN_FLOAT = 2**53  # an int of at most this magnitude is itself again after float64
_INT64 = (-(2**63), 2**63)
_MOST_ORDERS = 255  # key orders a table holds (one byte a row)
_BLOCK = 1024  # rows made at a time when iterating


def _exact_number(value: object) -> bool:
    """A value a float64 column holds exactly, with its type: a float, or an int within 2**53."""
    if type(value) is float:
        return True
    return type(value) is int and -_EXACT_IN_FLOAT <= value <= _EXACT_IN_FLOAT


def _int64(value: object) -> bool:
    return type(value) is int and _INT64[0] <= value < _INT64[1]


def _polygons(value: object) -> bool:
    """A segmentation ``compact_shapes`` made arrays of: a non-empty list of flat float64 arrays."""
    return (
        type(value) is list
        and bool(value)
        and all(type(p) is np.ndarray and p.ndim == 1 and p.dtype == np.float64 for p in value)
    )


def _int_keypoints(value: object) -> bool:
    return type(value) is np.ndarray and value.ndim == 1 and value.dtype == np.int64


class _Columns:
    """The columns as they are appended (``array`` buffers); the ``*_bounds`` start with 0 and
    gain each row's (or ring's) end."""

    def __init__(self) -> None:
        self.integers = {key: array("q") for key in _INTEGER_KEYS}
        self.area = array("d")
        self.bbox = array("d")
        self.exact_ints = array("B")  # per row: bits 0-3 a bbox value is an int, bit 4 the area is
        self.order = array("B")  # per row: its key order's code
        self.ring_bounds = array("q", [0])  # per row: where its polygons end among the rings
        self.coordinate_bounds = array("q", [0])  # per ring: where its coordinates end
        self.coordinates = array("d")
        self.keypoint_bounds = array("q", [0])  # per row: where its keypoints end
        self.keypoints = array("q")

    def add(self, obj: Mapping[str, Any], code: int) -> None:
        for key in _INTEGER_KEYS:
            self.integers[key].append(obj.get(key, 0))
        bbox, area = obj["bbox"], obj["area"]
        self.bbox.extend(map(float, bbox))
        self.area.append(float(area))
        ints = sum(1 << k for k, v in enumerate(bbox) if type(v) is int) | (type(area) is int) << 4
        self.exact_ints.append(ints)
        self.order.append(code)
        for polygon in obj.get("segmentation", ()):
            self.coordinates.frombytes(polygon.tobytes())  # the float64 values themselves
            self.coordinate_bounds.append(len(self.coordinates))
        self.ring_bounds.append(len(self.coordinate_bounds) - 1)
        if "keypoints" in obj:
            self.keypoints.frombytes(obj["keypoints"].tobytes())
        self.keypoint_bounds.append(len(self.keypoints))


_UNHELD: Mapping[str, Any] = {"bbox": (0.0,) * 4, "area": 0.0}  # a row held as parsed, in the columns


class TableBuilder:
    """``json``'s ``object_hook`` that takes each annotation (an object with ``image_id``) into
    columns as it is parsed and stands a marker in its place; :meth:`placed` then puts the table
    where the markers are (see :func:`parsed_with_table`)."""

    MARK = object()  # what the parsed document holds in an annotation's place until placed

    def __init__(self) -> None:
        self.count = 0
        self._columns = _Columns()
        self._orders: list[tuple[str, ...]] = []
        self._codes: dict[tuple[str, ...], int] = {}
        self._kept: dict[int, dict[str, Any]] = {}  # rows held as parsed

    def hook(self, obj: dict[str, Any]) -> Any:
        obj = compact_shapes(obj)
        if "image_id" not in obj:
            return obj
        self._add(obj)
        return self.MARK

    def _code(self, obj: dict[str, Any]) -> int | None:
        """The code of ``obj``'s key order if the columns hold every value of it exactly, else None."""
        order = tuple(obj)
        if not (_REQUIRED <= obj.keys() <= COLUMN_KEYS):
            return None
        if not all(_int64(obj[key]) for key in _INTEGER_KEYS if key in obj):
            return None
        bbox = obj["bbox"]
        if not (_exact_number(obj["area"]) and type(bbox) is list and len(bbox) == 4):
            return None
        if not all(map(_exact_number, bbox)):
            return None
        if "segmentation" in obj and not _polygons(obj["segmentation"]):
            return None
        if "keypoints" in obj and not _int_keypoints(obj["keypoints"]):
            return None
        code = self._codes.get(order)
        if code is None and len(self._orders) < _MOST_ORDERS:
            code = self._codes[order] = len(self._orders)
            self._orders.append(order)
        return code

    def _add(self, obj: dict[str, Any]) -> None:
        code = self._code(obj)
        if code is None:
            self._kept[self.count] = obj
        self._columns.add(_UNHELD if code is None else obj, code or 0)
        self.count += 1

    def table(self) -> AnnotationTable:
        """The rows added, as a table."""
        c = self._columns
        columns = {key: _frozen(c.integers[key], np.int64) for key in _INTEGER_KEYS}
        columns.update(
            area=_frozen(c.area, np.float64),
            bbox=_frozen(c.bbox, np.float64).reshape(-1, 4),
            exact_ints=_frozen(c.exact_ints, np.uint8),
            order=_frozen(c.order, np.uint8),
            ring_bounds=_frozen(c.ring_bounds, np.int64),
            coordinate_bounds=_frozen(c.coordinate_bounds, np.int64),
            coordinates=_frozen(c.coordinates, np.float64),
            keypoint_bounds=_frozen(c.keypoint_bounds, np.int64),
            keypoints=_frozen(c.keypoints, np.int64),
        )
        return AnnotationTable(columns, tuple(self._orders), self._kept)

    def placed(self, data: Any, parse_again: Callable[[], Any]) -> Any:
        """``data`` with the table in place of the markers: as its ``annotations`` where that list
        is every marker and nothing else; as the plain dicts where it also holds other things (an
        entry that is no annotation: refused by the checks, named as in the plain list); parsed
        again (``parse_again``: without this hook) where a marker stands anywhere else."""
        if not self.count:
            return data
        listed = data.get("annotations") if type(data) is dict else None
        if type(listed) is not list or sum(item is self.MARK for item in listed) != self.count:
            return parse_again()
        table = self.table()
        if len(listed) == self.count:
            data["annotations"] = table
        else:
            rows = iter(table)
            data["annotations"] = [next(rows) if item is self.MARK else item for item in listed]
        return data


def _frozen(values: array[Any], dtype: Any) -> np.ndarray:
    held = np.frombuffer(values, dtype=dtype) if len(values) else np.empty(0, dtype=dtype)
    held.flags.writeable = False
    return held


_Kept = dict[int, dict[str, Any]]  # rows held as parsed, by index
_Order = tuple[str, ...]  # an annotation's keys, in its order


class AnnotationTable(Sequence[dict[str, Any]]):
    """A COCO file's annotations as columns, read as the dicts ``json`` made (see the module
    docstring). Read-only: each access makes a new dict (writing into it changes nothing here)."""

    def __init__(
        self, columns: dict[str, np.ndarray], orders: tuple[tuple[str, ...], ...], kept: _Kept
    ) -> None:
        self._c = columns
        self._orders = orders
        self._kept = kept  # rows held as parsed, by index

    def __len__(self) -> int:
        return len(self._c["order"])

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        position = operator.index(index)
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError("annotation index out of range")
        return self._rows(position, position + 1)[0]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for start in range(0, len(self), _BLOCK):
            yield from self._rows(start, min(start + _BLOCK, len(self)))

    def _rows(self, start: int, end: int) -> list[dict[str, Any]]:
        """Rows ``start`` to ``end`` as new dicts (the columns' values made Python numbers a block
        at a time: ``tolist``, not one numpy scalar a value)."""
        c = self._c
        integers = {key: c[key][start:end].tolist() for key in _INTEGER_KEYS}
        areas, boxes = c["area"][start:end].tolist(), c["bbox"][start:end].tolist()
        exact, orders = c["exact_ints"][start:end].tolist(), c["order"][start:end].tolist()
        rings = c["ring_bounds"][start : end + 1].tolist()
        points = c["keypoint_bounds"][start : end + 1].tolist()
        bounds, coordinates, keypoints = c["coordinate_bounds"], c["coordinates"], c["keypoints"]
        out: list[dict[str, Any]] = []
        for k in range(end - start):
            kept = self._kept.get(start + k)
            if kept is not None:  # a copy to its lists: nothing written into it reaches the table
                out.append(copy.deepcopy(kept))
                continue
            flags, keys = exact[k], self._orders[orders[k]]
            values = {key: integers[key][k] for key in _INTEGER_KEYS}
            values["area"] = int(areas[k]) if flags & 16 else areas[k]
            values["bbox"] = [int(v) if flags >> b & 1 else v for b, v in enumerate(boxes[k])]
            if "segmentation" in keys:
                ends = bounds[rings[k] : rings[k + 1] + 1].tolist()
                values["segmentation"] = [coordinates[a:b] for a, b in zip(ends, ends[1:], strict=False)]
            if "keypoints" in keys:
                values["keypoints"] = keypoints[points[k] : points[k + 1]]
            out.append({key: values[key] for key in keys})
        return out

    def rows_by_image(self) -> Mapping[Any, Iterable[int]]:
        """Each image id's row numbers, in the file's order."""
        if self._kept:  # an id held as parsed may be anything: grouped as a list of dicts is
            return _grouped(self)
        ids = self._c["image_id"]
        order = np.argsort(ids, kind="stable")  # each image's rows in the file's order
        ordered = ids[order]
        cuts = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(ids)]
        return {int(ordered[a]): order[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a}

    def without_outlines(self) -> AnnotationTable:
        """The same annotations without ``segmentation`` (a run that never reads them holds none)."""
        orders = tuple(tuple(key for key in order if key != "segmentation") for order in self._orders)
        codes = {order: code for code, order in reversed(list(enumerate(orders)))}
        recode = np.array([codes[order] for order in orders] or [0], dtype=np.uint8)
        columns = dict(self._c)
        columns["order"] = recode[self._c["order"]]
        columns["ring_bounds"] = np.zeros(len(self) + 1, dtype=np.int64)
        columns["coordinate_bounds"], columns["coordinates"] = np.zeros(1, dtype=np.int64), np.empty(0)
        kept = {i: {k: v for k, v in ann.items() if k != "segmentation"} for i, ann in self._kept.items()}
        return AnnotationTable(columns, orders, kept)


def _grouped(annotations: Sequence[Mapping[str, Any]]) -> Mapping[Any, Iterable[int]]:
    grouped: dict[Any, list[int]] = defaultdict(list)
    for row, ann in enumerate(annotations):
        grouped[ann["image_id"]].append(row)
    return grouped


def rows_by_image(annotations: Sequence[Mapping[str, Any]]) -> Mapping[Any, Iterable[int]]:
    """Each image id's row numbers in ``annotations`` (a table or a list of dicts), in order: what a
    reader keeps for a run instead of the dicts (it makes them, ``annotations[row]``, when it reads)."""
    if isinstance(annotations, AnnotationTable):
        return annotations.rows_by_image()
    return _grouped(annotations)


def parsed_with_table(parse: Callable[[Callable[[dict[str, Any]], Any]], Any]) -> Any:
    """A COCO document parsed by ``parse(object_hook)`` with its annotations as an
    :class:`AnnotationTable` (parsed again with ``compact_shapes`` alone where the file holds an
    annotation-like object outside its ``annotations`` list)."""
    builder = TableBuilder()
    return builder.placed(parse(builder.hook), lambda: parse(compact_shapes))


def drop_outlines(gt: dict[str, Any]) -> None:
    """Forget every annotation's ``segmentation`` (polygons or crowd RLE), for a run that never
    reads them (a box or pose head: ~8 MiB of a 2,500-image instances file's polygons, held to the
    end for nothing). Boxes, areas and crowd flags stay: all a box or keypoint scoring reads. A
    table is replaced by one without its polygons (it is read-only); a list's dicts lose theirs."""
    annotations = gt["annotations"]
    if isinstance(annotations, AnnotationTable):
        gt["annotations"] = annotations.without_outlines()
        return
    for ann in annotations:
        ann.pop("segmentation", None)
