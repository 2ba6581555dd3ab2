"""A record of a run that failed before any result blocks no retry: the next run into the directory
replaces it without flags; a run with results still needs resume or overwrite."""

from __future__ import annotations

import json

import pytest

from evalharness.core.errors import EvalHarnessError
from evalharness.rundir.document import failed_before_results, write_failure
from evalharness.rundir.files import METRICS_FILE, PREDICTIONS_FILE, STATE_FILE
from evalharness.rundir.metrics_file import parse_document
from evalharness.rundir.state import claim, release

CONFIG = {"task": {"name": "t"}}


def _claim(run) -> None:
    try:
        claim(str(run), CONFIG, {}, resume=False, overwrite=False, can_resume=True)
    finally:
        release(str(run))


def _failed(run, claimed: bool, predictions: str = "") -> None:
    run.mkdir()
    if claimed:  # failed after the claim (a model that does not fit the task)
        (run / STATE_FILE).write_text(json.dumps({"config": CONFIG, "identity": {}}))
    if predictions:
        (run / PREDICTIONS_FILE).write_text(predictions)
    write_failure(str(run), "model.path: does not fit", CONFIG, [])


@pytest.mark.parametrize("claimed", [False, True])
def test_a_record_of_a_run_that_failed_before_any_result_is_replaced(tmp_path, caplog, claimed):
    run = tmp_path / "run"
    _failed(run, claimed)
    assert failed_before_results(str(run), parse_document(json.loads((run / METRICS_FILE).read_text())))
    _claim(run)  # no flags: the corrected command works as typed
    assert not (run / METRICS_FILE).exists()
    assert json.loads((run / STATE_FILE).read_text())["config"] == CONFIG
    assert "failed before any result (model.path: does not fit); this run replaces it" in caplog.text


def test_a_failed_run_with_predictions_and_a_complete_run_still_need_a_flag(tmp_path):
    run = tmp_path / "run"
    _failed(run, True, predictions='{"id": "a"}\n')
    assert not failed_before_results(str(run), parse_document(json.loads((run / METRICS_FILE).read_text())))
    with pytest.raises(EvalHarnessError, match="already holds a failed run"):
        _claim(run)
    done = tmp_path / "done"
    done.mkdir()
    (done / STATE_FILE).write_text(json.dumps({"config": CONFIG, "identity": {}}))
    (done / METRICS_FILE).write_text(json.dumps({"status": "complete", "metrics": {"top1": 1.0}}))
    with pytest.raises(EvalHarnessError, match="already holds a complete run"):
        _claim(done)
