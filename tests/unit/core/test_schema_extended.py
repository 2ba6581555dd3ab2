"""A core group extended by a plug-in's own fields: a frozen instance of the core schema (read by
attribute), the plug-in's fields checked with their bounds, another plug-in's fields left out
unchecked, a field nobody declares refused."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.schema import bounds, build, build_extended, extended, thaw


@dataclass(frozen=True)
class Inner:
    count: int = 1


@dataclass(frozen=True)
class Core:
    name: str = "???"
    root: str = "x"
    inner: Inner = field(default_factory=Inner)


@dataclass(frozen=True)
class Own:
    targets: str = "???"
    limit: int = field(default=3, metadata=bounds(1, 5))


def test_own_fields_are_checked_with_their_bounds():
    got = build_extended(Core, Own, set(), {"name": "n", "targets": "t.csv"}, "config group 'dataset'")
    assert isinstance(got, Core) and (got.name, got.root, got.targets, got.limit) == ("n", "x", "t.csv", 3)
    assert thaw(got) == {"name": "n", "root": "x", "inner": {"count": 1}, "targets": "t.csv", "limit": 3}
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.name = "m"
    with pytest.raises(ConfigError, match=r"config group 'dataset': limit=9: must be <= 5"):
        build_extended(Core, Own, set(), {"name": "n", "targets": "t", "limit": 9}, "config group 'dataset'")
    with pytest.raises(ConfigError, match="targets"):
        build_extended(Core, Own, set(), {"name": "n"}, "config group 'dataset'")


def test_another_plugins_field_is_left_out_a_field_nobody_declares_is_refused():
    node = {"name": "n", "targets": "t", "annotations": "a.json"}
    got = build_extended(Core, Own, {"annotations"}, node, "config group 'dataset'")
    assert "annotations" not in thaw(got)
    with pytest.raises(ConfigError, match="annotationz"):
        build_extended(Core, Own, {"annotations"}, {**node, "annotationz": 1}, "config group 'dataset'")


def test_nested_groups_are_instances_too():
    got = build(Core, {"name": "n", "inner": {"count": 4}}, "config group 'dataset'")
    assert got.inner == Inner(4) and dataclasses.replace(got, root="y").root == "y"


def test_an_extended_instance_survives_pickling():
    got = build_extended(Core, Own, set(), {"name": "n", "targets": "t"}, "config group 'dataset'")
    assert pickle.loads(pickle.dumps(got)) == got


def test_no_own_fields_is_the_core_schema_itself():
    assert extended(Core, None) is Core and extended(Core, Own) is extended(Core, Own)
