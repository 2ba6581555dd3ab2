"""A sweep of 3 delegates x 2 models compared image by image: the agreement matrix with McNemar p,
the interval columns, the scatter with interval bars and Pareto front, latency distributions drawn
from per-image samples; the HTML checked in headless Chromium."""

from __future__ import annotations

import pytest
from test_report_sweep import MODELS, dump_dom, multirun, rows

from evalharness.report.commands.sweep_pairs import pareto_front
from evalharness.stats.intervals import wilson


@pytest.fixture(scope="module")
def sweep3(tmp_path_factory):
    proc, sweep_dir = multirun(
        tmp_path_factory.mktemp("sweep3"), MODELS, "delegate=cpu,reference,xnnpack", "task.num_images=8"
    )
    assert proc.returncode == 0, proc.stderr
    return sweep_dir


def test_csv_has_the_intervals_of_each_run(sweep3):
    table = rows(sweep3 / "sweep.csv")
    assert len(table) == 6
    for r in table:
        correct = round(float(r["top1"]) * 8)
        assert [float(r["top1_ci_low"]), float(r["top1_ci_high"])] == pytest.approx(wilson(correct, 8))


def test_matrix_scatter_and_distributions_render(sweep3, tmp_path):
    md = (sweep3 / "sweep.md").read_text()
    assert "## Top-1 agreement matrix" in md and "(p 1.00)" in md
    matrix = md.split("## Top-1 agreement matrix")[1].split("\n\n")[1].splitlines()
    assert len(matrix) == 2 + 6 and all(line.count("—") == 1 for line in matrix[2:])  # 6 x 6, diagonal
    dom = dump_dom(sweep3 / "sweep.html", tmp_path)
    assert '<section id="agreement">' in dom and "Pareto front (red):" in dom
    assert dom.count("<svg") == 2 and "Latency distributions" in dom and "per-invoke samples" in dom


def test_pareto_front():
    points = [("a", 1.0, 0.5), ("b", 2.0, 0.7), ("c", 3.0, 0.6), ("d", 1.5, 0.5), ("e", 4.0, 0.8)]
    assert pareto_front(points) == ["a", "b", "e"]
