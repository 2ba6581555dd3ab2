"""Shard file names: which container a name says it is, and the names a brace pattern stands for.

Why a module of its own: the dataset readers (:mod:`evalharness.data.dataset_reader`) and the split
of a dataset (:mod:`evalharness.data.splits`) both read shard names; neither owns the other.
"""

from __future__ import annotations

import glob
import itertools
import re
from collections.abc import Iterable, Iterator

from evalharness.core.errors import DataError

# a shard file's name -> the container it belongs to (detection from dataset.root)
_SHARD_NAMES = (
    ("parquet", re.compile(r"\.parquet$", re.I)),
    ("webdataset", re.compile(r"\.tar$", re.I)),
    ("tfrecord", re.compile(r"\.tfrecords?$|\.tfrecords?-\d+-of-\d+$", re.I)),
)
BRACE = re.compile(r"\{([^{}]*)\}")
MAX_SHARDS = 100_000  # a brace pattern expanding to more is a typo, not a dataset
MAX_BRACE_GROUPS = 16  # val-{0000..0063}.tar has one; each group is a level of the expansion
MAX_PATTERN = 4096  # a path (PATH_MAX); each name built costs the pattern's length


def expand_braces(pattern: str) -> list[str]:
    """``val-{0000..0063}.tar`` -> the 64 names (zero padding kept), ``{a,b}`` -> both; nested
    patterns expand left to right. The names are produced one at a time and counted: a pattern past
    :data:`MAX_SHARDS` names is refused at the first name over, before any list of them is built
    (``{0..99999}{0..99999}`` is refused in the time of 100,000 names, not 10**10)."""
    if pattern.count("{") > MAX_BRACE_GROUPS or len(pattern) > MAX_PATTERN:
        raise DataError(
            f"{pattern[:200]}: more than {MAX_BRACE_GROUPS} brace groups or {MAX_PATTERN} characters; "
            "check dataset.root"
        )
    names = list(itertools.islice(_names(pattern), MAX_SHARDS + 1))
    if len(names) > MAX_SHARDS:
        raise DataError(f"{pattern[:200]}: expands to more than {MAX_SHARDS} shards; check dataset.root")
    return names


def _names(pattern: str) -> Iterator[str]:
    """The names of ``pattern``, lazily (a range's bounds checked before it is counted)."""
    found = BRACE.search(pattern)
    if not found:
        yield pattern
        return
    head, tail, body = pattern[: found.start()], pattern[found.end() :], found.group(1)
    span = re.fullmatch(r"(\d{1,18})\.\.(\d{1,18})", body)
    if span:
        lo, hi = span.group(1), span.group(2)
        if int(hi) - int(lo) >= MAX_SHARDS:
            raise DataError(f"{pattern[:200]}: expands to more than {MAX_SHARDS} shards; check dataset.root")
        width = len(lo) if lo.startswith("0") else 0
        choices: Iterable[str] = (str(i).zfill(width) for i in range(int(lo), int(hi) + 1))
    elif re.fullmatch(r"\d+\.\.\d+", body):
        raise DataError(f"{pattern[:200]}: a range bound of over 18 digits; check dataset.root")
    else:
        choices = body.split(",")
    for choice in choices:
        yield from _names(head + choice + tail)


def container_of(name: str) -> str | None:
    """The container a shard file's name says it is, or None."""
    return next((kind for kind, pattern in _SHARD_NAMES if pattern.search(name)), None)


def pattern_files(root: str) -> list[str]:
    """The files a brace pattern, a glob or one file name stands for (not checked to exist)."""
    if BRACE.search(root):
        return expand_braces(root)
    if glob.has_magic(root):
        return sorted(glob.glob(root))
    return [root]
