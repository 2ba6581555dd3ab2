"""The sample list in columns (data/samples.py): every sample reads back as it was listed, a slice,
a shard, a split and a read plan are views of the same columns, and the hashes over it stream."""

from __future__ import annotations

import hashlib

from evalharness.data.manifest import sample_entry, samples_identity, truth_hash
from evalharness.data.samples import LabeledSample, Member, SampleList, first_of_each_label
from evalharness.data.shard import Shard, Split, select_samples


def _member(i: int) -> Member:
    return Member(
        f"/s/shard-{i % 2}.tar", f"{i:03d}.jpg", 512 * i, 100 + i, hashlib.sha256(bytes([i])).digest()
    )


def _samples(n: int, members: bool = False) -> list[LabeledSample]:
    return [
        LabeledSample(
            "/d", f"k{i:03d}.jpg", f"class {i % 3}", i % 3 or None, i % 3, _member(i) if members else None
        )
        for i in range(n)
    ]


def test_every_sample_reads_back_as_listed_with_or_without_members():
    for members in (False, True):
        plain = _samples(7, members)
        columns = SampleList.of(plain)
        assert list(columns) == plain and columns == plain and len(columns) == 7
        assert (
            columns[3] == plain[3]
            and columns[-1] == plain[-1]
            and list(columns.keys()) == [s.key for s in plain]
        )
        assert columns.columns.labels == [("class 0", None, 0), ("class 1", 1, 1), ("class 2", 2, 2)]
    mixed = [_samples(1)[0], _samples(2, members=True)[1], _samples(3)[2]]  # a file, a member, a file
    assert list(SampleList.of(mixed)) == mixed
    roots = [LabeledSample(root, "a.jpg", "x") for root in ("/a", "/a", "/b", "/a")]  # a plug-in's
    assert list(SampleList.of(roots)) == roots


def test_keys_any_file_name_gives_sort_in_str_order_stably():
    names = ["b.jpg", "\udcff.jpg", "a/ü.png", "a.jpg", "\U0001f600.jpg", "a.jpg"]
    plain = [LabeledSample("/d", k, str(i)) for i, k in enumerate(names)]
    ordered = SampleList.of(plain).sorted_by_key()
    assert list(ordered) == sorted(plain, key=lambda s: s.key)  # the two a.jpg in listing order
    assert ordered.sorted_by_key() is ordered


def test_slices_shards_splits_and_plans_are_views_of_the_same_columns():
    columns = SampleList.of(_samples(10, members=True))
    plain = list(columns)
    for shard in (
        Shard(1, 3),
        Shard(1, 3, "contiguous"),
        Shard(0, 2, "files"),
        Shard(0, 1, split=Split(0.5)),
    ):
        selected, full = select_samples(columns, 9, shard, "/d", lambda s: s.member and s.member.shard)
        expected, whole = select_samples(plain, 9, shard, "/d", lambda s: s.member and s.member.shard)
        assert isinstance(selected, SampleList) and selected.columns is columns.columns
        assert selected == expected and full == whole
    assert isinstance(columns[2:5].positions, range)
    plan = columns.sorted_by(lambda s: -s.member.offset)
    assert list(plan) == plain[::-1] and plan.picked([0, 2]) == [plain[9], plain[7]]


def test_hashes_stream_over_columns_as_over_a_list():
    plain = _samples(6, members=True)
    columns = SampleList.of(plain)
    shuffled = columns.picked([3, 0, 5, 1, 4, 2])
    assert truth_hash(columns) == truth_hash(plain) == truth_hash(shuffled) == truth_hash(plain[::-1])
    assert samples_identity(columns, sample_entry) == samples_identity(plain, sample_entry)
    assert samples_identity(shuffled, sample_entry) == samples_identity(plain[::-1], sample_entry)
    assert [s.key for s in first_of_each_label(shuffled)] == ["k003.jpg", "k005.jpg", "k001.jpg"]
    assert list(first_of_each_label(plain[::-1])) == list(first_of_each_label(columns[::-1]))


def test_a_sample_lists_identity_makes_each_sample_once(monkeypatch):
    """samples_identity orders a SampleList by its key column: each sample is made once (hashed),
    ordered or not, not once more to see whether the list is in order."""
    import pytest

    columns = SampleList.of(_samples(6, members=True))
    made = []
    sample = columns.columns.sample
    monkeypatch.setattr(columns.columns, "sample", lambda i: made.append(i) or sample(i))
    for samples in (columns, columns.picked([3, 0, 5, 1, 4, 2])):
        made.clear()
        samples_identity(samples, sample_entry)
        assert len(made) == 6 + 1  # + the first, to see whether they are a container's
    with pytest.raises(ValueError, match="not its sample's key"):
        samples_identity(columns, lambda s: (s.key.upper(), s.member))
