"""A COCO file's annotations held as columns of numbers, read back as the dicts ``json`` made.

After :mod:`~evalharness.data.compact_shapes` a 2,500-image instances file (19,800 annotations)
still held 24.8 MiB for the whole run, of which only ~10 were numbers: each annotation was a dict
(~0.3 KB), a bbox list of four floats, its ids as Python ints, a numpy array object per polygon.
:class:`AnnotationTable` holds them as columns, in blocks of :data:`BLOCK_ROWS` annotations (ids,
category, crowd flag: int64; area and bbox: float64, with which values were integers; a block's
polygons' coordinates in one float64 array with each ring's end, its keypoints in one int64 array):
~10 MiB of that file, ~0.5 KB an annotation. It is a read-only sequence of dicts: ``len``, ``[i]``
and iteration give a new dict each time, equal to what ``json`` and ``compact_shapes`` make of that
annotation: the same keys in the same order, an int where the file had an int, polygons as float64
arrays (read-only views of the block's) and keypoints as int64 ones. Every reader of
``gt["annotations"]`` works unchanged; one that keeps annotations for a run keeps row numbers
(:func:`rows_by_image`) and makes the dicts when it reads them.

An annotation the columns cannot hold exactly is kept as parsed, at its index: a key other than
COCO's (:data:`COLUMN_KEYS`), a missing one, a value of another type (a bool, a string, a float id),
an integer past 2**53 where the column is float64 or past 64 bits, a crowd's RLE dict, a polygon or
keypoints ``compact_shapes`` left as a list, float keypoints. So the checks
(``coco_annotations.check_annotations``, ``coco_rle``, ``coco_shapes``) see exactly what they saw
and name it in the same words.

The table is filled as the file is parsed (:class:`TableBuilder`, ``json``'s ``object_hook``): each
annotation's dict dies as the next is parsed, as ``compact_shapes``' lists of numbers do. A block's
rows, coordinates and keypoints are written to an unlinked temporary file (``core/spill_file.py``)
and read back as a row is made: its own slices, or the block's arrays where many rows are made.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np

from evalharness.core.spill_file import SpilledArray, SpillFile, spilled
from evalharness.data.compact_shapes import compact_shapes, is_number_array, is_polygon_array

# what every held annotation has (coco_annotations' _ANNOTATION_KEYS): a row lacking one is kept as parsed
_REQUIRED = frozenset({"id", "image_id", "category_id", "bbox", "area", "iscrowd"})
COLUMN_KEYS = _REQUIRED | {"segmentation", "keypoints", "num_keypoints"}
_INTEGER_KEYS = ("id", "image_id", "category_id", "iscrowd", "num_keypoints")  # int64 columns
_EXACT_IN_FLOAT = 2**53  # an int of at most this magnitude is itself again after float64
_INT64 = (-(2**63), 2**63)
_MOST_ORDERS = 255  # key orders a table holds (one byte a row)
BLOCK_ROWS = 1024  # annotations a block holds
HELD_ROWS = 16  # rows of a block read at once from which its spilled arrays are read whole


def _exact_number(value: object) -> bool:
    """A value a float64 column holds exactly, with its type: a float, or an int within 2**53."""
    if type(value) is float:
        return True
    return type(value) is int and -_EXACT_IN_FLOAT <= value <= _EXACT_IN_FLOAT


def _int64(value: object) -> bool:
    return type(value) is int and _INT64[0] <= value < _INT64[1]


def _polygons(value: object) -> bool:
    """A segmentation ``compact_shapes`` made arrays of: a non-empty list of flat float64 arrays."""
    return type(value) is list and bool(value) and all(map(is_polygon_array, value))


def _int_keypoints(value: object) -> bool:
    return is_number_array(value) and value.dtype == np.int64


# one annotation's numbers (packed): its ids and flags, area, box, which of them were ints in the
# file (bits 0-3 the box's values, bit 4 the area), its key order's code, and where its polygons
# and keypoints start and end in its block (rings, keypoint values): one row read is all of them
ROW = np.dtype(
    [*((key, "<i8") for key in _INTEGER_KEYS), *((key, "<f8") for key in ("area", "x", "y", "w", "h")),
     ("ints", "u1"), ("order", "u1"), *((key, "<i4") for key in ("ring0", "rings", "point0", "points"))]
)  # fmt: skip
_UNHELD = (0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0)  # a row held as parsed, in the columns


class _Block:
    """:data:`BLOCK_ROWS` annotations' columns (the last block: the rest), each array made once at
    its size when the block is full: nothing grows and is copied (arrays grown by reallocation left
    their outgrown copies in the heap: +6.8 MiB for 2,500 images); a row's values read by ``tolist``."""

    def __init__(self, rows: Any, ring_bounds: Any, coordinates: Any, keypoints: Any) -> None:  # arrays
        self.rows = rows
        self.ring_bounds = ring_bounds  # 0, then each ring's end in coordinates
        self.coordinates = coordinates  # every polygon of the block, float64, one after another
        self.keypoints = keypoints  # every annotation's keypoints, int64, one after another
        for array in (rows, ring_bounds, coordinates, keypoints):
            if isinstance(array, np.ndarray):
                array.flags.writeable = False

    def held(self) -> _Block:
        """This block with its spilled arrays read back whole (for many rows of it at once)."""
        arrays = (self.rows, self.coordinates, self.keypoints)
        if not any(isinstance(a, SpilledArray) for a in arrays):
            return self
        rows, coordinates, keypoints = (a.whole() if isinstance(a, SpilledArray) else a for a in arrays)
        return _Block(rows, self.ring_bounds, coordinates, keypoints)

    def without_outlines(self, recode: np.ndarray) -> _Block:
        rows = self.held().rows.copy()  # written to the same file again where it was spilled
        rows["order"], rows["ring0"], rows["rings"] = recode[rows["order"]], 0, 0
        file = self.rows.file if isinstance(self.rows, SpilledArray) else None
        return _Block(spilled(rows, file), np.zeros(1, dtype=np.int64), np.empty(0), self.keypoints)


