"""A core group extended by a plug-in's own fields: the plug-in's fields checked with their bounds,
another plug-in's fields passed through unchecked, a field nobody declares refused."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from evalharness.core.errors import ConfigError
from evalharness.core.schema import FrozenDict, bounds, check_extended, extended


@dataclass
class Core:
    name: str = "???"
    root: str = "x"


@dataclass
class Own:
    targets: str = "???"
    limit: int = field(default=3, metadata=bounds(1, 5))


def test_own_fields_are_checked_with_their_bounds():
    got = check_extended(Core, Own, set(), {"name": "n", "targets": "t.csv"}, "config group 'dataset'")
    assert isinstance(got, FrozenDict) and got == {"name": "n", "root": "x", "targets": "t.csv", "limit": 3}
    with pytest.raises(ConfigError, match=r"config group 'dataset': limit=9: must be <= 5"):
        check_extended(Core, Own, set(), {"name": "n", "targets": "t", "limit": 9}, "config group 'dataset'")
    with pytest.raises(ConfigError, match="targets"):
        check_extended(Core, Own, set(), {"name": "n"}, "config group 'dataset'")


def test_another_plugins_field_passes_a_field_nobody_declares_is_refused():
    node = {"name": "n", "targets": "t", "annotations": "a.json"}
    got = check_extended(Core, Own, {"annotations"}, node, "config group 'dataset'")
    assert got["annotations"] == "a.json"
    with pytest.raises(ConfigError, match="annotationz"):
        check_extended(Core, Own, {"annotations"}, {**node, "annotationz": 1}, "config group 'dataset'")


def test_no_own_fields_is_the_core_schema_itself():
    assert extended(Core, None) is Core and extended(Core, Own) is extended(Core, Own)
