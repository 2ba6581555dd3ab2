"""One answer per sample, from every shard (issue 53, class 2), generated over every container.

Class names that differ between shards (parquet ClassLabel metadata, TFDS label files of shards in
two folders) and a sample carrying two labels that differ (a webdataset key with ``.cls`` and
``.json`` or two of one, a TFRecord with ``label`` and ``image/class/label`` or a list of two) are
one DataError naming both shards or the member and the fix: never the first shard's names for all,
never the last label silently. Shards that agree, and a label given twice with one value (timm's
``.json`` repeats its ``.cls``), read as before.
"""

from __future__ import annotations

import io
import json
import re
import sys
import tarfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import _field, _varint, example, record, tiny_items, tiny_png  # noqa: E402

from evalharness.core.errors import DataError  # noqa: E402
from evalharness.data.dataset_reader import ReadRequest, reader_for  # noqa: E402

ITEMS = tiny_items()
NAMES = ["cat", "dog", "eel", "fox"]


def _samples(root: str, fmt: str):
    reader, _ = reader_for(fmt, ReadRequest(root))
    return reader.samples()


# --- parquet: each shard's ClassLabel names --------------------------------------------------------

SHARD_NAMES = {
    "a class renamed": (NAMES, ["cat", "dog", "owl", "fox"], r"class 2 is 'eel' and 'owl'"),
    "a class more": (NAMES, [*NAMES, "gnu"], r"4 and 5 names"),
    "names in the first only": (NAMES, None, r"one has no class names"),
    "names in the second only": (None, NAMES, r"one has no class names"),
    "the classes reordered": (NAMES, ["dog", "cat", "eel", "fox"], r"class 0 is 'cat' and 'dog'"),
}


def _parquet_shard(path: Path, items, names: list[str] | None) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    label: dict = {"_type": "ClassLabel", "names": names} if names else {"_type": "Value", "dtype": "int64"}
    features = {"image": {"_type": "Image"}, "label": label}
    table = pa.table(
        {
            "image": [{"bytes": data, "path": name} for name, data, _ in items],
            "label": pa.array([i for _, _, i in items], pa.int64()),
        }
    ).replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": features}}).encode()})
    pq.write_table(table, path)


@pytest.mark.parametrize("case", SHARD_NAMES.keys())
def test_parquet_shards_whose_class_names_differ_are_one_error(tmp_path, case):
    first, second, why = SHARD_NAMES[case]
    _parquet_shard(tmp_path / "validation-00000-of-00002.parquet", ITEMS[:2], first)
    _parquet_shard(tmp_path / "validation-00001-of-00002.parquet", ITEMS[2:], second)
    with pytest.raises(DataError) as err:
        _samples(str(tmp_path), "parquet")
    message = str(err.value)
    assert (
        "validation-00000-of-00002.parquet and " in message and "validation-00001-of-00002.parquet" in message
    )
    assert "give the shards of one dataset" in message
    assert re.search(why, message), message


def test_parquet_shards_that_agree_read_as_before(tmp_path):
    _parquet_shard(tmp_path / "validation-00000-of-00002.parquet", ITEMS[:2], NAMES)
    _parquet_shard(tmp_path / "validation-00001-of-00002.parquet", ITEMS[2:], NAMES)
    assert [s.label for s in _samples(str(tmp_path), "parquet")] == NAMES


# --- webdataset: a key with two label members ---------------------------------------------------

TWO_LABELS = {
    ".cls and .json": [("img0.cls", b"1"), ("img0.json", b'{"label": 2}')],
    ".json and .cls": [("img0.json", b'{"label": 2}'), ("img0.cls", b"1")],
    "two .cls": [("img0.cls", b"1"), ("img0.cls", b"3")],
    "two .json": [("img0.json", b'{"cls": 1}'), ("img0.json", b'{"label": 0}')],
}


def _tar(path: Path, members: list[tuple[str, bytes]]) -> None:
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, payload in members:
            info = tarfile.TarInfo(name)
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))


