"""Container readers without assets: tiny images packed here; every corruption is one DataError
naming the shard and the member (a record, a tar member, a row)."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pack_containers import (  # noqa: E402
    example,
    record,
    tiny_items,
    tiny_png,
    write_parquet,
    write_tfrecord,
    write_webdataset,
)

from evalharness.core.errors import ConfigError, DataError  # noqa: E402
from evalharness.data import tfrecord_reader as tfr  # noqa: E402
from evalharness.data.dataset_reader import ReadRequest, detect, reader_for  # noqa: E402
from evalharness.data.shard_names import expand_braces  # noqa: E402

ITEMS = tiny_items()


def _samples(root: str, fmt: str = "auto"):
    reader, _ = reader_for(fmt, ReadRequest(root))
    return reader, reader.samples()


def test_crc32c_fallback_equals_known_value_and_package():
    assert tfr.crc32c_python(b"123456789") == 0xE3069283
    assert tfr.crc32c(b"123456789") == 0xE3069283
    data = bytes(range(256)) * 7
    assert tfr.crc32c_python(data) == tfr.crc32c(data)


def test_brace_patterns():
    assert expand_braces("val-{0000..0002}.tar") == ["val-0000.tar", "val-0001.tar", "val-0002.tar"]
    assert expand_braces("{a,b}-{1..2}") == ["a-1", "a-2", "b-1", "b-2"]
    with pytest.raises(DataError, match="more than"):
        expand_braces("x-{0..999999}.tar")


def test_example_wire_format_round_trip():
    buf = example({"image": b"\x89PNG", "label": 7, "file_name": b"a.png"})
    features = tfr.parse_example(buf)
    assert features["label"] == ("int64", [7])
    ((start, end),) = features["image"][1]
    assert buf[start:end] == b"\x89PNG"


def test_example_types_are_tensorflows_on_the_wire():
    """The declared messages read what TensorFlow writes and write what it reads; a name that is not
    UTF-8 is shown, bytes that are not a message are a ValueError (the reader's one error)."""
    from evalharness.data.example_proto import Example, Feature

    buf = example({"image": b"\x89PNG", "label": 7})
    parsed = Example.FromString(buf)
    entries = {e.key: Feature.FromString(e.value) for e in parsed.features.feature}
    assert list(entries[b"label"].int64_list.value) == [7]
    assert list(entries[b"image"].bytes_list.value) == [b"\x89PNG"]
    assert parsed.SerializeToString() == buf
    odd = Example.FromString(buf)
    odd.features.feature[0].key = b"\xff"
    assert "\ufffd" in tfr.parse_example(odd.SerializeToString())
    with pytest.raises(ValueError):
        tfr.parse_example(b"\x0a\x05ab")  # a field longer than the record


def test_an_images_span_is_its_own_bytes_when_its_start_repeats_earlier():
    image = bytes(range(64)) + b"the image"
    buf = example({"file_name": bytes(range(64)) + b"a name", "image": image, "label": 1})
    ((start, end),) = tfr.parse_example(buf)["image"][1]
    assert buf[start:end] == image


@pytest.mark.parametrize("kind", ["parquet", "webdataset", "tfrecord"])
def test_each_container_lists_and_opens(tmp_path, kind):
    pytest.importorskip("pyarrow") if kind == "parquet" else None
    root = {
        "parquet": lambda: str(write_parquet(ITEMS, tmp_path / "p", shards=2, group=1)),
        "webdataset": lambda: write_webdataset(ITEMS, tmp_path / "w", shards=2),
        "tfrecord": lambda: str(write_tfrecord(ITEMS, tmp_path / "t", shards=2)),
    }[kind]()
    assert detect(root)[0] == kind
    reader, samples = _samples(root)
    assert [s.key for s in samples] == [name for name, _, _ in ITEMS]
    assert [reader.open(s) for s in samples] == [data for _, data, _ in ITEMS]
    assert len(list(reader.files(samples))) == 2


def test_folder_format_on_a_container_is_one_error(tmp_path):
    root = str(write_tfrecord(ITEMS, tmp_path / "t"))
    with pytest.raises(ConfigError, match="set dataset.format=tfrecord"):
        reader_for("val_txt", ReadRequest(root))


def test_tfrecord_bad_crc_names_shard_and_record(tmp_path):
    folder = write_tfrecord(ITEMS, tmp_path / "t")
    shard = next(folder.glob("*.tfrecord-*"))
    data = bytearray(shard.read_bytes())
    second = len(record(example({"image": ITEMS[0][1], "label": 0, "file_name": b"img0.png"})))
    data[second + 20] ^= 0xFF  # a byte of record 1's data
    shard.write_bytes(bytes(data))
    with pytest.raises(DataError, match=rf"{shard.name}:record 1: bad CRC of the record data"):
        _samples(str(folder))


def test_tfrecord_truncated_names_the_record(tmp_path):
    folder = write_tfrecord(ITEMS, tmp_path / "t")
    shard = next(folder.glob("*.tfrecord-*"))
    shard.write_bytes(shard.read_bytes()[:-10])
    with pytest.raises(DataError, match=r":record 3: truncated"):
        _samples(str(folder))


def test_truncated_tar_names_shard_and_member(tmp_path):
    pattern = write_webdataset(ITEMS, tmp_path / "w")
    shard = tmp_path / "w" / "val-0000.tar"
    whole = shard.read_bytes()
    shard.write_bytes(whole[:2580])  # inside the second image's data (512-byte headers and blocks)
    with pytest.raises(DataError, match=r"val-0000\.tar:img1\.png: truncated"):
        _samples(pattern)
    shard.write_bytes(whole[:1700])  # between members: the next header is missing
    with pytest.raises(DataError, match=r"val-0000\.tar: damaged or truncated tar after member img0\.cls"):
        _samples(pattern)


def test_tar_image_without_label_names_the_member(tmp_path):
    import tarfile

    shard = tmp_path / "val-0000.tar"
    with tarfile.open(shard, "w") as tar:
        info = tarfile.TarInfo("img0.png")
        info.size = len(ITEMS[0][1])
        tar.addfile(info, io.BytesIO(ITEMS[0][1]))
    with pytest.raises(DataError, match=r"val-0000\.tar:img0\.png: no \.cls or \.json label"):
        _samples(str(shard))


def test_parquet_without_image_column_names_the_shard(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    shard = tmp_path / "validation.parquet"
    pq.write_table(pa.table({"label": [0, 1]}), shard)
    with pytest.raises(DataError, match=r"validation\.parquet: no image column"):
        _samples(str(shard))


def test_a_member_changed_after_listing_is_refused(tmp_path):
    pattern = write_webdataset(ITEMS, tmp_path / "w")
    reader, samples = _samples(pattern)
    shard = Path(samples[0].member.shard)
    data = bytearray(shard.read_bytes())
    data[samples[0].member.offset + 30] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"img0\.png: bytes differ from when the shard was listed"):
        reader.open(samples[0])


def test_unlabelled_split_is_one_error(tmp_path):
    items = [(name, data, -1) for name, data, _ in ITEMS[:1]]
    folder = write_tfrecord(items, tmp_path / "t")
    with pytest.raises(DataError, match=r":record 0: label -1 is not a class index"):
        _samples(str(folder))


def test_shard_index_is_kept_verified_and_rebuilt(tmp_path, caplog):
    pattern = write_webdataset(ITEMS, tmp_path / "w", shards=2)
    index_dir = str(tmp_path / "index")

    def listed():
        reader, _ = reader_for("auto", ReadRequest(pattern, index_dir=index_dir))
        samples = reader.samples()
        return reader, samples

    first, samples = listed()
    assert first.provenance()["index"]["shards_from_index"] == 0
    second, again = listed()
    assert second.provenance()["index"]["shards_from_index"] == 2
    assert again == samples and second.open(again[0]) == ITEMS[0][1]
    kept = sorted((tmp_path / "index").iterdir())
    kept[0].write_text("[]")  # damaged: rebuilt and said, never used
    third, again = listed()
    assert third.provenance()["index"]["shards_from_index"] == 1
    assert "rebuilt, not used" in third.provenance()["index"]["rebuilt"][0]
    assert again == samples
    # a digest edited to another of the same size: the file parses and its shard is unchanged, so
    # it would be trusted (the manifest rests on it); its columns_sha256 no longer matches: rebuilt
    doc = json.loads(kept[1].read_text())
    doc["sha256"][0] = ("1" if doc["sha256"][0][0] == "0" else "0") + doc["sha256"][0][1:]
    kept[1].write_text(json.dumps(doc))
    fourth, again = listed()
    assert fourth.provenance()["index"]["shards_from_index"] == 1
    assert "columns_sha256" in fourth.provenance()["index"]["rebuilt"][0]
    assert again == samples


def test_bare_class_indices_keep_their_index():
    """A container without class names (webdataset's .cls): each sample keeps its class index, so
    the task scores it by index (``LabeledSample.index``), as a folder's val.txt without names."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        _, samples = _samples(write_webdataset(ITEMS, Path(folder) / "w", shards=1))
    assert [s.index for s in samples] == [label for _, _, label in ITEMS]


def test_a_shuffled_container_is_read_as_stored(tmp_path):
    """TFDS shuffles records: the read plan goes front to back through the shards, ids unchanged."""
    shuffled = [ITEMS[2], ITEMS[0], ITEMS[3], ITEMS[1]]
    reader, samples = _samples(str(write_tfrecord(shuffled, tmp_path / "t", shards=2)))
    assert [s.key for s in samples] == ["img0.png", "img1.png", "img2.png", "img3.png"]
    plan = reader.read_plan(samples)
    assert [s.key for s in plan] == ["img2.png", "img0.png", "img3.png", "img1.png"]
    assert reader.provenance()["read_order"].endswith(": 4 samples read in another order than their ids")


def test_a_parquet_page_is_kept_while_the_plan_reads_it_and_stragglers_are_copied_out(tmp_path):
    pytest.importorskip("pyarrow")
    items = [(f"img{i:02d}.png", tiny_png(i * 20), i % 4) for i in range(12)]
    reader, samples = _samples(str(write_parquet(items, tmp_path / "p", group=4)))
    plan = reader.read_plan(samples)
    by_key = {s.key: s for s in plan}
    order = ["img00.png", "img01.png", "img02.png", "img04.png", "img03.png", "img05.png", "img06.png"]
    order += ["img08.png", "img07.png", "img09.png", "img10.png", "img11.png"]  # two workers, a step apart
    for key in order:
        assert reader.open(by_key[key]) == items[int(key[3:5])][1]
        assert len(reader._pages) <= 1  # never two pages decoded at once
    assert reader._pages == {} and reader._rows == {} and reader._expected == {}
    assert reader.open(plan[5]) == items[5][1]  # a read outside the plan (explain): decoded again


def test_a_shard_unchanged_since_listing_is_read_without_a_second_hash(tmp_path):
    """Its stat proves no write since the listing hashed it; any write (even a touch) makes every
    member's sha256 checked again."""
    reader, samples = _samples(write_webdataset(ITEMS, tmp_path / "w"))
    shard = samples[0].member.shard
    assert reader.unchanged_since_listed(shard)
    os.utime(shard)  # a write's footprint: ctime moves, no user call sets it back
    assert not reader.unchanged_since_listed(shard)
    assert reader.open(samples[0]) == ITEMS[0][1]  # the same bytes: the digest check passes


def test_a_parquet_shard_replaced_after_listing_is_one_error_saying_so(tmp_path):
    pytest.importorskip("pyarrow")
    reader, samples = _samples(str(write_parquet(ITEMS, tmp_path / "p", group=2)))
    shard = Path(samples[0].member.shard)
    other = write_parquet(ITEMS[::-1] * 2, tmp_path / "q", group=3)
    shard.write_bytes(next(other.iterdir()).read_bytes())
    # its page offset now lands on other bytes: the damage is reported as the change it is
    with pytest.raises(DataError, match=r"parquet:row 0: the shard changed since it was listed"):
        reader.open(samples[0])


def test_an_id_in_two_shards_is_one_error_naming_both(tmp_path):
    """Found without a set of every id (the sorted list holds a repeat beside its first listing)."""
    write_webdataset(ITEMS[:2], tmp_path / "a", prefix="val")
    write_webdataset(ITEMS[1:3], tmp_path / "b", prefix="val")
    (tmp_path / "b" / "val-0000.tar").rename(tmp_path / "a" / "val-0001.tar")
    named = r"val-0001\.tar:img1\.png: sample id 'img1\.png' is also in .*val-0000\.tar"
    with pytest.raises(DataError, match=named):
        _samples(str(tmp_path / "a" / "val-{0000..0001}.tar"))
