"""Decoders bounded by what they were given (issue 53, class 1), generated over every container,
codec, page kind and encoding it applies to.

Each case builds a hostile file here (a size, count or length its bytes cannot back, up to 2**40:
more than the machine has) and reads it in a forked child (tests/hostile_containers.py): the read
is one DataError naming the shard and what was declared, in well under a second of CPU, and the child's
peak memory grows by less than :data:`SMALL_FILE_PEAK` (the files are kilobytes; before the bounds
the same reads allocated up to 1 GB or ran for minutes).
"""

from __future__ import annotations

import gzip
import re
import struct as pystruct
import sys
import tarfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from hostile_containers import (  # noqa: E402
    BIN,
    BYTE_ARRAY,
    DATA_PAGE,
    DATA_PAGE_V2,
    DELTA_BINARY_PACKED,
    DELTA_BYTE_ARRAY,
    DELTA_LENGTH_BYTE_ARRAY,
    DICTIONARY_PAGE,
    I32,
    I64,
    INT32,
    INT64,
    LIST,
    MAP,
    STRUCT,
    Column,
    bounded,
    delta_packed,
    pack,
    page,
    parquet,
    snappy_literal,
    struct,
    varint,
    zigzag,
)
from pack_containers import _field as pfield  # noqa: E402
from pack_containers import record, tiny_png  # noqa: E402

from evalharness.core.errors import DataError  # noqa: E402
from evalharness.data.dataset_reader import ReadRequest, reader_for  # noqa: E402
from evalharness.data.parquet.file import ParquetFile  # noqa: E402
from evalharness.data.shard_names import expand_braces  # noqa: E402

SMALL_FILE_PEAK = 96 << 20  # what reading a hostile file of a few MB may add to the peak, at most
FAST = 3.0  # CPU seconds of the reading child: every case here is linear in a small file
HUGE = 2**40  # more than the machine has
UNDER_THE_OLD_LIMIT = (1 << 30) - 1  # what a 517-byte file could make the reader allocate


def _read_all(path: Path) -> int:
    """Every value of every column of ``path``, as a run lists and reads them."""
    pf = ParquetFile(str(path))
    n = 0
    for group in pf.groups:
        for chunk in group.values():
            for p in pf.pages(chunk):
                n += len(pf.page_at(p.offset))
    return n


def _held(outcome, error: str = "DataError", match: str = "") -> None:
    assert not outcome.killed, outcome
    assert outcome.error == error, outcome
    assert re.search(match, outcome.message), outcome.message
    assert outcome.seconds < FAST, outcome
    assert outcome.peak_growth < SMALL_FILE_PEAK, f"peak grew {outcome.peak_growth >> 20} MB: {outcome}"


# --- parquet: a page's declared decoded size ---------------------------------------------------

VALUES = pystruct.pack("<4q", 1, 2, 3, 4)


def _compressed(codec: int, declared: int) -> bytes:
    if codec == 0:
        return VALUES
    if codec == 1:  # snappy's own header declares it too, as a forger would write it
        return snappy_literal(VALUES, declared)
    if codec == 2:
        return gzip.compress(VALUES)
    cramjam = pytest.importorskip("cramjam")
    if codec == 4:
        return bytes(cramjam.brotli.compress(VALUES))
    if codec == 6:
        return bytes(cramjam.zstd.compress(VALUES))
    return bytes(cramjam.lz4.compress_block(VALUES, store_size=False))


CODECS = {"uncompressed": 0, "snappy": 1, "gzip": 2, "brotli": 4, "zstd": 6, "lz4_raw": 7}
KINDS = {"data page": DATA_PAGE, "data page v2": DATA_PAGE_V2, "dictionary page": DICTIONARY_PAGE}


@pytest.mark.parametrize("declared", [HUGE, UNDER_THE_OLD_LIMIT], ids=["2**40", "2**30-1"])
@pytest.mark.parametrize("kind", KINDS.values(), ids=KINDS.keys())
@pytest.mark.parametrize("codec", CODECS.values(), ids=CODECS.keys())
def test_a_page_declaring_more_than_its_bytes_is_refused_before_it_is_allocated(
    tmp_path, codec, kind, declared
):
    body = _compressed(codec, declared)
    pages = [page(body, 4, raw=declared, kind=kind)]
    col = Column(("label",), INT64, pages, 4, codec=codec, dictionary=kind == DICTIONARY_PAGE)
    path = tmp_path / "hostile.parquet"
    path.write_bytes(parquet([col], 4))
    assert path.stat().st_size < 1024  # the 517-byte file of the issue
    _held(
        bounded(lambda: _read_all(path)),
        match=rf"hostile\.parquet: parquet damaged at byte 4 \(the page declares {declared} bytes, "
        rf"more than its {len(body)} stored bytes can hold\)",
    )


