"""What one decoded unit of an untrusted container may cost, checked before it is allocated.

A container file declares sizes, counts and lengths (a parquet page's uncompressed size, a TFRecord's
length, a tar member's size, a DELTA_BYTE_ARRAY page's values) and a reader that believes them
allocates what a 517-byte file says. Every decoder in data/ asks :func:`backed` first: the declared
number must be covered by the bytes that hold it (times the most its encoding can expand, a property
of the format, not a guess) and lie within :data:`DECODE_BUDGET`; otherwise :class:`OverBudget`,
which the reader turns into its one ``error:`` naming the shard and the byte. One check per page,
record or member, never per byte: valid files read as fast as before.
"""

from __future__ import annotations

# One decoded unit (a parquet page with its values, a TFRecord record, a tar member read whole): the
# ``datasets`` library writes ~13 MB ImageNet pages, TFDS ~150 KB records; 1 GiB is the old per-page
# limit, so no valid file changes, and a run holds about one unit a worker.
DECODE_BUDGET = 1 << 30

# The most one stored byte decodes to, by parquet codec id: the format's own bound, so that a
# declared size past it is damage whatever the bytes are. Snappy: a 3-byte copy of 64 bytes; gzip:
# deflate's 1032:1; lz4: a match length grows 255 a byte; zstd: a 4-byte RLE block of 128 KiB;
# brotli: a meta-block of 16 MiB in a few bytes (measured 645,000:1, so the budget bounds it).
CODEC_EXPANSION = {0: 1, 1: 22, 2: 1032, 4: 1 << 20, 5: 256, 6: 1 << 15, 7: 256}
MOST_EXPANSION = max(CODEC_EXPANSION.values())  # a codec not decoded here: its own error says so
SLACK = 64  # headers and framing a tiny stored body may carry beyond its ratio

# DELTA_BYTE_ARRAY values repeat the previous value's prefix at no cost: a 33 KB page can declare
# gigabytes. A page's values may total this many times its decoded bytes (paths sharing a folder
# expand ~3 times; a column of long identical strings belongs in a dictionary page).
VALUES_EXPANSION = 1024


class OverBudget(ValueError):
    """A declared size, count or length that the bytes behind it or the budget cannot cover."""


def backed(declared: int, backing: int, what: str, ratio: int = 1, budget: int = DECODE_BUDGET) -> int:
    """``declared`` (what the file says ``what`` holds) once it is covered: at most ``ratio`` times
    the ``backing`` bytes that must hold it (plus :data:`SLACK` where it expands) and at most
    ``budget``. Called before anything of that size is allocated."""
    room = backing * ratio + (SLACK if ratio > 1 else 0)
    if declared < 0 or declared > room:
        raise OverBudget(f"{what} declares {declared} bytes, more than its {backing} stored bytes can hold")
    if declared > budget:
        raise OverBudget(f"{what} declares {declared} bytes, over the decode budget of {budget}")
    return declared
