"""A delegate's invoke that fails in native code ends the run with exit 1 (RunStopped), a
metrics.json that says how far it got, and one line naming the native cause; a run that stopped
before it scored any image never reaches the scorer ("image_ids is empty" never shows). A plumbing
test: a fake runtime whose interpreter prints LiteRT's deadline text and raises on invoke, on the
bundled samples (no shared assets)."""

from __future__ import annotations

import json
import os

import pytest
from conftest import run_inprocess

from evalharness.core.errors import RunStopped
from evalharness.core.native_output import quiet_native_output
from evalharness.report.commands.entry import main as report_main
from evalharness.runtime import litert

DEADLINE = b"E0000 00:00:00.120 wait.cc:12] DEADLINE_EXCEEDED: Deadline exceeded after 2m\n"


@pytest.fixture
def failing_runtime(monkeypatch):
    from ai_edge_litert import interpreter as lite

    class Failing(lite.Interpreter):
        def invoke(self):
            os.write(2, DEADLINE)
            raise RuntimeError("Node number 497 (LITERT_WEBGPU) failed to invoke.")

    monkeypatch.setattr(
        litert, "_import_runtime", lambda runtime: (Failing, lite.OpResolverType, lite.load_delegate)
    )


def test_a_native_deadline_stops_the_run_with_its_cause_and_a_partial_record(
    failing_runtime, tmp_path, capsys
):
    """COCO's scorer refused an empty set of images ("image_ids is empty"): the case the issue met."""
    overrides = ["task=coco", "dataset=coco_sample", "task.num_images=2"]
    native: list[str] = []
    with pytest.raises(RunStopped) as stopped, quiet_native_output(native):
        run_inprocess(overrides, tmp_path)
    message = str(stopped.value)
    assert message.startswith("run stopped early (delegate=cpu: LiteRT's invoke deadline ran out at node 497")
    assert "image_ids" not in message and "internal error" not in message
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert doc["status"] == "partial" and "DEADLINE_EXCEEDED" in doc["stop_reason"]
    assert (doc["metrics"]["num_scored"], doc["metrics"]["num_images"]) == (0, 2)
    results = (tmp_path / "results.txt").read_text()
    assert "partial, 0 of 2 scored" in results and "no sample scored" in results
    assert report_main(["rescore", str(tmp_path)]) == 2  # the reports say why there is nothing to read
    assert "scored no sample (partial: delegate=cpu: LiteRT's invoke deadline" in capsys.readouterr().err
