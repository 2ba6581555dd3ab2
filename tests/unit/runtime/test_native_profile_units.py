"""The runtime profiler's event reading and node mapping, from synthetic events (no library)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from evalharness.runtime.native_profile import ProfilerUnavailable, map_to_nodes, op_events, plan_options

OP, DELEGATE = 1 << 1, 1 << 3


def _events(*spec):
    """``("x", position)`` a delegate operator, ``("b", node)`` a builtin kernel."""
    out = [("LiteRT::Run[buffer registration]", 1, 0.4, 0), ("Invoke", 1, 9.0, 0)]
    for kind, meta in spec:
        out.append((f"k{meta}", DELEGATE if kind == "x" else OP, 1.0, meta))
    return [*out, ("LiteRT::Run[Buffer sync]", 1, 0.1, 0)]


def test_partitions_split_where_the_delegate_position_restarts_and_map_in_node_order():
    rows, invoke, runtime = op_events(_events(("x", 0), ("x", 1), ("b", 2), ("x", 0), ("b", 4)))
    assert invoke == 9.0 and runtime == 9.5  # the interpreter's Invoke and LiteRT's steps around it
    assert [r.get("partition") for r in rows] == [0, 0, None, 1, None]
    assert map_to_nodes(rows, 5)
    assert [r["node"] for r in rows] == [0, 1, 2, 3, 4]


def test_counts_that_disagree_leave_delegate_rows_unmapped():
    rows, _, _ = op_events(_events(("x", 0), ("x", 1), ("x", 2), ("b", 2)))  # 3 operators for 2 nodes
    assert not map_to_nodes(rows, 3)
    assert [r.get("node") for r in rows] == [None, None, None, 2]


def test_an_order_the_graph_cannot_have_leaves_them_unmapped():
    rows, _, _ = op_events(_events(("b", 1), ("x", 0), ("b", 2)))  # node 0 would run after node 1
    assert not map_to_nodes(rows, 3)


def _plan(**kw):
    base = {"name": "cpu", "backend": "interpreter", "op_resolver": "auto", "num_threads": 2}
    base["external_path"] = None
    return SimpleNamespace(**(base | kw))


def test_plans_reproduced_or_refused_with_a_reason():
    assert plan_options(_plan()) == (1, 'kernel_mode = "delegate"\nnum_threads = 2\n')
    builtin = plan_options(_plan(op_resolver="builtin_without_default_delegates"))
    assert builtin[1].startswith('kernel_mode = "builtin"')
    assert plan_options(_plan(backend="compiled_gpu")) == (2, "")
    for plan, why in [
        (_plan(op_resolver="builtin_ref"), "same kernels"),
        (_plan(name="npu", backend="npu"), "does not run"),
        (_plan(name="external", external_path="/x.so"), "does not run"),
    ]:
        with pytest.raises(ProfilerUnavailable, match=why):
            plan_options(plan)


def test_the_interpreters_partitions_map_operators_that_run_out_of_node_order():
    """SSD's shape: partition 0 replaces nodes 0, 1 and 3, and runs before builtin node 2."""
    rows, _, _ = op_events(_events(("x", 0), ("x", 1), ("x", 2), ("b", 2), ("x", 0), ("b", 5)))
    assert not map_to_nodes([dict(r) for r in rows], 6)  # node order alone cannot place them
    assert map_to_nodes(rows, 6, [[0, 1, 3], [4]])
    assert [r["node"] for r in rows] == [0, 1, 3, 2, 4, 5]
    rows, _, _ = op_events(_events(("x", 0), ("x", 1), ("b", 2)))
    assert not map_to_nodes(rows, 4, [[0, 1, 3]])  # 2 operators for 3 nodes, either way
