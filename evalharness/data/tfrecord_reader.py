"""TFDS TFRecord shards (``imagenet2012-validation.tfrecord-00000-of-00064``), read without TensorFlow.

A TFRecord is ``uint64 length, uint32 masked CRC-32C(length), data, uint32 masked CRC-32C(data)``;
both CRCs are checked when a shard is listed, and a bad one is one error naming the shard and the
record. ``data`` is a ``tf.train.Example``, parsed by the protobuf runtime (LiteRT's dependency;
the message types are declared in :mod:`evalharness.data.example_proto`, no TensorFlow):
``features.feature`` is a map of name -> ``Feature`` (bytes_list,
float_list or int64_list). The image is ``image`` or ``image/encoded`` (bytes), the label ``label``
or ``image/class/label`` (int64), the sample id ``image/filename`` or ``file_name`` when present,
else ``<shard>:<record>``. The image's bytes are a contiguous slice of the record, so a worker reads
them by offset. Class names: ``label.labels.txt`` beside the shards (as TFDS writes it), else
``names`` of a ClassLabel in ``dataset_info.json``.

CRC-32C: the ``crc32c`` package (the ``tfrecord`` extra; hardware CRC instructions) when installed,
else a table-driven pure-Python CRC (4.8 MB/s against 12.7 GB/s here: fine for tests, 20 minutes
for ILSVRC's 6 GB, so a listing of more than :data:`SLOW_CRC_BYTES` without the package says so).
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Iterator
from typing import Any

from evalharness.core.errors import DataError
from evalharness.core.untrusted import read_json
from evalharness.data.bounds import DECODE_BUDGET, OverBudget, backed
from evalharness.data.container import NO_LABEL, ContainerReader, Listed, class_index, member
from evalharness.data.dataset_reader import ContainerProvenance
from evalharness.data.example_proto import DecodeError, Example, Feature
from evalharness.data.labels import read_label_file
from evalharness.data.samples import SampleList

IMAGE_KEYS = ("image", "image/encoded")
LABEL_KEYS = ("label", "image/class/label")
NAME_KEYS = ("image/filename", "file_name")
# protobuf builds every value of a parsed tf.train.Example: measured up to 19.5x a hostile record's
# bytes in memory (2M empty images), so a record may hold 1/20 of the decode budget (51 MiB: an
# ImageNet record is ~150 KB), and the parse stays within the budget whatever the file declares
EXAMPLE_EXPANSION = 20
MAX_RECORD = DECODE_BUDGET // EXAMPLE_EXPANSION
_MASK_DELTA = 0xA282EAD8
SLOW_CRC_BYTES = 64 << 20
log = logging.getLogger("evalharness")


def _table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def crc32c_python(data: bytes, value: int = 0) -> int:
    """CRC-32C (Castagnoli) in pure Python: the fallback when the ``crc32c`` package is absent."""
    crc = value ^ 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _fast() -> Callable[[bytes], int]:
    try:
        from crc32c import crc32c
    except ImportError:
        return crc32c_python
    return crc32c


crc32c = _fast()


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC-32C of ``data``."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


WANTED = IMAGE_KEYS + LABEL_KEYS + NAME_KEYS
KEPT_VALUES = 2  # of a feature's list: the first, and a second to say there is more than one
MAX_OTHER_NAMES = 64  # feature names not read here, kept to name them in an error


def parse_example(buf: bytes, wanted: tuple[str, ...] = WANTED) -> dict[str, tuple[str, list[Any]]]:
    """The ``wanted`` features of a serialized tf.train.Example (parsed by the protobuf runtime,
    :mod:`evalharness.data.example_proto`): name -> ("bytes", [(start, end), ...]), the values' spans
    in ``buf``, or ("int64", [values]), at most :data:`KEPT_VALUES` of each list, and the other
    feature names as ("other", []) (float lists are skipped: no field read here is one). The record
    was checked against the decode budget before it was read; what is kept from it is bounded
    whatever it holds. Bytes that are not an Example: :class:`ValueError`."""
    try:
        return _wanted(Example.FromString(buf), buf, wanted)
    except DecodeError as exc:
        raise ValueError(str(exc) or "not a protobuf message") from None


def _wanted(example: Any, buf: bytes, wanted: tuple[str, ...]) -> dict[str, tuple[str, list[Any]]]:
    out: dict[str, tuple[str, list[Any]]] = {}
    for entry in example.features.feature:
        key = entry.key.decode("utf-8", "replace") if len(entry.key) <= 256 else "(long name)"
        if key not in wanted:
            if len(out) < MAX_OTHER_NAMES:
                out.setdefault(key, ("other", []))
            continue
        feature = Feature.FromString(entry.value)
        if feature.HasField("bytes_list"):
            _keep(out, key, "bytes", [_span(buf, value) for value in feature.bytes_list.value[:KEPT_VALUES]])
        if feature.HasField("int64_list"):
            _keep(out, key, "int64", list(feature.int64_list.value[:KEPT_VALUES]))
    return out


def _span(buf: bytes, value: bytes) -> tuple[int, int]:
    """Where ``value`` (a bytes feature's value) lies in the record: a place its bytes are, which
    serves the same bytes when a worker reads the record's slice by offset. Its first 64 bytes are
    looked for and the rest compared in place (searching for a whole 150 KB image took 144 µs a
    record, ten times the parse); a few false starts and the whole value is searched for."""
    head, start = value[:64], -1
    for _ in range(8):
        start = buf.find(head, start + 1)
        if start < 0:
            break
        if buf.startswith(value, start):
            return start, start + len(value)
    start = buf.find(value)
    return start, start + len(value)


def _keep(out: dict[str, tuple[str, list[Any]]], key: str, kind: str, values: list[Any]) -> None:
    """A feature's values; a name given twice keeps both (two labels are then seen, not the last)."""
    before = out.get(key)
    kept = before[1] + values if before is not None and before[0] == kind else values
    out[key] = (kind, kept[:KEPT_VALUES])


def _first(features: dict[str, tuple[str, list[Any]]], keys: tuple[str, ...], kind: str) -> list[Any] | None:
    for key in keys:
        if key in features and features[key][0] == kind and features[key][1]:
            return features[key][1]
    return None


def _one_label(features: dict[str, tuple[str, list[Any]]], where: str) -> None:
    """A record whose labels differ (``label`` and ``image/class/label``, or a list of two values) is
    one error: which one is the truth is not for the reader to guess."""
    said = {key: features[key][1] for key in LABEL_KEYS if key in features and features[key][0] == "int64"}
    if len({value for values in said.values() for value in values}) > 1:
        shown = ", ".join(f"{key} {values}" for key, values in said.items())
        raise DataError(f"{where}: two labels ({shown}); write one label a record")


# --- the reader -------------------------------------------------------------------------------


def records(shard: str) -> Iterator[tuple[int, int, bytes]]:
    """(record index, offset of its data, data) of each record of ``shard``, CRCs checked."""
    size = os.path.getsize(shard)
    with open(shard, "rb") as f:
        index = 0
        while True:
            head = f.read(12)
            if not head:
                return
            where = f"{shard}:record {index}"
            if len(head) < 12:
                raise DataError(
                    f"{where}: truncated (the file ends inside the record's header); re-copy the shard"
                )
            length, length_crc = struct.unpack("<QI", head)
            if masked_crc(head[:8]) != length_crc:
                raise DataError(f"{where}: bad CRC of the record length (damaged shard); re-copy it")
            offset = f.tell()
            try:
                backed(length, max(0, size - offset - 4), "the record", budget=MAX_RECORD)
            except OverBudget as exc:
                if length <= size - offset - 4:  # there, but too big to parse within the budget
                    raise DataError(
                        f"{where}: a record of {length} bytes, over the {MAX_RECORD} bytes a record may "
                        f"hold (parsing one takes up to {EXAMPLE_EXPANSION}x its size in memory); write "
                        "smaller images into the shard"
                    ) from None
                raise DataError(f"{where}: truncated or damaged ({exc}); re-copy the shard") from None
            data = f.read(length)
            (data_crc,) = struct.unpack("<I", f.read(4))
            if masked_crc(data) != data_crc:
                raise DataError(f"{where}: bad CRC of the record data (damaged shard); re-copy it")
            yield index, offset, data
            index += 1


class TFRecordReader(ContainerReader):
    name = "tfrecord"

    def samples(self) -> SampleList:
        size = sum(os.path.getsize(shard) for shard in self.split_choice().files)
        if crc32c is crc32c_python and size > SLOW_CRC_BYTES:  # said before the long listing
            log.warning(
                "TFRecord CRCs of %d MB checked in pure Python (about 5 MB/s); "
                "pip install 'evalharness[tfrecord]' checks them in hardware",
                size >> 20,
            )
        return super().samples()

    def provenance(self) -> ContainerProvenance:
        crc = "pure Python" if crc32c is crc32c_python else "crc32c package"
        return {**super().provenance(), "crc32c": crc}

    def own_names(self, shards: list[str]) -> tuple[list[str], str] | None:
        """The class names beside the shards; shards in several folders must have the same ones
        (or none anywhere): one folder's names never label another's records."""
        folders = list(dict.fromkeys(os.path.dirname(shard) for shard in shards))
        first = _names_beside(folders[0])
        for folder in folders[1:]:
            other = _names_beside(folder)
            if (first and first[0]) != (other and other[0]):
                pairs = ((first, folders[0]), (other, folder))
                said = [f[1] if f else f"no class names in {d}" for f, d in pairs]
                raise DataError(
                    f"the shards' class names differ: {said[0]} and {said[1]}; give the shards of "
                    "one dataset (one label.labels.txt for all) or set dataset.class_names"
                )
        return first

    def list_shard(self, shard: str) -> Iterator[Listed]:
        base = os.path.basename(shard)
        for index, offset, data in records(shard):
            where = f"{shard}:record {index}"
            try:
                features = parse_example(data)
            except ValueError as exc:
                raise DataError(f"{where}: not a tf.train.Example ({exc}); re-copy the shard") from None
            labelled = self.request.labelled  # else the images alone: no label read
            if labelled:
                _one_label(features, where)
            image = _first(features, IMAGE_KEYS, "bytes")
            label = _first(features, LABEL_KEYS, "int64") if labelled else [NO_LABEL]
            if image is None or label is None:
                raise DataError(
                    f"{where}: no {'image' if image is None else 'label'} feature "
                    f"(features: {', '.join(sorted(features))[:200]}); this reader reads "
                    f"{'/'.join(IMAGE_KEYS)} bytes and {'/'.join(LABEL_KEYS)} int64"
                )
            if len(image) > 1:
                raise DataError(f"{where}: more than one image in the record; write one image a record")
            name = _first(features, NAME_KEYS, "bytes")
            sid = data[name[0][0] : name[0][1]].decode("utf-8", "replace") if name else f"{base}:{index}"
            start, end = image[0]
            found = member(shard, f"record {index}", offset + start, data[start:end])
            yield os.path.basename(sid), class_index(label[0], found.where) if labelled else NO_LABEL, found


def _names_beside(folder: str) -> tuple[list[str], str] | None:
    """(class names, their file) of the TFDS files in ``folder``: label.labels.txt, else
    dataset_info.json's ClassLabel; None where neither is."""
    labels = os.path.join(folder, "label.labels.txt")
    if os.path.isfile(labels):
        return read_label_file(labels, "TFDS label.labels.txt"), labels
    info = os.path.join(folder, "dataset_info.json")
    if os.path.isfile(info):
        names = _class_label_names(read_json(info, "TFDS dataset_info.json"))
        if names:
            return names, info
    return None


def _class_label_names(info: Any, depth: int = 0) -> list[str] | None:
    """``names`` of the first ClassLabel in a TFDS dataset_info.json (searched a few levels deep)."""
    if depth > 8 or not isinstance(info, dict | list):
        return None
    values = info.values() if isinstance(info, dict) else info
    if isinstance(info, dict):
        names = (
            (info.get("classLabel") or {}).get("names") if isinstance(info.get("classLabel"), dict) else None
        )
        if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            return names
    for value in values:
        found = _class_label_names(value, depth + 1)
        if found:
            return found
    return None