@pytest.mark.parametrize("codec", [c for c in CODECS.values() if c], ids=[k for k, c in CODECS.items() if c])
def test_a_page_that_decodes_to_less_than_it_declares_is_damage_not_padding(tmp_path, codec):
    declared = len(VALUES) + 64  # within every codec's ratio: only decoding can tell
    body = _compressed(codec, declared)
    col = Column(("label",), INT64, [page(body, 4, raw=declared)], 4, codec=codec)
    path = tmp_path / "short.parquet"
    path.write_bytes(parquet([col], 4))
    _held(bounded(lambda: _read_all(path)), match=r"short\.parquet: parquet damaged at byte 4")


def _plain_bytes(*values: bytes) -> bytes:
    return b"".join(len(v).to_bytes(4, "little") + v for v in values)


@pytest.mark.parametrize("column", ["image.bytes", "image.path", "label"])
def test_a_parquet_dataset_declaring_2_to_the_40_is_one_error_within_the_budget(tmp_path, column):
    """Through the dataset reader, as a run lists it: whichever column's page declares 2**40."""
    png = tiny_png(1)
    stored = {
        "image.bytes": (BYTE_ARRAY, _plain_bytes(png)),
        "image.path": (BYTE_ARRAY, _plain_bytes(b"img0.png")),
        "label": (INT64, VALUES[:8]),
    }
    columns = []
    for name, (physical, body) in stored.items():
        declared = HUGE if name == column else len(body)
        columns.append(
            Column(
                tuple(name.split(".")),
                physical,
                [page(snappy_literal(body, declared), 1, raw=declared)],
                1,
                codec=1,
            )
        )
    path = tmp_path / "validation-00000-of-00001.parquet"
    path.write_bytes(parquet(columns, 1))
    outcome = bounded(lambda: len(reader_for("parquet", ReadRequest(str(path)))[0].samples()))
    _held(
        outcome,
        match=r"validation-00000-of-00001\.parquet: parquet damaged at byte \d+ "
        r"\(the page declares 1099511627776",
    )


# --- parquet: values a page's encoding expands to ----------------------------------------------


def _expanding_page(kind: int, codec: int) -> bytes:
    """DELTA_BYTE_ARRAY: one 32 KB value, then 3,999 that repeat it whole at no cost (128 MB)."""
    n, size = 4000, 32 << 10
    body = delta_packed([0] + [size] * (n - 1)) + delta_packed([size] + [0] * (n - 1)) + b"x" * size
    stored = snappy_literal(body) if codec == 1 else body
    return page(stored, n, DELTA_BYTE_ARRAY, raw=len(body), kind=kind)


@pytest.mark.parametrize("codec", [0, 1], ids=["uncompressed", "snappy"])
@pytest.mark.parametrize("kind", [DATA_PAGE, DATA_PAGE_V2], ids=["v1", "v2"])
def test_delta_byte_array_prefixes_cannot_expand_a_page_past_its_bound(tmp_path, kind, codec):
    col = Column(("path",), BYTE_ARRAY, [_expanding_page(kind, codec)], 4000, codec=codec)
    path = tmp_path / "prefixes.parquet"
    path.write_bytes(parquet([col], 4000))
    _held(
        bounded(lambda: _read_all(path)),
        match=r"prefixes\.parquet: parquet damaged at byte 4 \(the page's byte arrays declares 131072000 "
        r"bytes, more than its \d+ stored bytes can hold; re-write the column with dictionary",
    )


# --- parquet: delta blocks decoded in linear time ----------------------------------------------

BLOCK, WIDTH = 1 << 16, 32  # the largest block the reader takes, in one miniblock of full width


def _one_big_miniblock(count: int) -> tuple[bytes, list[int]]:
    """DELTA_BINARY_PACKED of ``count`` values in one block of 65,536 (one miniblock, 32 bits)."""
    deltas = [(i * 2654435761) % (1 << WIDTH) for i in range(BLOCK)]
    head = varint(BLOCK) + varint(1) + varint(count) + varint(zigzag(0))
    values, value = [0], 0
    for d in deltas[: count - 1]:
        value += d
        values.append(value)
    return head + varint(zigzag(0)) + bytes([WIDTH]) + pack(deltas, WIDTH), values


