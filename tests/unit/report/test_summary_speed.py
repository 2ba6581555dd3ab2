"""The summary's ``Speed:`` line says how the loop's stages relate, where their sum is not a cycle."""

from __future__ import annotations

import pytest

from evalharness.report.summary import _speed
from evalharness.rundir.metrics_file import parse_document


def _doc(shape: str, workers: int, lanes: int = 1):
    return parse_document(
        {
            "task": "imagenet",
            "metrics": {},
            "latency_ms": {"inference": {"count": 100, "mean": 3.5, "p50": 3.4}},
            "throughput": {
                "images_per_s": 200.0,
                "workers": workers,
                "per_image_ms": {"preprocess": 1.2, "invoke": 3.5, "postprocess": 0.05},
            },
            "provenance": {"thread_budget": {"loop": {"shape": shape, "workers": workers, "lanes": lanes}}},
        }
    )


@pytest.mark.parametrize(
    ("shape", "workers", "lanes", "said"),
    [
        ("pipelined", 1, 1, "(preprocess overlaps invoke)"),
        ("phased", 2, 1, "(preprocess on 2 threads at once, between the invokes)"),
        ("lanes", 0, 2, "(2 instances of the model side by side)"),
        ("sequential", 0, 1, "img/s"),
    ],
)
def test_the_speed_line_says_how_its_stages_ran(shape, workers, lanes, said):
    line = _speed(_doc(shape, workers, lanes))
    assert line is not None and line.endswith(said), line
