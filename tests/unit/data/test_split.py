"""The dataset split of quant.max_drop: two disjoint parts that cover the list, cut before the shard."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalharness.core.errors import ConfigError
from evalharness.data.manifest import samples_identity
from evalharness.data.shard import Shard, Split, listed, select_samples, sharded_identity


@given(
    n=st.integers(0, 300),
    fraction=st.floats(0.01, 0.99),
    scheme=st.sampled_from(["interleaved", "contiguous"]),
)
def test_the_parts_are_disjoint_and_cover_the_list_in_order(n, fraction, scheme):
    items = list(range(n))
    search = Split(fraction, scheme, "search").take(items)
    held = Split(fraction, scheme, "held_out").take(items)
    assert sorted(search + held) == items and not set(search) & set(held)
    assert search == sorted(search) and held == sorted(held)
    assert abs(len(search) - n * fraction) <= 1


def test_interleaved_half_is_every_other_image_from_the_first():
    assert Split(0.5, "interleaved", "search").take(list(range(6))) == [0, 2, 4]
    assert Split(0.25, "interleaved", "search").take(list(range(9))) == [0, 4, 8]
    assert Split(0.5, "contiguous", "held_out").take(list(range(5))) == [2, 3, 4]


def test_num_images_first_then_the_split_then_the_shard():
    split = {"fraction": 0.5, "part": "held_out"}
    shard = Shard.from_config({"shard": {"index": 1, "count": 2}, "split": split})
    selected, full = select_samples(list(range(20)), 12, shard, "x")
    assert full == [1, 3, 5, 7, 9, 11] and selected == [3, 7, 11]


def test_an_empty_part_or_a_bad_split_is_a_config_error():
    with pytest.raises(ConfigError, match="held_out part"):
        select_samples([1], 0, Shard.from_config({"split": {"fraction": 0.5, "part": "held_out"}}), "x")
    with pytest.raises(ConfigError, match="fraction"):
        Split.from_config({"fraction": 1.0, "part": "search"})


def test_a_held_out_part_records_the_identity_of_the_list_it_was_cut_from(tmp_path):
    files = [tmp_path / f"{i:02d}.png" for i in range(12)]
    for f in files:
        f.write_bytes(b"x" * int(f.stem))
    shard = Shard.from_config({"split": {"fraction": 0.25, "part": "held_out"}})
    selected, full = select_samples(files, 8, shard, "x")
    entry = lambda p: (p.name, str(p))  # noqa: E731
    identity = sharded_identity(selected, full, shard, entry, listed(files, 8))
    whole = samples_identity(files[:8], entry)
    assert identity["count"] == 6
    assert identity["split"]["whole"] == {k: whole[k] for k in ("count", "manifest_sha256")}
    assert "whole" not in sharded_identity(selected, full, shard, entry)["split"]  # not given: not claimed