QUADRATIC = {
    "INT32 DELTA_BINARY_PACKED": (INT32, DELTA_BINARY_PACKED),
    "INT64 DELTA_BINARY_PACKED": (INT64, DELTA_BINARY_PACKED),
    "DELTA_LENGTH_BYTE_ARRAY lengths": (BYTE_ARRAY, DELTA_LENGTH_BYTE_ARRAY),
    "DELTA_BYTE_ARRAY prefixes": (BYTE_ARRAY, DELTA_BYTE_ARRAY),
}


@pytest.mark.parametrize("physical, encoding", QUADRATIC.values(), ids=QUADRATIC.keys())
def test_a_delta_block_of_full_width_decodes_in_linear_time(tmp_path, physical, encoding):
    body, values = _one_big_miniblock(BLOCK)
    col = Column(("v",), physical, [page(body, BLOCK, encoding)], BLOCK)
    path = tmp_path / "delta.parquet"
    path.write_bytes(parquet([col], BLOCK))
    if physical == INT64:
        outcome = bounded(lambda: _read_all(path) == BLOCK and ParquetFile(str(path)).page_at(4)[-1])
        _held(outcome, error=None, match=rf"^{values[-1]}$")
    elif physical == INT32:
        wrapped = (values[-1] + (1 << 31)) % (1 << 32) - (1 << 31)
        _held(bounded(lambda: ParquetFile(str(path)).page_at(4)[-1]), error=None, match=rf"^{wrapped}$")
    else:  # lengths and prefixes of 32-bit sums: no page holds them
        _held(bounded(lambda: _read_all(path)), match=r"delta\.parquet: parquet damaged at byte 4")


# --- parquet: a footer that decodes to millions of objects --------------------------------------


def _footer_flood(kind: str) -> bytes:
    """A footer whose field 100 (unknown to parquet, decoded all the same) is millions of values."""
    n = 4_000_000
    if kind == "empty structs":
        field, payload = LIST, bytes([0xF0 | STRUCT]) + varint(n) + b"\x00" * n
    elif kind == "integers":
        field, payload = LIST, bytes([0xF0 | I32]) + varint(n) + varint(zigzag(300)) * n
    else:  # a map of distinct integers to 0
        import numpy as np

        n = 2_000_000  # keys 2**13.. as three-byte varints of their zigzag, each mapped to 0
        v = (np.arange(1 << 13, (1 << 13) + n, dtype=np.int64) * 2).astype(np.uint32)
        columns = [(v & 0x7F) | 0x80, ((v >> 7) & 0x7F) | 0x80, v >> 14, np.zeros_like(v)]
        keys = np.stack(columns, axis=1).astype(np.uint8).tobytes()
        field, payload = MAP, varint(n) + bytes([I32 << 4 | I32]) + keys
    schema = [{4: (BIN, b"schema"), 5: (I32, 1)}, {1: (I32, INT64), 4: (BIN, b"x")}]
    head = struct({1: (I32, 1), 2: (LIST, (STRUCT, schema)), 3: (I64, 0)})[:-1]  # its STOP dropped
    return head + bytes([field]) + varint(zigzag(100)) + payload + b"\x00"


@pytest.mark.parametrize("kind", ["empty structs", "integers", "a map"])
def test_a_footer_of_millions_of_values_is_refused_within_the_budget(tmp_path, kind):
    path = tmp_path / "footer.parquet"
    path.write_bytes(parquet([], 0, footer=_footer_flood(kind)))
    _held(
        bounded(lambda: ParquetFile(str(path))),
        match=r"footer\.parquet: parquet footer damaged \(more than \d+ values in one struct\)",
    )


# --- TFRecord ------------------------------------------------------------------------------------


def _tfrecord(tmp_path: Path, data: bytes) -> Path:
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "imagenet2012-validation.tfrecord-00000-of-00001").write_bytes(data)
    return folder


def _list(folder: Path):
    reader, _ = reader_for("tfrecord", ReadRequest(str(folder)))
    return len(reader.samples())


def _entry(key: bytes, feature: bytes) -> bytes:
    return pfield(1, pfield(1, key) + pfield(2, feature))


def _bytes_list(*values: bytes) -> bytes:
    return pfield(1, b"".join(pfield(1, v) for v in values))


def _int_list(packed: bytes) -> bytes:
    return pfield(3, pfield(1, packed))


def _example(*entries: bytes) -> bytes:
    return pfield(1, b"".join(entries))


