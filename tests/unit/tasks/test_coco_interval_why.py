"""The COCO AP interval need not centre AP ([0.349, 0.496] around 0.385): the summary says why,
beside the interval (issue 43)."""

from __future__ import annotations

from evalharness.report.presenters import headline_accuracy
from evalharness.rundir.metrics_file import Metrics
from evalharness.tasks.discovery import task_definitions


def test_the_summary_says_why_the_ap_interval_need_not_centre_ap():
    definition = task_definitions().get("coco")({})
    metrics = {"AP": 0.385, "intervals": {"method": "bootstrap", "resamples": 1000, "AP": [0.349, 0.496]}}
    title, value, interval, how = headline_accuracy(definition, Metrics.parse(metrics))
    assert (value, interval) == (0.385, [0.349, 0.496])
    assert how.startswith("percentile bootstrap over images, B=1000")
    assert "need not centre the AP of these images" in how and "skewed" in how
