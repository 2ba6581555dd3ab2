"""Pack images with class indices into the containers users keep ImageNet in: Hugging Face parquet
(pyarrow), webdataset tar shards (tarfile) and TFDS TFRecords (framing and tf.train.Example bytes
written by hand, so neither TensorFlow nor protobuf is needed). Used by the container tests and
benchmarks/bench_containers.py."""

from __future__ import annotations

import io
import json
import struct
import tarfile
from collections.abc import Sequence
from pathlib import Path

from evalharness.data.tfrecord_reader import masked_crc

ASSETS = Path(__file__).resolve().parents[1].parent / "shared" / "assets"
CLASS_NAMES = Path(__file__).resolve().parents[1] / "datasets" / "sample" / "imagenet_classes.txt"

Item = tuple[str, bytes, int]  # (file name, encoded image, class index)


def val50_items(repeat: int = 1) -> list[Item]:
    """val50 with val.txt's class indices; ``repeat`` > 1 makes distinct names (``r01_<name>``)."""
    truth = dict(line.split() for line in (ASSETS / "imagenet/val.txt").read_text().splitlines() if line)
    files = sorted(p for p in (ASSETS / "imagenet/val50").iterdir() if p.suffix == ".JPEG")
    base = [(p.name, p.read_bytes(), int(truth[p.name])) for p in files]
    if repeat == 1:
        return base
    return [(f"r{r:02d}_{name}", data, label) for r in range(repeat) for name, data, label in base]


def tiny_png(shade: int, size: tuple[int, int] = (4, 3)) -> bytes:
    """A real PNG of one colour: unit tests pack these, no assets needed."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, (shade, 0, 0)).save(out, "PNG")
    return out.getvalue()


def tiny_items(n: int = 4, size: tuple[int, int] = (4, 3)) -> list[Item]:
    """``img<i>.png`` of class i, each a different colour."""
    return [(f"img{i}.png", tiny_png(i * 40, size), i) for i in range(n)]


def class_names() -> list[str]:
    return CLASS_NAMES.read_text(encoding="utf-8").splitlines()


def _chunks(items: Sequence[Item], n: int) -> list[Sequence[Item]]:
    size = -(-len(items) // n)
    return [items[i : i + size] for i in range(0, len(items), size)]


def write_parquet(
    items: Sequence[Item], folder: Path, shards: int = 1, group: int = 16, split: str = "validation"
) -> Path:
    """``folder/<split>-0000i-of-0000n.parquet`` as the datasets library writes them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    features = {"image": {"_type": "Image"}, "label": {"names": class_names(), "_type": "ClassLabel"}}
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    for i, chunk in enumerate(_chunks(items, shards)):
        table = pa.table(
            {
                "image": [{"bytes": data, "path": name} for name, data, _ in chunk],
                "label": pa.array([label for _, _, label in chunk], pa.int64()),
            }
        ).replace_schema_metadata(meta)
        pq.write_table(table, folder / f"{split}-{i:05d}-of-{shards:05d}.parquet", row_group_size=group)
    return folder


def write_webdataset(items: Sequence[Item], folder: Path, shards: int = 1, prefix: str = "val") -> str:
    """``folder/<prefix>-000i.tar`` (``<key>.<ext>`` + ``<key>.cls``); returns the brace pattern."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, chunk in enumerate(_chunks(items, shards)):
        with tarfile.open(folder / f"{prefix}-{i:04d}.tar", "w", format=tarfile.USTAR_FORMAT) as tar:
            for name, data, label in chunk:
                key, ext = name.split(".", 1)
                for member, payload in ((f"{key}.{ext}", data), (f"{key}.cls", str(label).encode())):
                    info = tarfile.TarInfo(member)
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
    return str(folder / f"{prefix}-{{0000..{shards - 1:04d}}}.tar")


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # a negative int64 is ten bytes of two's complement
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def example(features: dict[str, bytes | int]) -> bytes:
    """A tf.train.Example: bytes features as BytesList, ints as packed Int64List."""
    entries = b""
    for key, value in features.items():
        if isinstance(value, bytes):
            feature = _field(1, _field(1, value))  # Feature.bytes_list{value}
        else:
            feature = _field(3, _field(1, _varint(value)))  # Feature.int64_list{packed value}
        entries += _field(1, _field(1, key.encode()) + _field(2, feature))  # map entry
    return _field(1, entries)  # Example.features


def record(data: bytes) -> bytes:
    """One TFRecord: length, masked CRC of the length, data, masked CRC of the data."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc(length)) + data + struct.pack("<I", masked_crc(data))


def write_tfrecord(
    items: Sequence[Item], folder: Path, shards: int = 1, filename: bool = True, split: str = "validation"
) -> Path:
    """TFDS ``imagenet2012-<split>.tfrecord-0000i-of-0000n`` + ``label.labels.txt``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "label.labels.txt").write_text("\n".join(class_names()) + "\n", encoding="utf-8")
    for i, chunk in enumerate(_chunks(items, shards)):
        with open(folder / f"imagenet2012-{split}.tfrecord-{i:05d}-of-{shards:05d}", "wb") as f:
            for name, data, label in chunk:
                fields: dict[str, bytes | int] = {"image": data, "label": label}
                if filename:
                    fields["file_name"] = name.encode()
                f.write(record(example(fields)))
    return folder