class _Filling:
    """The block being filled: its rows as tuples, its polygons and keypoints as parsed arrays."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.rings: list[np.ndarray] = []
        self.keypoints: list[np.ndarray] = []
        self.points = 0

    def add(self, obj: Mapping[str, Any] | None, code: int) -> None:
        ring0, point0 = len(self.rings), self.points
        if obj is None:
            self.rows.append((*_UNHELD, ring0, ring0, point0, point0))
            return
        bbox, area = obj["bbox"], obj["area"]
        ints = sum(1 << k for k, v in enumerate(bbox) if type(v) is int) | (type(area) is int) << 4
        self.rings += obj.get("segmentation", ())
        if "keypoints" in obj:
            self.keypoints.append(obj["keypoints"])
            self.points += len(obj["keypoints"])
        ids = (obj["id"], obj["image_id"], obj["category_id"], obj["iscrowd"], obj.get("num_keypoints", 0))
        self.rows.append((*ids, area, *bbox, ints, code, ring0, len(self.rings), point0, self.points))

    def block(self, spill: SpillFile | None) -> _Block:
        """The block; its coordinates and keypoints written to ``spill`` where large (see the table)."""
        lengths = np.fromiter(map(len, self.rings), dtype=np.int64, count=len(self.rings))
        return _Block(
            spilled(np.array(self.rows, dtype=ROW), spill),
            np.concatenate(([0], np.cumsum(lengths))),
            spilled(np.concatenate(self.rings) if self.rings else np.empty(0), spill),
            spilled(np.concatenate(self.keypoints) if self.keypoints else np.empty(0, dtype=np.int64), spill),
        )


class TableBuilder:
    """``json``'s ``object_hook`` that takes each annotation (an object with ``image_id``) into
    columns as it is parsed and stands a marker in its place; :meth:`placed` then puts the table
    where the markers are (see :func:`parsed_with_table`)."""

    MARK = object()  # what the parsed document holds in an annotation's place until placed

    def __init__(self, spill: bool = True) -> None:
        self.count = 0
        self._spill = SpillFile() if spill else None
        self._blocks: list[_Block] = []
        self._filling = _Filling()
        self._orders: list[tuple[str, ...]] = []
        self._codes: dict[tuple[str, ...], int] = {}
        self._kept: dict[int, dict[str, Any]] = {}  # rows held as parsed

    def hook(self, obj: dict[str, Any]) -> Any:
        obj = compact_shapes(obj)
        if "image_id" not in obj:
            return obj
        code = self._code(obj)
        if code is None:
            self._kept[self.count] = _read_only(obj)
        self._filling.add(None if code is None else obj, code or 0)
        self.count += 1
        if len(self._filling.rows) == BLOCK_ROWS:
            self._blocks.append(self._filling.block(self._spill))
            self._filling = _Filling()
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

    def table(self) -> AnnotationTable:
        """The rows added, as a table."""
        blocks = [*self._blocks, self._filling.block(self._spill)] if self._filling.rows else self._blocks
        return AnnotationTable(blocks, self.count, tuple(self._orders), self._kept)

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


def _read_only(value: Any) -> Any:
    """``value`` (a row held as parsed) with its arrays made read-only, as the columns' are."""
    if type(value) is np.ndarray:
        value.flags.writeable = False
    elif type(value) in (list, dict):
        for item in value.values() if type(value) is dict else value:
            _read_only(item)
    return value


