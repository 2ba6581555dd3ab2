"""Content identity of models, files and datasets, so two runs can prove they saw the same data."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Sequence
from itertools import pairwise
from typing import TypedDict, TypeVar, cast

from evalharness.core.checksum import sha256_file
from evalharness.core.derived import file_state
from evalharness.data.ground_truth import LabeledSample, Member
from evalharness.data.samples import SampleList

T = TypeVar("T")

_CHUNK = 1 << 20


def manifest_hash(
    entries: Iterable[tuple[str, str | Member]], content: bool = False, presorted: bool = False
) -> str:
    """sha256 over sorted ``key<TAB>size`` lines (or ``key<TAB>sha256`` when ``content``).

    ``entries`` are (key, absolute path) pairs, or (key, :class:`Member`) for a sample inside a
    container, whose ident is always the sha256 of its encoded bytes (so the same images in a
    folder hashed by content and in any container give the same manifest); keys are dataset-relative
    so the hash does not depend on where the dataset lives. Sizes are the default because hashing
    6 GB of ILSVRC val per run is slow; ``dataset.manifest=content`` hashes every byte.
    ``presorted``: the entries already come in sorted order, so they are hashed as they stream (no
    list of every entry is built).
    """
    ordered = entries if presorted else sorted(entries, key=lambda e: (e[0], str(e[1])))
    return digest_lines((key, _ident(path, content)) for key, path in ordered)


def _ident(path: str | Member, content: bool) -> str:
    try:
        if isinstance(path, Member):  # inside a container: the digest taken when it was listed
            return path.sha256
        return sha256_file(path) if content else str(os.path.getsize(path))
    except OSError:  # a file gone since it was listed: the hash says so, the record still gets made
        return "missing"


def digest_lines(lines: Iterable[tuple[str, str]]) -> str:
    """sha256 over ``key<TAB>ident`` lines in the order given: a manifest's hash once each entry's
    ident (its size or the sha256 of its bytes) is known, as :func:`manifest_hash` makes it."""
    digest = hashlib.sha256()
    for key, ident in lines:
        digest.update(f"{key}\t{ident}\n".encode())
    return digest.hexdigest()


class SamplesIdentity(TypedDict):
    """The provenance fields that prove two runs saw the same samples (``provenance.dataset``)."""

    count: int
    manifest_sha256: str
    manifest_kind: str  # "relative path + sha256" | "relative path + size"


def samples_identity(
    samples: Sequence[T], entry: Callable[[T], tuple[str, str | Member]], content: bool = False
) -> SamplesIdentity:
    """The provenance fields that prove two runs saw the same samples: count + manifest hash of
    ``samples`` (``entry``: sample -> (key, path), its key the sample's own), without a list of every
    entry: samples already in key order (the usual case) stream; others are visited in key order
    through a list of positions. A :class:`SampleList` is put in key order from its key column, so
    each sample is made once, to be hashed."""
    n = len(samples)
    content = content or (n > 0 and isinstance(entry(samples[0])[1], Member))  # a container's: always
    entries: Iterable[tuple[str, str | Member]]
    if isinstance(samples, SampleList):  # then T is LabeledSample
        of = cast(Callable[[LabeledSample], tuple[str, str | Member]], entry)
        entries = (_own_key(s, of(s)) for s in samples.sorted_by_key())
    elif all(a <= b for a, b in pairwise(entry(s)[0] for s in samples)):
        entries = (entry(s) for s in samples)
    else:
        entries = (entry(samples[i]) for i in sorted(range(n), key=lambda i: entry(samples[i])[0]))
    return {
        "count": n,
        "manifest_sha256": manifest_hash(entries, content, presorted=True),
        "manifest_kind": "relative path + sha256" if content else "relative path + size",
    }


def _own_key(sample: LabeledSample, found: tuple[str, str | Member]) -> tuple[str, str | Member]:
    """``found``, the manifest entry of ``sample``, whose order was taken from the sample's key."""
    if found[0] != sample.key:
        raise ValueError(f"a manifest entry's key {found[0]!r} is not its sample's key {sample.key!r}")
    return found


def stat_digest(paths: Iterable[str]) -> str | None:
    """sha256 over each file's path and :func:`~evalharness.core.derived.file_state` (size, mtime_ns,
    inode, ctime_ns): a cheap check (one stat per file) that the files a run read are the ones a
    resumed session reads. ctime_ns is what no user call sets back, so a picture replaced by one of
    the same size with its old mtime restored (``cp -p``, ``rsync -t``) is still seen. None for no
    files."""
    digest, seen = hashlib.sha256(), False
    for path in paths:
        state = file_state(path)  # None: gone or unreadable, part of the state, not a crash
        digest.update(f"{path}\t{state or 'missing'}\n".encode())
        seen = True
    return digest.hexdigest() if seen else None


def sample_entry(sample: LabeledSample) -> tuple[str, str | Member]:
    """A labelled image's manifest entry: its key and its file, or its member inside a container."""
    return sample.key, sample.path if sample.member is None else sample.member


def truth_hash(samples: Sequence[LabeledSample]) -> str:
    """sha256 over sorted ``key<TAB>label<TAB>occurrence`` lines: the ground truth of these samples by
    content, whichever file or container it was read from (a val.txt, a parquet's label column).
    Samples in strictly ascending key order (a run's, by id) stream; others are sorted first."""
    lines: Iterable[tuple[str, str, int | None]] = ((s.key, s.label, s.occurrence) for s in samples)
    keys = samples.keys() if isinstance(samples, SampleList) else (s.key for s in samples)
    if not all(a < b for a, b in pairwise(keys)):
        lines = sorted(lines)
    digest = hashlib.sha256()
    for key, label, occurrence in lines:
        digest.update(f"{key}\t{label}\t{occurrence}\n".encode())
    return digest.hexdigest()
