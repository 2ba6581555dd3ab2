"""A resume compares the run's recorded identity with today's: a record whose identity is not a JSON
object (edited, damaged) is one refusal naming the file and the fix, never an internal error."""

from __future__ import annotations

import json

import pytest
from shared_runs import fake_run_dir

from evalharness.core.errors import EvalHarnessError
from evalharness.rundir.state import claim, release

CONFIG = {"task": {"name": "imagenet"}}


@pytest.mark.parametrize("identity", [[1], "text", 7, {"model_sha256": "other"}])
def test_a_recorded_identity_of_the_wrong_shape_is_refused(tmp_path, identity):
    state = json.dumps({"config": CONFIG, "identity": identity})
    fake_run_dir(tmp_path, {"status": "partial"}, files={"run_state.json": state})
    with pytest.raises(EvalHarnessError) as caught:
        try:
            claim(
                str(tmp_path), CONFIG, {"model_sha256": "this"}, resume=True, overwrite=False, can_resume=True
            )
        finally:
            release(str(tmp_path))
    message = str(caught.value)
    if isinstance(identity, dict):
        assert "model_sha256 changed since the interrupted run" in message
    else:
        assert "run_state.json: its identity is not a JSON object; loop.overwrite=true" in message