@pytest.mark.parametrize("labels", TWO_LABELS.values(), ids=TWO_LABELS.keys())
def test_a_webdataset_key_with_two_labels_is_one_error_naming_the_member(tmp_path, labels):
    shard = tmp_path / "val-0000.tar"
    _tar(shard, [("img0.png", tiny_png(0)), *labels])
    second = labels[1][0].replace(".", r"\.")
    with pytest.raises(DataError, match=rf"val-0000\.tar:{second}: a second label for key 'img0' .*"
                       r"keep one \.cls or \.json label a sample"):  # fmt: skip
        _samples(str(shard), "webdataset")


def test_a_webdataset_label_repeated_with_one_value_reads_as_before(tmp_path):
    shard = tmp_path / "val-0000.tar"
    _tar(shard, [("img0.png", tiny_png(0)), ("img0.cls", b"2"), ("img0.json", b'{"label": 2, "x": "y"}')])
    assert [s.index for s in _samples(str(shard), "webdataset")] == [2]


# --- TFRecord: a record with two labels; shards with different class names -----------------------


def _entry(key: str, feature: bytes) -> bytes:
    return _field(1, _field(1, key.encode()) + _field(2, feature))


def _ints(*values: int) -> bytes:
    return _field(3, _field(1, b"".join(_varint(v) for v in values)))


TFRECORD_LABELS = {
    "label and image/class/label": (
        [_entry("label", _ints(1)), _entry("image/class/label", _ints(2))],
        r"two labels \(label \[1\], image/class/label \[2\]\)",
    ),
    "a list of two": ([_entry("label", _ints(1, 3))], r"two labels \(label \[1, 3\]\)"),
    "label given twice": (
        [_entry("label", _ints(1)), _entry("label", _ints(0))],
        r"two labels \(label \[1, 0\]\)",
    ),
    "two images": (
        [_entry("label", _ints(1)), _entry("image", _field(1, _field(1, tiny_png(1))))],
        r"more than one image in the record",
    ),
}


@pytest.mark.parametrize("case", TFRECORD_LABELS.keys())
def test_a_tfrecord_with_two_labels_is_one_error_naming_the_record(tmp_path, case):
    entries, why = TFRECORD_LABELS[case]
    image = _entry("image", _field(1, _field(1, tiny_png(0))))
    shard = tmp_path / "imagenet2012-validation.tfrecord-00000-of-00001"
    shard.write_bytes(record(_field(1, image + b"".join(entries))))
    with pytest.raises(DataError, match=rf"tfrecord-00000-of-00001:record 0: {why}"):
        _samples(str(shard), "tfrecord")


def test_a_tfrecord_label_repeated_with_one_value_reads_as_before(tmp_path):
    image = _entry("image", _field(1, _field(1, tiny_png(0))))
    entries = image + _entry("label", _ints(2)) + _entry("image/class/label", _ints(2))
    shard = tmp_path / "imagenet2012-validation.tfrecord-00000-of-00001"
    shard.write_bytes(record(_field(1, entries)))
    assert [s.index for s in _samples(str(shard), "tfrecord")] == [2]


FOLDER_NAMES = {
    "a class renamed": (NAMES, ["cat", "dog", "owl", "fox"]),
    "a label file in one folder only": (NAMES, None),
}


@pytest.mark.parametrize("case", FOLDER_NAMES.keys())
def test_tfrecord_shards_in_folders_with_different_class_names_are_one_error(tmp_path, case):
    for i, names in enumerate(FOLDER_NAMES[case]):
        folder = tmp_path / f"part{i}"
        folder.mkdir()
        if names:
            (folder / "label.labels.txt").write_text("\n".join(names) + "\n")
        name, data, label = ITEMS[i]
        shard = folder / f"imagenet2012-validation.tfrecord-0000{i}-of-00002"
        shard.write_bytes(record(example({"image": data, "label": label, "file_name": name.encode()})))
    with pytest.raises(
        DataError, match=r"the shards' class names differ: .*part0.* and .*part1.*give the shards"
    ):
        _samples(str(tmp_path / "part*" / "*.tfrecord-*"), "tfrecord")
