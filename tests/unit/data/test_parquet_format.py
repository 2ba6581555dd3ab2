"""The pyarrow-free parquet reader against what pyarrow writes (every codec, page version, encoding,
nulls, checksums), the compact protocol and snappy by hand, and each damage as one DataError naming
the shard and the byte."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import pytest

from evalharness.core.errors import DataError
from evalharness.data.parquet import compression, snappy
from evalharness.data.parquet.file import ParquetFile
from evalharness.data.parquet.thrift import Malformed, Short, read_struct

REPO = Path(__file__).resolve().parents[3]

WRITERS = [
    {},  # pyarrow's defaults, which the datasets library keeps: snappy, dictionary then PLAIN, v1 pages
    {"compression": "none"},
    {"compression": "gzip"},
    {"compression": "zstd"},
    {"compression": "brotli"},
    {"compression": "lz4"},
    {"data_page_version": "2.0", "compression": "zstd", "data_page_size": 300},
    {"use_dictionary": False, "write_page_checksum": True},
    {"data_page_size": 100},
    {"write_page_index": True, "use_content_defined_chunking": True},  # newer datasets releases
    # parquet v2 writers (Spark, DuckDB): delta-packed integers and byte arrays
    {
        "use_dictionary": False,
        "column_encoding": {"label": "DELTA_BINARY_PACKED", "image.bytes": "DELTA_LENGTH_BYTE_ARRAY"},
    },
    {
        "use_dictionary": False,
        "data_page_version": "2.0",
        "data_page_size": 200,
        "column_encoding": {"image.path": "DELTA_BYTE_ARRAY", "image.bytes": "DELTA_BYTE_ARRAY"},
    },
]


def _table(pa):
    rows = [{"bytes": bytes([i]) * (40 + i), "path": f"img{i}.png"} for i in range(40)]
    rows[3], rows[5] = None, {"bytes": None, "path": "x"}
    rows[8] = dict(rows[9])  # a repeated image: one dictionary entry for two rows
    labels = [i % 7 for i in range(40)]
    labels[7] = None
    return pa.table({"image": rows, "label": pa.array(labels, pa.int64())})


def _read(pf: ParquetFile, path: tuple[str, ...]) -> list:
    out = []
    for group in pf.groups:
        for page in pf.pages(group[path]):
            assert [_b(v) for v in pf.page_at(page.offset)] == [_b(v) for v in page.values]
            out += [_b(v) for v in page.values]
    return out


def _b(value):
    return bytes(value) if isinstance(value, memoryview) else value


@pytest.mark.parametrize(
    "writer", WRITERS, ids=lambda w: ",".join(f"{k}={v}" for k, v in w.items()) or "defaults"
)
def test_every_value_equals_pyarrows(tmp_path, writer):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    if writer.get("compression") in ("brotli", "lz4"):
        pytest.importorskip("cramjam", reason="brotli and lz4 pages are decoded by cramjam")
    table = _table(pa)
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=16, **writer)
    pf = ParquetFile(str(tmp_path / "t.parquet"))
    rows = table.to_pylist()
    assert pf.top == {"image": ["bytes", "path"], "label": []}
    assert _read(pf, ("image", "bytes")) == [r["image"] and r["image"]["bytes"] for r in rows]
    assert _read(pf, ("image", "path")) == [r["image"] and r["image"]["path"].encode() for r in rows]
    assert _read(pf, ("label",)) == [r["label"] for r in rows]


@pytest.mark.parametrize("block", [7, 1 << 18])
def test_snappy_pages_stream_through_any_block_size(tmp_path, monkeypatch, block):
    """Pages decoded as they stream from the file: a 7-byte block puts every tag, length and long
    literal across a refill."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    monkeypatch.setattr(snappy, "BLOCK", block)
    monkeypatch.setattr(compression, "_cramjam", lambda: None)  # every page through the stream
    rng = random.Random(3)
    images = [rng.randbytes(30_000) + b"\xff\xd8" * 500 for _ in range(12)]  # literals and copies
    table = pa.table({"image": [{"bytes": b, "path": f"{i}.jpg"} for i, b in enumerate(images)]})
    pq.write_table(table, tmp_path / "t.parquet", row_group_size=6)
    pf = ParquetFile(str(tmp_path / "t.parquet"))
    assert _read(pf, ("image", "bytes")) == images


