"""The op profile's record and views from synthetic ops (no model, no runtime)."""

from __future__ import annotations

from evalharness.report.views.op_profile_table import csv_text, diff_section, speedups, time_ratio, top_lines
from evalharness.runtime.op_profile import _submodel_note, check_placements, summarise


def _ops(times: list[float], backends: list[str]) -> list[dict]:
    return [
        {
            "index": i,
            "type": "CONV_2D" if i % 2 else "ADD",
            "name": f"t{i}",
            "backend": b,
            "own_placement": b,
            "mean_ms": t,
            "median_ms": t,
            "min_ms": t,
            "max_ms": t,
            "std_ms": 0.0,
            "count": 3,
        }
        for i, (t, b) in enumerate(zip(times, backends, strict=True))
    ]


def _record(times, backends, invoke_ms, delegated):
    ops = _ops(times, backends)
    placements = check_placements(ops, {"ops_delegated": delegated}, "builtin kernel")
    invoke = {
        "mean_ms": invoke_ms,
        "median_ms": invoke_ms,
        "min_ms": invoke_ms,
        "max_ms": invoke_ms,
        "cpu_median_ms": invoke_ms,
        "std_ms": 0.0,
        "count": 6,
    }
    return summarise(
        ops, invoke, placements, "the loaded graph's delegate nodes", 3, "sub-model timing", _submodel_note
    )


def test_sum_within_tolerance_needs_no_note_and_a_miss_says_why():
    good = _record([1.0, 2.0, 1.0], ["XNNPACK"] * 3, 4.2, 3)
    assert good["adds_up"] and good["note"] is None and good["placements"]["agree"]
    bad = _record([1.0, 3.0, 1.0], ["XNNPACK", "XNNPACK", "builtin kernel"], 6.0, 3)
    assert not bad["adds_up"] and "sum to 5.000 ms vs 6.000 ms" in bad["note"]
    assert bad["placements"] == {
        "ops_delegated_by_coverage": 3,
        "ops_delegated_by_profile": 2,
        "agree": False,
    }
    assert list(bad["by_type"]) == ["CONV_2D", "ADD"] and bad["by_type"]["ADD"]["count"] == 2
    assert "DISAGREE" in "\n".join(top_lines(bad)) and "why not:" in "\n".join(top_lines(bad))
    assert csv_text(bad).splitlines()[0].startswith("index,type,name,backend,kernel,mean_ms")


def test_unknown_coverage_is_unknown_not_agreement():
    assert check_placements(_ops([1.0], ["GPU"]), {"ops_delegated": None}, "CPU")["agree"] is None


def test_speedups_per_type_and_per_op_only_for_the_same_graph():
    a = _record([2.0, 4.0], ["XNNPACK"] * 2, 6.0, 2)
    b = _record([1.0, 1.0], ["XNNPACK"] * 2, 2.0, 2)
    sp = speedups(a, b)
    assert sp["by_type"]["CONV_2D"]["speedup"] == 4.0 and sp["ops"][0]["speedup"] == 2.0
    assert speedups(None, None) is None and speedups(a, None) == {"only": "A"}
    assert "only run A has an op profile" in diff_section({"op_profile": {"only": "A"}})[0].notes[0]
    other = _record([1.0, 1.0, 1.0], ["XNNPACK"] * 3, 3.0, 3)
    assert speedups(a, other)["ops"] is None
    titles = [s.title for s in diff_section({"op_profile": sp})]
    assert titles == [
        "Op profile: per op type (median ms, speed-up = A/B)",
        "Op profile: ops whose time moved most",
    ]


def test_times_below_the_clock_have_a_defined_ratio():
    """Equal times are 1.0 even at 0 ms (a run against itself); 0 ms against a real time is "too short
    to time" in the table, never a made-up ratio (the e2e self-diff must not depend on the machine)."""
    assert time_ratio(0.0, 0.0) == 1.0 and time_ratio(0.5, 0.5) == 1.0 and time_ratio(1.0, 0.5) == 2.0
    assert time_ratio(0.2, 0.0) is None
    record = _record([1.0, 0.0], ["XNNPACK"] * 2, 1.0, 2)
    faster = _record([1.0, 0.0], ["XNNPACK"] * 2, 1.0, 2)
    faster["ops"][0]["median_ms"] = 0.0
    sp = speedups(record, faster)
    assert sp["ops"][0]["speedup"] is None and sp["ops"][1]["speedup"] == 1.0
    rows = [row for section in diff_section({"op_profile": sp}) for row in section.rows]
    assert not any(cell == "-" for row in rows for cell in row)