def _packed_labels(n: int) -> bytes:
    """A record whose label is a packed list of ``n`` values, 300 and 301 in turn."""
    labels = _int_list((varint(300) + varint(301)) * (n // 2))
    return _example(_entry(b"image", _bytes_list(tiny_png(1))), _entry(b"label", labels))


def _flood_of_features(n: int) -> bytes:
    head, tail = _entry(b"k%07d" % 0, _int_list(varint(1))).split(b"k0000000")
    flood = b"".join([head + b"k%07d" % i + tail for i in range(n)])
    return _example(flood, _entry(b"image", _bytes_list(tiny_png(1))), _entry(b"label", _int_list(b"\x00")))


def _many_images(n: int) -> bytes:
    images = _entry(b"image", pfield(1, pfield(1, b"") * n))
    return _example(images, _entry(b"label", _int_list(b"\x00")))


TFRECORDS = {
    "a length of 2**40": (
        lambda: pystruct.pack("<Q", HUGE) + pystruct.pack("<I", _masked(pystruct.pack("<Q", HUGE))),
        r":record 0: truncated or damaged \(the record declares 1099511627776 bytes",
    ),
    "4M packed labels": (
        lambda: record(_packed_labels(4_000_000)),
        r":record 0: two labels \(label \[300, 301\]\)",
    ),
    "2M empty images": (
        lambda: record(_many_images(2_000_000)),
        r":record 0: more than one image in the record",
    ),
    "600k other features": (lambda: record(_flood_of_features(600_000)), None),
}


def _masked(data: bytes) -> int:
    from evalharness.data.tfrecord_reader import masked_crc

    return masked_crc(data)


@pytest.mark.parametrize("case", TFRECORDS.keys())
def test_a_tfrecord_is_read_within_the_budget(tmp_path, case):
    build, match = TFRECORDS[case]
    folder = _tfrecord(tmp_path, build())
    outcome = bounded(lambda: _list(folder))
    if match is None:  # a valid record among a flood of features it does not read
        _held(outcome, error=None, match=r"^1$")
    else:
        _held(outcome, match=match)


# --- webdataset ----------------------------------------------------------------------------------


def _tar_declaring(size: int) -> bytes:
    info = tarfile.TarInfo("img0.png")
    info.size = size
    return info.tobuf(tarfile.GNU_FORMAT) + b"\0" * 1024


@pytest.mark.parametrize("size", [HUGE, 1 << 33], ids=["2**40", "2**33"])
def test_a_tar_member_declaring_more_than_the_shard_is_refused(tmp_path, size):
    shard = tmp_path / "val-0000.tar"
    shard.write_bytes(_tar_declaring(size))
    outcome = bounded(lambda: len(reader_for("webdataset", ReadRequest(str(shard)))[0].samples()))
    _held(outcome, match=rf"val-0000\.tar:img0\.png: truncated \(member of {size} bytes")


# --- brace patterns ------------------------------------------------------------------------------

PATTERNS = {
    "two ranges": "v-{0..99999}{0..99999}.tar",
    "three ranges": "v-{0..999}{0..999}{0..999}.tar",
    "two lists": "v-{"
    + ",".join(f"{i:x}" for i in range(400))
    + "}{"
    + ",".join(f"{i:x}" for i in range(400))
    + "}",
    "nested": "v-{a{0..9999},b{0..9999}}{0..99}",
    "a 5,000-digit bound": "v-{0.." + "9" * 5000 + "}.tar",
    "17 groups": "v" + "{a,b}" * 17,
}


@pytest.mark.parametrize("pattern", PATTERNS.values(), ids=PATTERNS.keys())
def test_a_brace_pattern_is_counted_before_it_is_expanded(pattern):
    _held(bounded(lambda: expand_braces(pattern)), match=r"check dataset\.root")


def test_patterns_within_the_bounds_expand_as_before():
    assert expand_braces("v-{0000..0063}.tar")[-1] == "v-0063.tar"
    assert len(expand_braces("v-{0..99}{0..999}")) == 100_000
    assert expand_braces("{a{1..2},b}") == ["a1", "b", "a2", "b"]


def test_a_valid_page_is_read_as_before(tmp_path):
    """The bounds refuse nothing a writer makes: a snappy page, a dictionary, delta encodings."""
    body = delta_packed(list(range(0, 3000, 3)))
    col = Column(
        ("v",), INT64, [page(snappy_literal(body), 1000, DELTA_BINARY_PACKED, raw=len(body))], 1000, codec=1
    )
    path = tmp_path / "ok.parquet"
    path.write_bytes(parquet([col], 1000))
    assert ParquetFile(str(path)).page_at(4) == list(range(0, 3000, 3))
    with pytest.raises(DataError):
        expand_braces("{0..100000}")
