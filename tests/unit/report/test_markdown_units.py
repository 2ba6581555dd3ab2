"""``--format md`` building blocks without runs: cells, tables, details blocks, the gate line."""

from __future__ import annotations

from evalharness.core.markdown import cell, details, table
from evalharness.report.views.pr_comment import gate_line


def test_cells_are_one_line_without_raw_pipes_or_tags():
    assert cell("a | b\nc") == "a \\| b c"
    assert cell("top1<-0.005 <script>") == "top1&lt;-0.005 &lt;script&gt;"


def test_every_row_gets_the_headers_cell_count():
    lines = table(["name", "value"], [["x", "1"], ["y"], ["z", "3", "extra"]])
    assert lines[:2] == ["| name | value |", "|---|---:|"]
    assert lines[2:] == ["| x | 1 |", "| y |  |", "| z | 3 |"]


def test_details_block_leaves_blank_lines_for_markdown():
    assert details("Per-class AP <all>", ["| a |"]) == [
        "<details>",
        "<summary>Per-class AP &lt;all&gt;</summary>",
        "",
        "| a |",
        "",
        "</details>",
    ]


def test_gate_line():
    ok = {"rule": "top1<0", "detail": "top1 0.7 -> 0.7 (change +0)", "failed": False}
    bad = {"rule": "AP<-0.01", "detail": "AP 0.267 -> 0.236 (change -0.031)", "failed": True}
    assert gate_line(None) == "" and gate_line([]) == ""
    assert gate_line([ok, ok]) == "**Gate: passed** (2 rules)"
    assert (
        gate_line([ok, bad])
        == "**Gate: FAILED** (1 of 2 rules) — `AP<-0.01`: AP 0.267 -&gt; 0.236 (change -0.031)"
    )