def test_a_flipped_byte_in_a_checksummed_page_names_the_shard_and_byte(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    shard = tmp_path / "validation.parquet"
    pq.write_table(_table(pa), shard, write_page_checksum=True, compression="none", use_dictionary=False)
    pf = ParquetFile(str(shard))
    chunk = pf.groups[0][("image", "bytes")]
    page = next(pf.pages(chunk))  # the chunk's one page: its last byte is an image's
    data = bytearray(shard.read_bytes())
    data[chunk.end - 1] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(
        DataError, match=rf"validation\.parquet: parquet damaged at byte {page.offset} \(page checksum"
    ):
        ParquetFile(str(shard)).page_at(page.offset)


def test_delta_packed_integers_at_their_limits(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    values = [(-1) ** i * i * i * 1000003 for i in range(300)] + [None, 2**62, -(2**63), 2**63 - 1, 5]
    table = pa.table({"label": pa.array(values, pa.int64()), "small": pa.array(range(305), pa.int32())})
    encodings = {"label": "DELTA_BINARY_PACKED", "small": "DELTA_BINARY_PACKED"}
    pq.write_table(table, tmp_path / "d.parquet", use_dictionary=False, column_encoding=encodings)
    pf = ParquetFile(str(tmp_path / "d.parquet"))
    assert _read(pf, ("label",)) == values and _read(pf, ("small",)) == list(range(305))


def test_an_encoding_it_does_not_decode_is_named(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "b.parquet"
    table = pa.table({"label": pa.array(range(9), pa.int64())})
    pq.write_table(table, path, use_dictionary=False, column_encoding={"label": "BYTE_STREAM_SPLIT"})
    with pytest.raises(DataError, match=r"b\.parquet: column label has values encoded as BYTE_STREAM_SPLIT"):
        _read(ParquetFile(str(path)), ("label",))


def test_truncated_and_foreign_files_are_one_error(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    shard = tmp_path / "v.parquet"
    pq.write_table(_table(pa), shard)
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"v\.parquet: not a readable parquet file \(no PAR1\)"):
        ParquetFile(str(shard))
    footer = int.from_bytes(data[-8:-4], "little")
    shard.write_bytes(data[: -8 - footer] + b"\x19" * footer + data[-8:])  # the footer's bytes replaced
    with pytest.raises(DataError, match=r"v\.parquet: parquet footer damaged"):
        ParquetFile(str(shard))


def test_compact_protocol_by_hand():
    # field 1 i32 = -3 (zigzag 5), field 4 binary "ab", field 5 list<i32> [1, 2], field 6 true, stop
    data = bytes([0x15, 0x05, 0x38, 0x02]) + b"ab" + bytes([0x19, 0x25, 0x02, 0x04, 0x11, 0x00])
    struct, end = read_struct(data)
    assert struct == {1: -3, 4: b"ab", 5: [1, 2], 6: True} and end == len(data)
    with pytest.raises(Short):
        read_struct(data[:5])
    with pytest.raises(Malformed, match="nested deeper"):
        read_struct(bytes([0x1C]) * 40)
    with pytest.raises(Short, match="elements"):  # a count no file of this size can hold
        read_struct(bytes([0x19, 0xF5, 0xFF, 0xFF, 0xFF, 0x0F]))


def test_snappy_by_hand_literal_and_overlapping_copy():
    block = bytes([10, 0x04]) + b"ab" + bytes([(4 << 2) | 1, 2])  # "ab" then copy 8 from 2 back
    assert snappy.decode(io.BytesIO(block).read, 10) == b"ab" * 5
    with pytest.raises(snappy.Damaged, match="header says"):
        snappy.decode(io.BytesIO(block).read, 9)
    with pytest.raises(snappy.Damaged, match="copy outside the block"):
        snappy.decode(io.BytesIO(bytes([10, (4 << 2) | 1, 9])).read, 10)


def test_snappy_in_python_equals_cramjam():
    cramjam = pytest.importorskip("cramjam")
    data = (bytes(range(256)) * 40) + b"\xff\xd8" * 3000 + bytes(5000)
    assert snappy.decode(io.BytesIO(bytes(cramjam.snappy.compress_raw(data))).read, len(data)) == data


def test_a_compressible_snappy_page_goes_to_cramjam_within_its_declared_size():
    cramjam = pytest.importorskip("cramjam")
    data = b"train/n01440764/img_000001.JPEG," * 2000
    block = bytes(cramjam.snappy.compress_raw(data))
    assert len(block) * compression.WHOLE_SNAPPY_RATIO <= len(data)  # the whole-page path

    def decoded(stored: bytes, size: int = len(data), prefix: bytes = b"") -> bytes:
        return bytes(compression.decompress_stream(1, io.BytesIO(stored).read, len(block), size, "w", prefix))

    assert decoded(block, prefix=b"levels") == b"levels" + data
    with pytest.raises(snappy.Damaged, match="header says"):
        decoded(block, len(data) - 1)
    with pytest.raises(snappy.Damaged, match="cut to"):
        decoded(block[:-3])
    with pytest.raises(snappy.Damaged):  # a copy reaching before the block's start
        decoded(block[:3] + bytes([(4 << 2) | 1, 200]) + block[5:])


def test_a_codec_nobody_here_decodes_names_it_and_the_fix(monkeypatch):
    with pytest.raises(
        DataError, match=r"s\.parquet:image\.bytes: pages compressed with lzo.*compression='snappy'"
    ):
        compression.decompress(3, b"", 0, "s.parquet:image.bytes")
    monkeypatch.setattr(compression, "_cramjam", lambda: None)
    with pytest.raises(DataError, match=r"brotli.*evalharness\[parquet\]"):
        compression.decompress(4, b"", 0, "s.parquet:image.bytes")


def test_a_parquet_dataset_is_read_without_importing_pyarrow(tmp_path):
    """pyarrow's import and allocator cost a streamed run more memory than its images: never loaded."""
    pytest.importorskip("pyarrow")
    sys.path.insert(0, str(REPO / "tests"))
    from pack_containers import write_parquet

    items = [(f"img{i}.png", bytes([i]) * 50, i) for i in range(5)]
    folder = write_parquet(items, tmp_path / "p", group=2)
    script = (
        "import sys\n"
        "from evalharness.data.dataset_reader import ReadRequest, reader_for\n"
        f"reader, _ = reader_for('parquet', ReadRequest({str(folder)!r}))\n"
        "samples = reader.samples()\n"
        "assert [reader.read_member(s.member) for s in samples] == [bytes([i]) * 50 for i in range(5)]\n"
        "assert 'pyarrow' not in sys.modules, 'pyarrow was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]


def _clean_read(path: Path) -> dict[tuple[str, ...], list] | None:
    """Every leaf's values, or None where the reader's answer is its one DataError."""
    try:
        return _leaf_values(ParquetFile(str(path)))
    except DataError:
        return None


def _leaf_values(pf: ParquetFile) -> dict[tuple[str, ...], list]:
    """Every leaf's values, read page by page (and each page again by its offset)."""
    out: dict[tuple[str, ...], list] = {}
    for group in pf.groups:
        for path, chunk in group.items():
            for page in pf.pages(chunk):
                assert [_b(v) for v in pf.page_at(page.offset)] == [_b(v) for v in page.values]
                out.setdefault(path, []).extend(_b(v) for v in page.values)
    return out


def _pyarrows_values(pq, pa, path: Path) -> dict[tuple[str, ...], list]:
    """What pyarrow reads from ``path``, as :func:`_leaf_values` lists it (strings as their bytes:
    damaged text need not be UTF-8); raises where pyarrow refuses the file."""
    table = pq.read_table(path)
    image = table.column("image").combine_chunks()
    valid = image.is_valid().to_pylist()

    def leaf(name: str) -> list:
        values = image.field(name).cast(pa.binary()).to_pylist()
        return [v if ok else None for v, ok in zip(values, valid, strict=True)]

    labels = table["label"].to_pylist()
    return {("image", "bytes"): leaf("bytes"), ("image", "path"): leaf("path"), ("label",): labels}


@pytest.mark.parametrize("writer", [{}, {"data_page_version": "2.0", "compression": "gzip"}])
def test_random_damage_is_a_data_error_or_a_clean_read(tmp_path, monkeypatch, writer):
    """Seeded byte flips and truncations anywhere in the file: each read ends in DataError or reads
    through; never another exception (a file's fields can hold any type). A clean read is a right
    read: every value equals what pyarrow reads from the same bytes, or, where pyarrow refuses them,
    what it reads with only the damage that fell on the column chunks (the original values where no
    flip hit a chunk). Snappy pages are read twice, by cramjam and by the Python decoder: the two
    agree on every damaged file, value for value or both an error."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    original = tmp_path / "o.parquet"
    pq.write_table(_table(pa), original, row_group_size=16, data_page_size=300, **writer)
    meta = pq.ParquetFile(original).metadata
    groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
    columns = [group.column(c) for group in groups for c in range(meta.num_columns)]
    chunks = [(c.dictionary_page_offset or c.data_page_offset, c.total_compressed_size) for c in columns]
    in_chunk = [False] * original.stat().st_size
    for start, size in chunks:
        in_chunk[start : start + size] = [True] * size
    data, rng = original.read_bytes(), random.Random(7)
    damaged, on_values = tmp_path / "d.parquet", tmp_path / "v.parquet"
    for _ in range(300):
        mutated, values_only = bytearray(data), bytearray(data)
        for _ in range(rng.choice([1, 2, 5])):
            at, byte = rng.randrange(len(mutated)), rng.randrange(256)
            mutated[at] = byte
            if in_chunk[at]:
                values_only[at] = byte
        cut = rng.random() < 0.1
        damaged.write_bytes(bytes(mutated[: rng.randrange(len(mutated))] if cut else mutated))
        read = _clean_read(damaged)
        if not writer:  # pyarrow's default codec, snappy: the Python decoder reads the same
            with monkeypatch.context() as python_snappy:
                python_snappy.setattr(compression, "_cramjam", lambda: None)
                assert _clean_read(damaged) == read, "the two snappy decoders disagree"
        if read is None:
            continue
        try:
            expected = _pyarrows_values(pq, pa, damaged)
        except Exception:  # pyarrow refuses the bytes: the same damage on the values alone
            if cut:
                continue  # (a cut file ends before its footer: never read cleanly so far)
            on_values.write_bytes(bytes(values_only))
            try:
                expected = _pyarrows_values(pq, pa, on_values)
            except Exception:
                continue  # pyarrow refuses the damaged values too: nothing to compare with
        assert read == expected, f"damage at {[i for i in range(len(data)) if mutated[i] != data[i]]}"