def _fresh(value: Any) -> Any:
    """A copy of a row held as parsed down to its lists and dicts (its numbers, strings and
    read-only arrays shared): nothing written into it reaches the table. Not ``copy.deepcopy``: a
    crowd's run lengths are thousands of ints, copied here by ``list`` at C speed."""
    if type(value) is dict:
        return {key: _fresh(item) for key, item in value.items()}
    if type(value) is list:
        nested = any(type(item) in (list, dict) for item in value)
        return [_fresh(item) for item in value] if nested else list(value)
    return value


_CELLS = (*_INTEGER_KEYS, "area", "bbox", "segmentation", "keypoints")  # a row's values, as _made has them
_Kept = dict[int, dict[str, Any]]  # rows held as parsed, by index
_Order = tuple[str, ...]  # an annotation's keys, in its order


class AnnotationTable(Sequence[dict[str, Any]]):
    """A COCO file's annotations as columns, read as the dicts ``json`` made (see the module
    docstring). Read-only: each access makes a new dict (writing into it changes nothing here)."""

    def __init__(self, blocks: list[_Block], count: int, orders: tuple[_Order, ...], kept: _Kept) -> None:
        self._blocks = blocks  # BLOCK_ROWS rows each, the last the rest
        self._count = count
        self._orders = orders
        # per key order: each key and where _made finds its value
        self._plans = tuple(tuple((key, _CELLS.index(key)) for key in order) for order in orders)
        self._kept = kept  # rows held as parsed, by index

    def __len__(self) -> int:
        return self._count

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
        block = self._blocks[position // BLOCK_ROWS]
        at = position % BLOCK_ROWS
        return self._made(block, block.ring_bounds, position, block.rows[at : at + 1].tolist()[0])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for n, block in enumerate(self._blocks):
            first, bounds, block = n * BLOCK_ROWS, block.ring_bounds.tolist(), block.held()
            for k, values in enumerate(block.rows.tolist()):  # Python numbers, one call a block
                yield self._made(block, bounds, first + k, values)

    def rows(self, positions: Iterable[int]) -> list[dict[str, Any]]:
        """The dicts of the rows at ``positions`` (0 to ``len - 1``), in that order: each block's
        rows read by one ``tolist`` (an image's annotations, say, for a reader that keeps row numbers)."""
        at = np.fromiter(positions, dtype=np.int64)
        if at.size and not (at.min() >= 0 and at.max() < len(self)):
            raise IndexError("annotation index out of range")
        out: list[dict[str, Any]] = [{}] * len(at)
        blocks = at // BLOCK_ROWS
        for n in np.unique(blocks).tolist():
            chosen = np.flatnonzero(blocks == n)
            block, wanted = self._blocks[n], at[chosen]
            block = block.held() if len(wanted) >= HELD_ROWS else block
            bounds = block.ring_bounds.tolist()
            for k, position, values in zip(
                chosen.tolist(), wanted.tolist(), _rows_at(block.rows, wanted - n * BLOCK_ROWS), strict=True
            ):
                out[k] = self._made(block, bounds, position, values)
        return out

    def _made(
        self, block: _Block, bounds: Sequence[int], position: int, values: tuple[Any, ...]
    ) -> dict[str, Any]:
        """Row ``position``'s dict from its values in ``block`` (Python numbers; ``bounds``: the
        block's ring bounds, a list where many rows are made)."""
        kept = self._kept.get(position) if self._kept else None
        if kept is not None:
            return dict(_fresh(kept))
        id_, image_id, category, crowd, count, area, x, y, w, h, ints, code, ring0, rings, point0, points = (
            values
        )
        box = [x, y, w, h]
        if ints:
            area = int(area) if ints & 16 else area
            box = [int(v) if ints >> b & 1 else v for b, v in enumerate(box)]
        polygons = keypoints = None  # an empty segmentation or keypoints is held as parsed: these are theirs
        if rings != ring0:  # its rings' coordinates, one slice of the block's (one read where spilled)
            ends = bounds[ring0 : rings + 1]
            coordinates, first = block.coordinates[ends[0] : ends[-1]], ends[0]
            polygons = [coordinates[a - first : b - first] for a, b in zip(ends, ends[1:], strict=False)]
        if points != point0:
            keypoints = block.keypoints[point0:points]
        cells = (id_, image_id, category, crowd, count, area, box, polygons, keypoints)
        return {key: cells[at] for key, at in self._plans[code]}

    def rows_by_image(self) -> Mapping[Any, Iterable[int]]:
        """Each image id's row numbers, in the file's order."""
        ids = np.concatenate([block.held().rows["image_id"] for block in self._blocks])
        for row, ann in self._kept.items():  # a row held as parsed: its id, where an int64 holds it
            if not _int64(ann.get("image_id")):  # anything else: grouped as a list of dicts is
                return _grouped(self)
            ids[row] = ann["image_id"]
        order = np.argsort(ids, kind="stable")  # each image's rows in the file's order
        ordered = ids[order]
        cuts = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(ids)]
        return {int(ordered[a]): order[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if b > a}

    def without_outlines(self) -> AnnotationTable:
        """The same annotations without ``segmentation`` (a run that never reads them holds none)."""
        orders = tuple(tuple(key for key in order if key != "segmentation") for order in self._orders)
        codes = {order: code for code, order in reversed(list(enumerate(orders)))}
        recode = np.array([codes[order] for order in orders] or [0], dtype=np.uint8)
        blocks = [block.without_outlines(recode) for block in self._blocks]
        kept = {i: {k: v for k, v in ann.items() if k != "segmentation"} for i, ann in self._kept.items()}
        return AnnotationTable(blocks, self._count, orders, kept)


def _rows_at(rows: np.ndarray | SpilledArray, at: np.ndarray) -> list[tuple[Any, ...]]:
    """``rows[at]`` as tuples of Python numbers (a spilled block's read a row at a time)."""
    read = [rows[k : k + 1] for k in at.tolist()] if isinstance(rows, SpilledArray) else [rows[at]]
    return [row for part in read for row in part.tolist()]


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


def rows_of(annotations: Sequence[Mapping[str, Any]], rows: Iterable[int]) -> list[dict[str, Any]]:
    """New dicts of the annotations at ``rows`` (of :func:`rows_by_image`): a table's made a block
    at a time, a list's copied (a reader may write into them, as pycocotools does)."""
    if isinstance(annotations, AnnotationTable):
        return annotations.rows(rows)
    return [dict(annotations[row]) for row in rows]


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
